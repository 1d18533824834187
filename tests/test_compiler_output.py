"""Compiling for a GPU target on any machine, as the constexpr lesson does."""

import re

import pytest

from kernels.triton_helpers.compiler_output import STAGES, compile_for_gpu

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32",
             "BLOCK_SIZE": "constexpr"}  # fmt: skip
ALIGNED = ("x_ptr", "y_ptr", "out_ptr", "n_elements")


def global_loads(block: int) -> list[str]:
    asm = compile_for_gpu(
        "kernels.operations.vector_add:add_kernel", SIGNATURE, {"BLOCK_SIZE": block}, ALIGNED
    )
    assert set(asm) == set(STAGES) and ".target sm_90" in asm["ptx"]
    return re.findall(r"ld\.global[.\w]*", asm["ptx"])


def test_the_tile_size_decides_the_width_of_loads() -> None:
    small, large = global_loads(128), global_loads(1024)
    assert small == ["ld.global.b32"] * 2
    assert large == ["ld.global.v4.b32"] * 4


def test_a_failed_compilation_says_which_kernel() -> None:
    with pytest.raises(
        RuntimeError, match=r"compiling kernels.operations.vector_add:no_such_kernel for sm_90"
    ):
        compile_for_gpu(
            "kernels.operations.vector_add:no_such_kernel", SIGNATURE, {"BLOCK_SIZE": 128}
        )

"""The debugging lesson's kernels: right where they should be, wrong where they show a mistake."""

import pytest
import torch

from kernels.operations.debugging import (
    assertion_messages,
    compiler_error,
    row_start_kernel,
    tile_sum_kernel,
)
from kernels.triton_helpers.compiler_output import compile_for_gpu
from kernels.triton_helpers.runtime import kernel_device

SUM = "kernels.operations.debugging:tile_sum_kernel"
SUM_SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32",
                 "BLOCK_SIZE": "constexpr"}  # fmt: skip
ROW = "kernels.operations.debugging:row_start_kernel"
ROW_SIGNATURE = {"rows_ptr": "*i32", "out_ptr": "*i64", "row_stride": "i32",
                 "BLOCK_SIZE": "constexpr", "INT64": "constexpr"}  # fmt: skip


@pytest.mark.parametrize("n_elements", [1, 100, 1000, 1024])
def test_tile_sum_matches_a_float64_sum(n_elements: int) -> None:
    generator = torch.Generator().manual_seed(n_elements)
    x = torch.randn(n_elements, generator=generator)
    total = torch.empty(1, device=kernel_device())
    tile_sum_kernel[(1,)](x.to(kernel_device()), total, n_elements, BLOCK_SIZE=1024)
    expected = x.double().sum().item()
    assert total.item() == pytest.approx(expected, rel=1e-5, abs=1e-4)


def test_tile_sum_refuses_an_output_narrower_than_float32() -> None:
    x = torch.ones(8, device=kernel_device())
    out = torch.empty(1, dtype=torch.float16, device=kernel_device())
    with pytest.raises(Exception, match="out must be float32"):
        tile_sum_kernel[(1,)](x, out, 8, BLOCK_SIZE=16)


def test_row_start_wraps_in_32_bits_and_is_exact_in_64() -> None:
    rows = torch.tensor([0, 42730, 42731, 65535], dtype=torch.int32)
    row_stride = 50257
    exact = [int(row) * row_stride for row in rows]
    starts = torch.empty(4, dtype=torch.int64, device=kernel_device())
    row_start_kernel[(1,)](rows.to(kernel_device()), starts, row_stride, BLOCK_SIZE=4, INT64=True)
    assert starts.tolist() == exact
    row_start_kernel[(1,)](rows.to(kernel_device()), starts, row_stride, BLOCK_SIZE=4, INT64=False)
    wrapped = [(value + 2**31) % 2**32 - 2**31 for value in exact]
    assert starts.tolist() == wrapped
    assert wrapped[2] < 0 and wrapped[:2] == exact[:2]


def test_compiler_error_quotes_the_faulty_line_and_the_message() -> None:
    report = compiler_error(SUM, SUM_SIGNATURE, {"BLOCK_SIZE": 1000}).splitlines()
    assert report[0].strip() == "offsets = tl.arange(0, BLOCK_SIZE)"
    assert set(report[1].strip()) == {"^"}
    assert report[2] == "arange's range must be a power of 2"


def test_debugging_compiles_the_assertion_and_the_overflow_check_in() -> None:
    def messages(kernel: str, signature: dict, constexprs: dict, debug: bool) -> list[str]:
        ttir = compile_for_gpu(kernel, signature, constexprs, debug=debug)["ttir"]
        return assertion_messages(ttir)

    # tile_sum_kernel also calls tl.static_print: the compiler's reply must survive it.
    assert messages(SUM, SUM_SIGNATURE, {"BLOCK_SIZE": 64}, debug=False) == []
    assert messages(SUM, SUM_SIGNATURE, {"BLOCK_SIZE": 64}, debug=True) == [
        "n_elements is larger than one tile"
    ]
    narrow, wide = ({"BLOCK_SIZE": 4, "INT64": int64} for int64 in (False, True))
    assert messages(ROW, ROW_SIGNATURE, narrow, debug=True) == [
        "int32 overflow detected for operation mul"
    ]
    assert messages(ROW, ROW_SIGNATURE, wide, debug=True) == []

"""Small kernels for the debugging lesson, each built to show one check or one mistake.

``tile_sum_kernel`` carries Triton's three kinds of checks: a print and an assertion that
run while the kernel compiles, and an assertion that runs on the device when debugging
is on. ``row_start_kernel`` computes where rows of a large matrix start, in 32-bit or in
64-bit integers, to show how a 32-bit offset overflows. Two helpers read what the real
compiler says about such kernels (see :mod:`kernels.triton_helpers.compiler_output`).
"""

import re
from typing import Any

import triton
import triton.language as tl

from ..text.messages import _
from ..triton_helpers.compiler_output import compile_for_gpu


@triton.jit
def tile_sum_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # One program sums the whole input, so a single tile must hold it.
    tl.static_print("compiling tile_sum_kernel: BLOCK_SIZE =", BLOCK_SIZE, x_ptr.dtype)
    # The sum is kept in float32; a narrower out would round it silently.
    tl.static_assert(out_ptr.dtype.element_ty == tl.float32, "out must be float32")
    # Known only at run time: checked on the device, when debugging is on.
    tl.device_assert(n_elements <= BLOCK_SIZE, "n_elements is larger than one tile")
    offsets = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0)
    tl.store(out_ptr, tl.sum(x.to(tl.float32), axis=0))


@triton.jit
def row_start_kernel(
    rows_ptr, out_ptr, row_stride, BLOCK_SIZE: tl.constexpr, INT64: tl.constexpr
):
    # Row numbers in int32, the type of tl.program_id(0) in a kernel with a program
    # per row; out receives where each row starts, row * row_stride.
    idx = tl.arange(0, BLOCK_SIZE)
    rows = tl.load(rows_ptr + idx)
    if INT64:
        # The fix: widen before multiplying, so the product has 64 bits.
        rows = rows.to(tl.int64)
    tl.store(out_ptr + idx, rows * row_stride)


def compiler_error(
    kernel: str, signature: dict[str, str], constexprs: dict[str, Any]
) -> str:
    """The end of the error that compiling ``kernel`` for a GPU raises: the kernel's line,
    a caret under the fault, and the message (or a note that it compiled)."""
    try:
        compile_for_gpu(kernel, signature, constexprs)
    except RuntimeError as error:
        return "\n".join(str(error).rstrip().splitlines()[-3:])
    return _("compiled without error")


def assertion_messages(ttir: str) -> list[str]:
    """The messages of the device assertions in a kernel's Triton IR, in order."""
    return re.findall(r'tt\.assert [^"]*"([^"]*)"', ttir)

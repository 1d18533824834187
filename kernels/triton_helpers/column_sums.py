"""Adding up partial sums column by column: the last step of a weight gradient.

The gradient of a normalisation's weight (and bias) is a sum over all rows. The backward
kernels each add up the rows they handle into one partial sum per column, a row of
numbers, and write it out; :func:`column_sums_kernel` then adds up those partial sums,
one strip of columns per program. No two programs write to the same place, so no atomic
additions are needed and the result is the same from run to run.
"""

import torch
import triton
import triton.language as tl

from .direct_launch import launch
from .launch import cdiv

# Columns per program, and partial sums added at a time.
BLOCK_COLS = 32
BLOCK_ROWS = 64


@triton.jit
def column_sums_kernel(
    partial_dw_ptr,
    partial_db_ptr,
    dw_ptr,
    db_ptr,
    n_partials,
    n_cols,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
):
    # Add up the partial sums of one strip of columns, BLOCK_ROWS partials at a time,
    # for the weight gradient and, when its pointers are not None, the bias gradient
    # (None is a compile-time constant: a kernel without the bias is compiled).
    cols = tl.program_id(0) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    col_mask = cols < n_cols
    dw = tl.zeros((BLOCK_ROWS, BLOCK_COLS), partial_dw_ptr.dtype.element_ty)
    db = tl.zeros((BLOCK_ROWS, BLOCK_COLS), partial_dw_ptr.dtype.element_ty)
    for start in range(0, n_partials, BLOCK_ROWS):
        rows = start + tl.arange(0, BLOCK_ROWS)
        mask = (rows < n_partials)[:, None] & col_mask[None, :]
        offsets = rows[:, None] * n_cols + cols[None, :]
        dw += tl.load(partial_dw_ptr + offsets, mask=mask, other=0.0)
        if partial_db_ptr is not None:
            db += tl.load(partial_db_ptr + offsets, mask=mask, other=0.0)
    tl.store(
        dw_ptr + cols, tl.sum(dw, axis=0).to(dw_ptr.dtype.element_ty), mask=col_mask
    )
    if db_ptr is not None:
        tl.store(
            db_ptr + cols, tl.sum(db, axis=0).to(db_ptr.dtype.element_ty), mask=col_mask
        )


def column_sums(
    partial_dw: torch.Tensor,
    dweight: torch.Tensor,
    partial_db: torch.Tensor | None = None,
    dbias: torch.Tensor | None = None,
) -> None:
    """Write the column sums of the (partials, columns) matrix ``partial_dw`` into
    ``dweight``, and those of ``partial_db`` into ``dbias`` when they are given."""
    n_partials, n_cols = partial_dw.shape
    launch(
        column_sums_kernel,
        (cdiv(n_cols, BLOCK_COLS),),
        partial_dw,
        partial_db,
        dweight,
        dbias,
        n_partials,
        n_cols,
        BLOCK_ROWS=BLOCK_ROWS,
        BLOCK_COLS=BLOCK_COLS,
    )

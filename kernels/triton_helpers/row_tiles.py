"""Tiles of several rows, as the normalisation backward kernels walk them."""

import triton
import triton.language as tl


@triton.jit
def row_tile(first_row, tile_rows, cols, col_mask, n_rows, n_cols):
    """The rows ``first_row + tile_rows`` of a contiguous (n_rows, n_cols) matrix: their
    indices, row mask, tile mask and element offsets (64-bit, for matrices of more than
    2**31 values). Masked loads read zeros in padding lanes and rows, which add nothing
    to any sum."""
    rows = first_row + tile_rows
    row_mask = rows < n_rows
    mask = row_mask[:, None] & col_mask[None, :]
    return rows, row_mask, mask, rows.to(tl.int64)[:, None] * n_cols + cols[None, :]

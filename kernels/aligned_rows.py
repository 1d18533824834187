"""Rows that do not start on a 16-byte boundary, split so that most of each is loaded
in vectors.

A GPU loads 16 bytes per instruction per thread (8 bfloat16 values) only from an
address that is a multiple of 16, and under one mask value for all of them. In a
contiguous (rows, n) matrix, row ``r`` starts at element ``r * n``: when ``n`` is not a
multiple of 8 (a vocabulary of 50,257 tokens), most rows start between two boundaries,
Triton cannot prove any load aligned, and it loads one value per instruction. A
kernel that walks such a row in three parts loads the middle one in vectors:

- the *head*, the row's first values up to the first 16-byte boundary (fewer than
  ``ALIGN``), with a mask;
- the *body*, from that boundary, a multiple of ``ALIGN`` values long: its start is a
  multiple of ``ALIGN`` (told to the compiler with ``tl.multiple_of``) and so is its
  length, so a mask ``offset < length`` is the same for each run of ``ALIGN`` values;
- the *tail*, the fewer than ``ALIGN`` values left, with a mask.
"""

import torch
import triton
import triton.language as tl

VECTOR_BYTES = 16


def align_for(dtype: torch.dtype, n_cols: int) -> int:
    """Values per 16-byte vector of ``dtype`` when rows of ``n_cols`` values need the
    three-part walk; 1 when every row starts on a boundary (``n_cols`` a multiple of it)."""
    align = VECTOR_BYTES // dtype.itemsize
    return 1 if n_cols % align == 0 else align


@triton.jit
def row_parts(row_offset, n_cols, ALIGN: tl.constexpr):
    """Split the row of ``n_cols`` values starting at element ``row_offset`` of an
    aligned tensor: returns ``(head, body_start, body_len, tail_len)``, where the head
    is the row's first ``head`` values, the body ``body_len`` values from element
    ``body_start``, and the tail the last ``tail_len``."""
    head = tl.minimum((ALIGN - row_offset % ALIGN) % ALIGN, n_cols)
    body_start = tl.multiple_of(row_offset + head, ALIGN)
    body_len = (n_cols - head) // ALIGN * ALIGN
    return head, body_start, body_len, n_cols - head - body_len

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
    three-part walk; 1 when they do not. Triton tells the compiler that an integer
    argument is a multiple of 16 when it is one, and nothing finer: rows of a multiple
    of 8 values start on boundaries in bfloat16, but the compiler cannot know it unless
    the length is a multiple of 16, so every other length takes the walk."""
    return 1 if n_cols % 16 == 0 else VECTOR_BYTES // dtype.itemsize


@triton.jit
def row_parts(row_offset, n_cols, ALIGN: tl.constexpr):
    """Split the row of ``n_cols`` values starting at element ``row_offset`` of an
    aligned tensor: returns ``(head, body_start, body_len, tail_len)``, where the head
    is the row's first ``head`` values, the body ``body_len`` values from element
    ``body_start`` (always a boundary, past the row's end for a row shorter than its
    head), and the tail the last ``tail_len``."""
    gap = (ALIGN - row_offset % ALIGN) % ALIGN
    head = tl.minimum(gap, n_cols)
    body_start = tl.multiple_of(row_offset + gap, ALIGN)
    body_len = tl.maximum(n_cols - gap, 0) // ALIGN * ALIGN
    return head, body_start, body_len, n_cols - head - body_len

"""The online softmax recurrence, shared by the kernels that stream long rows.

Reading a row in tiles, the kernel keeps the largest value seen so far, ``m``, and the
sum of ``exp(x - m)`` over the values seen so far, ``s``. When a tile raises the
maximum to ``m'``, every term already in the sum shrinks by the same factor, so
``s' = s * exp(m - m') + sum(exp(tile - m'))``. One pass gives the maximum and the
normaliser of the softmax, and ``m + log(s)`` is the row's logsumexp.
"""

import triton
import triton.language as tl

from .aligned_rows import row_parts


@triton.jit
def online_max_and_sum(
    row_ptr,
    n_cols,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    EVICTION: tl.constexpr,
    EVEN: tl.constexpr,
):
    """The maximum of a row of ``n_cols`` values at ``row_ptr``, and the sum of
    ``exp(x - maximum)`` over the row, in one pass of BLOCK_SIZE-value tiles.

    ``EVICTION`` is the cache hint of the loads: ``"evict_last"`` when the caller reads
    the row a second time and wants it kept in L2, ``""`` (no hint) otherwise.
    ``EVEN``: ``n_cols`` is a multiple of BLOCK_SIZE, so no tile needs a mask."""
    cols = tl.arange(0, BLOCK_SIZE)
    running_max = tl.full((), -float("inf"), ACC)
    running_sum = tl.full((), 0.0, ACC)
    for start in tl.range(0, n_cols, BLOCK_SIZE, num_stages=NUM_STAGES):
        mask = (start + cols < n_cols) | EVEN
        # Padding lanes read -inf: they never win the maximum and add exp(-inf) = 0.
        x = tl.load(
            row_ptr + start + cols,
            mask=mask,
            other=-float("inf"),
            eviction_policy=EVICTION,
        ).to(ACC)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        # While every value so far is -inf, shift by 0 instead: exp(-inf - -inf) is NaN.
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)
        rescale = tl.exp(running_max - shift)
        running_sum = running_sum * rescale + tl.sum(tl.exp(x - shift), axis=0)
        running_max = new_max
    return running_max, running_sum


@triton.jit
def online_update(running_max, running_sum, x):
    """The maximum and sum after one more tile ``x`` (padding lanes hold -inf)."""
    new_max = tl.maximum(running_max, tl.max(x, axis=0))
    # While every value so far is -inf, shift by 0 instead: exp(-inf - -inf) is NaN.
    shift = tl.where(new_max == -float("inf"), 0.0, new_max)
    running_sum = running_sum * tl.exp(running_max - shift) + tl.sum(
        tl.exp(x - shift), axis=0
    )
    return new_max, running_sum


@triton.jit
def online_max_and_sum_unaligned(
    x_ptr,
    row_offset,
    n_cols,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    ALIGN: tl.constexpr,
    EVICTION: tl.constexpr,
):
    """:func:`online_max_and_sum` of the row of ``n_cols`` values starting at element
    ``row_offset`` of ``x_ptr``, for rows that do not start on a 16-byte boundary:
    walked in three parts (:mod:`kernels.triton_helpers.aligned_rows`) so that the body loads
    vectors.
    ``ALIGN``: values per 16 bytes."""
    head, body_start, body_len, tail_len = row_parts(row_offset, n_cols, ALIGN)
    edge = tl.arange(0, ALIGN)
    cols = tl.arange(0, BLOCK_SIZE)
    first = tl.load(
        x_ptr + row_offset + edge,
        mask=edge < head,
        other=-float("inf"),
        eviction_policy=EVICTION,
    ).to(ACC)
    running_max, running_sum = online_update(
        tl.full((), -float("inf"), ACC), tl.full((), 0.0, ACC), first
    )
    for start in range(0, body_len, BLOCK_SIZE):
        tile = tl.load(
            x_ptr + body_start + start + cols,
            mask=start + cols < body_len,
            other=-float("inf"),
            eviction_policy=EVICTION,
        ).to(ACC)
        running_max, running_sum = online_update(running_max, running_sum, tile)
    last = tl.load(
        x_ptr + body_start + body_len + edge,
        mask=edge < tail_len,
        other=-float("inf"),
        eviction_policy=EVICTION,
    ).to(ACC)
    return online_update(running_max, running_sum, last)

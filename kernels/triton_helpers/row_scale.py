"""Row statistics that do not overflow: a sum of squares taken again, each row divided by
its largest magnitude first, for the rows whose plain sum overflowed.

A float32 square overflows beyond about 1.8e19, though a normalised row of such values is
an ordinary output: LayerNorm and RMSNorm divide the overflow away again. The kernels
compute the plain sums (the common case, at full speed) and call these helpers only for
a program whose sums came out infinite or NaN.

LayerNorm's one-tile kernel hands such rows to :func:`rewrite_rows` after its own
store; RMSNorm's takes their inverse root again before its output pass
(``_scaled_inverse_root`` in :mod:`kernels.operations.rms_norm`: its output does not overflow).
Both read the rows in narrow tiles: a rare path that held a row-sized tile raised the
register count of every program, taken or not (with Triton 3.6 for sm_90a, RMSNorm at
5120 values from 30 registers a thread to 40 and 49, and its H100 record from 2965 GB/s
to 2659 and 2140; LayerNorm at 16384 values from 128 registers to 212).
"""

import triton
import triton.language as tl


@triton.jit
def safe_scale(largest):
    """The divisor of a row whose largest magnitude is ``largest``: that magnitude, or 1
    for a row of zeros (which has nothing to scale)."""
    return tl.where(largest > 0, largest, 1.0)


@triton.jit
def overflowed(total):
    """Where a sum of squares came out infinite or NaN (NaN also where the row holds a
    NaN or an infinity: computed again, it gives NaN again, as it should)."""
    return (total == float("inf")) | (total != total)


@triton.jit
def rewrite_rows(
    x_ptr,
    weight_ptr,
    bias_ptr,
    out_ptr,
    rows,
    rewrite,
    n_cols,
    eps,
    CENTRE: tl.constexpr,
    ACC: tl.constexpr,
    CHUNK: tl.constexpr,
):
    """Normalise again, and write, the rows of ``rows`` where ``rewrite`` holds, each
    divided by its largest magnitude first, so that no square overflows: LayerNorm
    (``CENTRE``: the mean taken away and ``bias_ptr`` added; RMSNorm, without, has a
    cheaper path of its own). Returns each row's mean (0 without ``CENTRE``) and
    inverse standard deviation (or root mean square).

    The rows are read four times in (rows, ``CHUNK``) tiles. Of 32, 64, 128 and 256
    values, 64 left the kernels' registers as they were without this path, or within
    two (ptxas, sm_90a)."""
    cols = tl.arange(0, CHUNK)
    largest = tl.zeros(rows.shape, ACC)
    for start in tl.range(0, n_cols, CHUNK, num_stages=1):
        mask = rewrite[:, None] & (start + cols < n_cols)[None, :]
        x = tl.load(x_ptr + rows[:, None] * n_cols + start + cols[None, :], mask=mask)
        largest = tl.maximum(largest, tl.max(tl.abs(x.to(ACC)), axis=1))
    scale = safe_scale(largest)
    scaled_mean = tl.zeros(rows.shape, ACC)
    if CENTRE:
        for start in tl.range(0, n_cols, CHUNK, num_stages=1):
            mask = rewrite[:, None] & (start + cols < n_cols)[None, :]
            offsets = rows[:, None] * n_cols + start + cols[None, :]
            x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC)
            scaled_mean += tl.sum(x / scale[:, None], axis=1)
        scaled_mean = scaled_mean / n_cols
    squares = tl.zeros(rows.shape, ACC)
    for start in tl.range(0, n_cols, CHUNK, num_stages=1):
        mask = rewrite[:, None] & (start + cols < n_cols)[None, :]
        offsets = rows[:, None] * n_cols + start + cols[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC)
        deviation = tl.where(mask, x / scale[:, None] - scaled_mean[:, None], 0.0)
        squares += tl.sum(deviation * deviation, axis=1)
    inverse = 1.0 / (tl.sqrt(squares / n_cols + eps / (scale * scale)) * scale)
    mean = scaled_mean * scale
    for start in tl.range(0, n_cols, CHUNK, num_stages=1):
        col_mask = start + cols < n_cols
        mask = rewrite[:, None] & col_mask[None, :]
        offsets = rows[:, None] * n_cols + start + cols[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC)
        weight = tl.load(weight_ptr + start + cols, mask=col_mask).to(ACC)
        y = (x - mean[:, None]) * inverse[:, None] * weight[None, :]
        if CENTRE:
            bias = tl.load(bias_ptr + start + cols, mask=col_mask).to(ACC)
            y += bias[None, :]
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)
    return mean, inverse

"""Row statistics that do not overflow: a sum of squares taken again, each row divided by
its largest magnitude first, for the rows whose plain sum overflowed.

A float32 square overflows beyond about 1.8e19, though a normalised row of such values is
an ordinary output: LayerNorm and RMSNorm divide the overflow away again. The kernels
compute the plain sums (the common case, at full speed) and call these helpers only for
a program whose sums came out infinite or NaN.
"""

import triton
import triton.language as tl


@triton.jit
def safe_scale(largest):
    """The divisor of a row whose largest magnitude is ``largest``: that magnitude, or 1
    for a row of zeros (which has nothing to scale)."""
    return tl.where(largest > 0, largest, 1.0)


@triton.jit
def scaled_inverse_root(x, n_cols, eps):
    """``1 / sqrt(sum(x**2, axis=1) / n_cols + eps)`` of a tile of rows (padding lanes 0),
    computed as ``1 / (s * sqrt(sum((x / s)**2) / n_cols + eps / s**2))`` with ``s`` each
    row's largest magnitude: no square exceeds 1, so none overflows."""
    scale = safe_scale(tl.max(tl.abs(x), axis=1))
    scaled = x / scale[:, None]
    mean_square = tl.sum(scaled * scaled, axis=1) / n_cols
    return 1.0 / (tl.sqrt(mean_square + eps / (scale * scale)) * scale)


@triton.jit
def overflowed(total):
    """Where a sum of squares came out infinite or NaN (NaN also where the row holds a
    NaN or an infinity: computed again, it gives NaN again, as it should)."""
    return (total == float("inf")) | (total != total)

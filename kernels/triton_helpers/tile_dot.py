"""``tl.dot`` for the tile kernels, on the GPU and in Triton's interpreter alike.

Triton's interpreter keeps bfloat16 tiles as raw 16-bit integers and multiplies them as
such, so ``tl.dot`` on bfloat16 gives nonsense there (float16 is fine). Under the
interpreter the tiles are widened to float32 first, which gives the exact products
tensor cores compute; on the GPU they go to the tensor cores as they are.
"""

import triton
import triton.language as tl

from .runtime import interpreted

WIDEN_FOR_INTERPRETER = tl.constexpr(interpreted())


@triton.jit
def tile_dot(a, b, acc):
    """``acc + a @ b`` for tiles ``a`` (M, K) and ``b`` (K, N), summed in float32."""
    if WIDEN_FOR_INTERPRETER:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
    return tl.dot(a, b, acc)

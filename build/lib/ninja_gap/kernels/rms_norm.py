"""RMSNorm: scale each row by the inverse of its root mean square, then by a weight.

``y = x / sqrt(mean(x**2) + eps) * weight``, the normalisation of LLaMA-style models.
Written out in PyTorch it takes a pass over memory for the square, one for the mean,
one for the scaling and one for the weight; the fused kernel reads each row once and
writes it once.
"""

import torch
import triton
import triton.language as tl

from .checks import check_normalisation
from .launch import ROW_DTYPES, accumulator, as_rows, benchmark_rows, row_block, warps_for
from .spec import BenchmarkSpec

MAX_COLS = 65536


def _warps(block: int) -> int:
    # From sweeps on an H200: rows up to 8K values do best with 16 values per thread
    # (8K: 16 warps, 98% of the copy ceiling, against 93% with 8); at 16K, 8 warps of
    # 64 values did better than 16 (99% against 95%).
    return warps_for(block, per_thread=16 if block <= 8192 else 64)


@triton.jit
def rms_norm_kernel(
    x_ptr,
    weight_ptr,
    out_ptr,
    n_cols,
    eps,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    EVEN: tl.constexpr,
):
    # One program per row. EVEN: the row fills the tile, so the mask is the constant
    # True and compiles away.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = (cols < n_cols) | EVEN
    # The row is read for the sum of squares, marked to stay in cache...
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(
        ACC
    )
    # Padding lanes hold zeros, which add nothing to the sum of squares.
    inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    # ...and read again, from the cache, for the output. Memory sees one read; the
    # program keeps nothing row-sized across the reduction, so it needs fewer
    # registers and more programs fit on a multiprocessor at once.
    x = tl.load(
        x_ptr + row * n_cols + cols, mask=mask, other=0.0, eviction_policy="evict_first"
    ).to(ACC)
    weight = tl.load(weight_ptr + cols, mask=mask, eviction_policy="evict_last").to(ACC)
    y = x * inv_rms * weight
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm of ``x`` over its last dimension, scaled by ``weight``, by :func:`rms_norm_kernel`.

    ``x``: contiguous float tensor on the Triton device, rows of at most 65536 values;
    ``weight``: one value per column, of ``x``'s dtype; ``eps``: added to the mean square.
    """
    check_normalisation(x, {"weight": weight}, eps, MAX_COLS, ROW_DTYPES)
    rows = as_rows(x)
    out = torch.empty_like(rows)
    n_rows, n_cols = rows.shape
    if n_rows:
        block = row_block(n_cols)
        rms_norm_kernel[(n_rows,)](
            rows,
            weight,
            out,
            n_cols,
            eps,
            ACC=accumulator(x.dtype),
            BLOCK_SIZE=block,
            EVEN=block == n_cols,
            num_warps=_warps(block),
        )
    return out.view_as(x)


def torch_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """PyTorch's ``torch.nn.functional.rms_norm``."""
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)


ROWS = 16384


def make_inputs(
    n_cols: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Activations of ROWS tokens by ``n_cols`` features, and a weight near one."""
    rows = benchmark_rows(device, ROWS)
    x = torch.randn(rows, n_cols, dtype=dtype, device=device, generator=generator)
    weight = 1 + 0.1 * torch.randn(n_cols, dtype=dtype, device=device, generator=generator)
    return x, weight


def bytes_moved(n_cols: int, dtype: torch.dtype) -> int:
    """Read x and the weight once, write y once."""
    return (2 * ROWS + 1) * n_cols * dtype.itemsize


BENCHMARK = BenchmarkSpec(
    name="rms_norm",
    metric="GB/s",
    x_name="N",
    dtype=torch.bfloat16,
    gpu_sizes=tuple(2**p for p in range(9, 15)),
    interpreter_sizes=(1, 781, 2048),
    make_inputs=make_inputs,
    triton=rms_norm,
    torch_eager=torch_rms_norm,
    work=bytes_moved,
    details={"rows": ROWS},
)

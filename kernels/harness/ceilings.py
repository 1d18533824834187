"""The ceiling a benchmark's rates are shown against, chosen by its metric and dtype.

A memory-bound benchmark (GB/s) is held against the GPU's device-to-device copy: bytes
move at one rate whatever they hold. A compute-bound one (TFLOP/s) is held against the
vendor library's matrix product in the benchmark's own dtype, as fast as that library
goes on random data: bf16 and fp16 on tensor cores, fp32 without TF32 (PyTorch's
default for ``matmul``), fp8 through ``torch._scaled_mm`` with unit scales. A benchmark
in a new dtype needs no edit here unless the library multiplies it another way.

The bf16 product is :func:`kernels.harness.timing.matmul_ceiling`, as every record before this
module measured it; the others are timed the same way (:func:`kernels.harness.timing.best_of`
of kernel times).
"""

from collections.abc import Callable
from typing import Any

import torch

from . import timing
from .measurements import RATE_SCALE

# How a ceiling's name writes each dtype (bf16 as the records have always named it).
SHORT_NAMES = {
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.float32: "fp32",
    torch.float8_e4m3fn: "fp8 e4m3",
    torch.float8_e5m2: "fp8 e5m2",
}
FP8 = frozenset({torch.float8_e4m3fn, torch.float8_e5m2})
PRODUCT_SIZE = 8192


def _short(dtype: torch.dtype) -> str:
    if dtype not in SHORT_NAMES:
        raise ValueError(
            f"no matrix-product ceiling for {dtype}: kernels.harness.ceilings times the library's "
            f"product in {', '.join(map(str, SHORT_NAMES))}"
        )
    return SHORT_NAMES[dtype]


def product(dtype: torch.dtype, n: int, device: str = "cuda") -> Callable[[], object]:
    """A call of the library's ``n`` x ``n`` x ``n`` product in ``dtype`` on random data."""
    _short(dtype)
    generator = torch.Generator(device=device).manual_seed(0)
    a, b = (
        torch.randn(n, n, device=device, generator=generator).to(dtype)
        for _ in range(2)
    )
    if dtype in FP8:
        # _scaled_mm takes its second operand column-major, and a scale per operand.
        one = torch.ones((), device=device, dtype=torch.float32)
        b_columns = b.t().contiguous().t()
        return lambda: torch._scaled_mm(
            a, b_columns, scale_a=one, scale_b=one, out_dtype=torch.bfloat16
        )
    return lambda: a @ b


def product_ceiling(dtype: torch.dtype, n: int = PRODUCT_SIZE) -> dict[str, Any]:
    """The library's matrix-product rate of this GPU in ``dtype``, TFLOP/s: the best of
    ``timing.CEILING_TIMINGS`` timed products."""
    if dtype == torch.bfloat16:
        return timing.matmul_ceiling(n)
    call = product(dtype, n)
    scale = RATE_SCALE["TFLOP/s"]
    value = timing.best_of(
        lambda: 2 * n**3 / (timing.kernel_time_ms(call) / 1e3) / scale
    )
    return {
        "name": f"cuBLAS {_short(dtype)} matmul",
        "value": value,
        "timings": timing.CEILING_TIMINGS,
        "shape": [n, n, n],
    }


def ceiling_for(metric: str, dtype: torch.dtype) -> dict[str, Any]:
    """The ceiling of a benchmark of ``metric`` in ``dtype``, measured now on this GPU."""
    if metric == "GB/s":
        return timing.copy_ceiling()
    if metric == "TFLOP/s":
        return product_ceiling(dtype)
    raise ValueError(f"no ceiling for the metric {metric!r}: it is GB/s or TFLOP/s")

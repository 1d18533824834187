"""Helpers shared by the kernel tests: random inputs on the kernel device, a device the
kernels do not run on, and float64 comparisons at each dtype's tolerance."""

import torch

from kernels.harness.bench import RELATIVE_TOLERANCE, relative_error
from kernels.triton_helpers.runtime import interpreted, kernel_device

DEVICE = kernel_device()
# "meta" tensors have a shape and no data: a device no kernel here runs on.
OTHER_DEVICE = torch.device("meta") if interpreted() else torch.device("cpu")
HALF_AND_SINGLE = (torch.float16, torch.bfloat16, torch.float32)


def randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    """Random normal values of ``shape`` on the kernel device, reproducible by ``seed``."""
    generator = torch.Generator(device=DEVICE).manual_seed(seed)
    return torch.randn(shape, dtype=dtype, device=DEVICE, generator=generator)


def assert_close_to_float64(out, reference, dtype: torch.dtype) -> None:
    """``out`` is within ``dtype``'s relative tolerance of a float64 ``reference``."""
    error = relative_error(out, reference)
    assert error <= RELATIVE_TOLERANCE[dtype], f"relative error {error:.2e} for {dtype}"

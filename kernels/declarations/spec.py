"""How a kernel module declares a benchmark, without importing the harness.

A kernel module defines one :class:`BenchmarkSpec` per benchmark at its top level; the
harness (:mod:`kernels.harness.bench`) finds them, measures them on a GPU and records the result.
This module imports nothing of the harness, so a kernel module stays a kernel module:
importing it never pulls in timing, plotting or recording code.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

Metric = Literal["GB/s", "TFLOP/s"]
Output = torch.Tensor | tuple[torch.Tensor, ...]

# The series a benchmark compares Triton with when it names none of its own.
DEFAULT_BASELINES = ("PyTorch", "torch.compile")


class ProviderUnavailable(RuntimeError):
    """Raised by a baseline that cannot run on this machine or input (a missing SDPA
    backend, a library that is not installed, a row longer than it takes); the harness
    records ``null`` at that size and the reason under ``unavailable``."""


@dataclass(frozen=True)
class BenchmarkSpec:
    """What a kernel module tells the harness about one benchmark.

    ``make_inputs(size, dtype, device, generator)`` returns the positional inputs of one
    call; ``triton`` and ``torch_eager`` take them and return the output; ``work(size,
    dtype)`` is the bytes (``GB/s``) or floating-point operations (``TFLOP/s``) that one
    call needs at least. ``reference`` (default ``torch_eager``) is evaluated on float64
    copies of the inputs to check every provider.

    A *backward* benchmark names in ``grad_inputs`` the inputs that receive gradients;
    its last input is then the gradient of the output. The check compares those
    gradients, and only the backward pass is timed.
    """

    name: str
    metric: Metric
    x_name: str
    dtype: torch.dtype
    gpu_sizes: Sequence[int]
    interpreter_sizes: Sequence[int]
    make_inputs: Callable[..., tuple[torch.Tensor, ...]]
    triton: Callable[..., Output]
    torch_eager: Callable[..., Output]
    work: Callable[[int, torch.dtype], float]
    reference: Callable[..., Output] | None = None
    grad_inputs: tuple[int, ...] = ()
    # False for random operations, whose baselines draw other random numbers.
    check_baselines: bool = True
    # A training step ``step(provider, inputs)`` whose peak GPU memory is recorded.
    peak_memory_step: (
        Callable[[Callable[..., Output], tuple[torch.Tensor, ...]], None] | None
    ) = None
    # Extra keys for the measurement file, such as the fixed dimensions of the inputs.
    details: Mapping[str, Any] = field(default_factory=dict)
    # The series Triton is compared with, by name. None: PyTorch eager (``torch_eager``)
    # and ``torch.compile`` of it, compiled afresh for each size.
    baselines: Mapping[str, Callable[..., Output]] | None = None
    # Series timed after those, such as another library's kernel for the same operation
    # (``Liger``, :mod:`kernels.harness.liger`).
    extra_baselines: Mapping[str, Callable[..., Output]] = field(default_factory=dict)
    # Series timed from a peer library, by series name: the name of the operation in
    # that library's adapter, such as ``{"Liger": "softmax"}``. A kernel module names
    # them and imports no adapter: the harness resolves them
    # (:mod:`kernels.harness.peers`), so a kernel module never runs another library.
    peer_baselines: Mapping[str, str] = field(default_factory=dict)
    # Providers whose peak memory is recorded beside the others but that are not timed,
    # such as a naive version that runs out of memory at large sizes.
    memory_only: Mapping[str, Callable[..., Output]] = field(default_factory=dict)

    @property
    def backward(self) -> bool:
        """Whether this benchmark times a backward pass."""
        return bool(self.grad_inputs)

    @property
    def series_names(self) -> tuple[str, ...]:
        """The names of the timed series, Triton first."""
        baselines = (
            DEFAULT_BASELINES if self.baselines is None else tuple(self.baselines)
        )
        return ("Triton", *baselines, *self.extra_baselines, *self.peer_baselines)

    @property
    def module(self) -> str:
        """The name of the kernel module that defines this benchmark (its launcher's)."""
        return self.triton.__module__

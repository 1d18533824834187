"""How a kernel family describes itself to the harness and the tests, without importing
either.

A module of the operations room (:mod:`kernels.operations`) declares one :class:`Family`
at its top level, named ``FAMILY``: its public launchers and how to call each on tiny
inputs (the autograd tests call every one), the rows of the launch-cost record
(:mod:`kernels.harness.launch_cost`) that time one call of its launchers, and the model
shapes that its benchmarks' sweeps must hold. The harness and the tests find the
declarations (:func:`kernels.harness.families.discover`) instead of keeping lists of
their own: adding a family touches no file outside its own.

The launch-cost rows are set up here, beside the kernels they launch, with the helpers
below: tiny random inputs (:func:`tiny_randn`), what a call takes
(:func:`describe_inputs`) and a kernel launched with arguments fixed beforehand
(:func:`bare_launch`).
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

# The tiny inputs of the launch-cost rows: elementwise kernels take TINY_ELEMENTS values,
# row-wise ones TINY_ROWS rows of TINY_COLS values; a matrix product of TINY_SQUARE x
# TINY_SQUARE matrices; attention one sequence of TINY_ATTENTION (batch, heads, tokens,
# head dim). Each is a few programs of work: the GPU runs a call's work in less time
# than the host takes to issue the next, so the record times the host.
TINY_ELEMENTS = 4096
TINY_ROWS, TINY_COLS = 8, 1024
TINY_SQUARE = 64
TINY_ATTENTION = (1, 2, 128, 64)

# The sizes of real models that a family's sweeps hold beside the powers of two (its
# ``model_shapes``): hidden sizes of GPT-2, GPT-2 XL, LLaMA 2 13B and DeepSeek-V3; the
# vocabularies of LLaMA 2, GPT-2, LLaMA 3 and Qwen 2; vector lengths that are no
# multiple of any tile.
HIDDEN_SIZES = frozenset({768, 1600, 5120, 7168})
VOCABULARIES = frozenset({32000, 50257, 128256, 151936})
ODD_LENGTHS = frozenset({3_000_001, 100_000_001})


@dataclass(frozen=True)
class LaunchCase:
    """One launcher set up on tiny inputs: three zero-argument calls that do the same work.

    ``triton`` calls the launcher as a user does; ``bare`` launches the same kernel(s) as
    ``kernel[grid](...)`` with every argument and output made beforehand; ``torch`` is
    PyTorch's equivalent operation. ``bare_out`` is what the bare launch writes, to check
    it against the launcher's output; ``inputs`` says what a call takes.
    """

    inputs: str
    triton: Callable[[], object]
    bare: Callable[[], object]
    torch: Callable[[], object]
    bare_out: torch.Tensor


@dataclass(frozen=True)
class Launcher:
    """A public launcher of a family, and how to call it on tiny inputs.

    ``make_inputs(device)`` returns its positional inputs; ``float_inputs`` are the
    positions of those that can require a gradient; ``derivatives`` is what autograd may
    ask of it: ``0`` none (it refuses inputs that require a gradient), ``1`` a first
    derivative (a second is refused with an error naming the operation), ``2`` a first
    and a second.
    """

    function: Callable[..., torch.Tensor]
    make_inputs: Callable[[torch.device], tuple[Any, ...]]
    float_inputs: tuple[int, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    derivatives: Literal[0, 1, 2] = 1
    # ``module.function`` where the function does not say it itself (a custom operator
    # registered with ``torch.library`` has no ``__name__`` of its own).
    declared_name: str | None = None

    @property
    def name(self) -> str:
        """``module.function``, such as ``vector_add.add``."""
        if self.declared_name is not None:
            return self.declared_name
        module = self.function.__module__.rpartition(".")[2]
        return f"{module}.{self.function.__name__}"


@dataclass(frozen=True)
class Family:
    """What a kernel family declares (see the module docstring).

    ``launch_costs`` maps a row name of the launch-cost record to the function that sets
    the row up on a device; ``model_shapes`` maps a benchmark's name to the sizes of real
    models its sweep must hold.
    """

    launchers: tuple[Launcher, ...]
    launch_costs: Mapping[str, Callable[[torch.device], LaunchCase]] = field(
        default_factory=dict
    )
    model_shapes: Mapping[str, frozenset[int]] = field(default_factory=dict)


def tiny_randn(
    *shapes: tuple[int, ...], dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, ...]:
    """Random tensors of ``shapes``, the same on every run."""
    generator = torch.Generator(device=device).manual_seed(0)
    return tuple(
        torch.randn(s, dtype=dtype, device=device, generator=generator) for s in shapes
    )


def describe_inputs(**tensors: torch.Tensor) -> str:
    """What a call takes, for the record: ``x (8, 1024) float32, ...``."""
    return ", ".join(
        f"{name} {tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"
        for name, t in tensors.items()
    )


def bare_launch(
    kernel: Any, grid: object, *args: object, **constants: object
) -> Callable[[], object]:
    """``kernel[grid](*args, **constants)``, its arguments fixed now."""
    return lambda: kernel[grid](*args, **constants)

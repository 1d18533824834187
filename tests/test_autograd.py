"""Every public launcher meets autograd: given inputs that require a gradient, its output
is in the graph (it has a ``grad_fn`` and back-propagates to those inputs) or the call
raises an error; a second derivative, where the backward pass is Triton's, is refused
with an error that names the operation."""

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import torch
from kernel_inputs import DEVICE, randn

import kernels
from kernels.harness.bench import discover
from kernels.operations import (
    attention,
    attention_ablation,
    attention_gluon,
    cross_entropy,
    dropout,
    layer_norm,
    loops,
    matmul,
    rms_norm,
    softmax,
    swiglu,
    vector_add,
)


@dataclass(frozen=True)
class Launcher:
    """A public launcher, and how to call it on small inputs."""

    function: Callable[..., torch.Tensor]
    make_inputs: Callable[[], tuple]
    # The positions of the inputs that can require a gradient.
    float_inputs: tuple[int, ...]
    kwargs: dict = field(default_factory=dict)


def half(*shape: int, seed: int = 0) -> torch.Tensor:
    return randn(*shape, dtype=torch.float16, seed=seed)


LAUNCHERS = {
    "vector_add.add": Launcher(vector_add.add, lambda: (randn(10), randn(10, seed=1)), (0, 1)),
    "dropout.dropout": Launcher(
        dropout.dropout, lambda: (randn(100),), (0,), {"p": 0.3, "seed": 2}
    ),
    "softmax.softmax": Launcher(softmax.softmax, lambda: (randn(3, 7),), (0,)),
    "rms_norm.rms_norm": Launcher(
        rms_norm.rms_norm, lambda: (randn(3, 7), randn(7, seed=1)), (0, 1)
    ),
    "layer_norm.layer_norm": Launcher(
        layer_norm.layer_norm, lambda: (randn(3, 7), randn(7, seed=1), randn(7, seed=2)), (0, 1, 2)
    ),
    "cross_entropy.cross_entropy": Launcher(
        cross_entropy.cross_entropy,
        lambda: (randn(3, 7), torch.tensor([1, 0, 6], device=DEVICE)),
        (0,),
    ),
    "matmul.matmul": Launcher(matmul.matmul, lambda: (half(8, 16), half(16, 8, seed=1)), (0, 1)),
    "attention.attention": Launcher(
        attention.attention, lambda: tuple(half(1, 1, 16, 16, seed=s) for s in range(3)), (0, 1, 2)
    ),
    # Forward passes only: they refuse inputs that need a gradient (before any GPU).
    "attention_ablation.ablated_attention": Launcher(
        attention_ablation.ablated_attention,
        lambda: tuple(half(1, 1, 16, 64, seed=s) for s in range(3)),
        (0, 1, 2),
    ),
    "attention_gluon.gluon_attention": Launcher(
        attention_gluon.gluon_attention,
        lambda: tuple(half(1, 1, 16, 64, seed=s) for s in range(3)),
        (0, 1, 2),
    ),
    "loops.row_sums": Launcher(loops.row_sums, lambda: (randn(3, 7),), (0,)),
    "loops.reduce_tile": Launcher(loops.reduce_tile, lambda: (randn(3, 7),), (0,)),
    "swiglu.swiglu": Launcher(swiglu.swiglu, lambda: (randn(10), randn(10, seed=1)), (0, 1)),
    "swiglu.swiglu_op": Launcher(swiglu.swiglu_op, lambda: (randn(10), randn(10, seed=1)), (0, 1)),
}


def cases() -> list[tuple[str, tuple[int, ...]]]:
    """Each launcher with each of its float inputs requiring a gradient alone, then all."""
    found = []
    for name, launcher in LAUNCHERS.items():
        subsets = [(i,) for i in launcher.float_inputs]
        if len(launcher.float_inputs) > 1:
            subsets.append(launcher.float_inputs)
        found += [(name, subset) for subset in subsets]
    return found


@pytest.mark.parametrize(("name", "wanted"), cases(), ids=lambda case: str(case))
def test_output_is_in_the_graph_or_the_call_raises(name: str, wanted: tuple[int, ...]) -> None:
    launcher = LAUNCHERS[name]
    inputs = [
        t.requires_grad_() if i in wanted else t for i, t in enumerate(launcher.make_inputs())
    ]
    try:
        out = launcher.function(*inputs, **launcher.kwargs)
    except RuntimeError as error:
        assert "requires grad" in str(error)
        return
    assert out.grad_fn is not None, f"{name} returned a result cut off from autograd"
    out.backward(torch.ones_like(out))
    for i in wanted:
        assert inputs[i].grad is not None and inputs[i].grad.shape == inputs[i].shape


def _modules_with_launchers() -> set[str]:
    """The kernel modules that define a benchmark or wire kernels into autograd."""
    modules = {spec.module.rpartition(".")[2] for spec in discover().values()}
    for info in pkgutil.iter_modules(kernels.__path__):
        module = importlib.import_module(f"kernels.{info.name}")
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, torch.autograd.Function)
                and value.__module__ == module.__name__
                and not value.__name__.startswith(("_", "Reference"))
            ):
                modules.add(info.name)
    return modules


def test_every_module_with_a_launcher_is_covered() -> None:
    covered = {name.partition(".")[0] for name in LAUNCHERS}
    assert _modules_with_launchers() <= covered


TWICE_DIFFERENTIABLE = {"vector_add.add"}
# Launchers with no derivative at all (they refuse a gradient, tested above).
FORWARD_ONLY = {
    "attention_ablation.ablated_attention",
    "attention_gluon.gluon_attention",
    "loops.row_sums",
    "loops.reduce_tile",
}


@pytest.mark.parametrize("name", sorted(set(LAUNCHERS) - FORWARD_ONLY))
def test_a_second_derivative_is_refused_by_name(name: str) -> None:
    launcher = LAUNCHERS[name]
    inputs = list(launcher.make_inputs())
    first = inputs[launcher.float_inputs[0]].requires_grad_()
    out = launcher.function(*inputs, **launcher.kwargs)
    (grad,) = torch.autograd.grad(out.pow(2).sum(), first, create_graph=True)
    operation = name.partition(".")[2]
    if name in TWICE_DIFFERENTIABLE:
        grad.sum().backward()
        return
    with pytest.raises(RuntimeError, match=rf"^{operation} has no second derivative"):
        grad.sum().backward()


@pytest.mark.parametrize("name", sorted(set(LAUNCHERS) - FORWARD_ONLY))
def test_a_lazily_negated_incoming_gradient_is_read_with_its_sign(name: str) -> None:
    # autograd hands the backward pass the gradient the caller gave, a lazily negated
    # view included (torch._neg_view(-g) holds -g in memory and reads as g): kernels
    # that read raw memory must see g, as PyTorch's own backward does.
    launcher = LAUNCHERS[name]
    grads = []
    for negated in (False, True):
        inputs = [
            t.requires_grad_() if i in launcher.float_inputs else t
            for i, t in enumerate(launcher.make_inputs())
        ]
        out = launcher.function(*inputs, **launcher.kwargs)
        incoming = randn(*out.shape, dtype=out.dtype, seed=5)
        out.backward(torch._neg_view(-incoming) if negated else incoming)
        grads.append([inputs[i].grad for i in launcher.float_inputs])
    for plain, negated in zip(*grads, strict=True):
        assert torch.equal(plain, negated), f"{name}: a negated view's gradient read raw"

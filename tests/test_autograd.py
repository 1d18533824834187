"""Every public launcher meets autograd: given inputs that require a gradient, its output
is in the graph (it has a ``grad_fn`` and back-propagates to those inputs) or the call
raises an error; a second derivative, where the backward pass is Triton's, is refused
with an error that names the operation."""

import importlib
import inspect
import pkgutil

import pytest
import torch
from kernel_inputs import DEVICE, randn

from kernels import operations
from kernels.harness import families
from kernels.harness.bench import discover

# Every public launcher, as its family declares it (kernels/declarations/family.py).
LAUNCHERS = families.launchers()


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
        t.requires_grad_() if i in wanted else t for i, t in enumerate(launcher.make_inputs(DEVICE))
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
    """The operations modules that define a benchmark or wire kernels into autograd."""
    modules = {spec.module.rpartition(".")[2] for spec in discover().values()}
    for info in pkgutil.iter_modules(operations.__path__):
        module = importlib.import_module(f"{operations.__name__}.{info.name}")
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, torch.autograd.Function)
                and value.__module__ == module.__name__
                and not value.__name__.startswith(("_", "Reference"))
            ):
                modules.add(info.name)
    return modules


def test_every_module_with_a_launcher_declares_its_family() -> None:
    assert _modules_with_launchers() <= set(families.discover())
    covered = {name.partition(".")[0] for name in LAUNCHERS}
    assert _modules_with_launchers() <= covered


TWICE_DIFFERENTIABLE = {name for name, launcher in LAUNCHERS.items() if launcher.derivatives == 2}
# Launchers with no derivative at all (they refuse a gradient, tested above).
FORWARD_ONLY = {name for name, launcher in LAUNCHERS.items() if launcher.derivatives == 0}


def test_the_declarations_hold_what_the_course_promises() -> None:
    # The launchers with more or less than a first derivative, as the pages say.
    assert {"vector_add.add"} == TWICE_DIFFERENTIABLE
    assert {"attention_gluon.gluon_attention", "loops.row_sums"} <= FORWARD_ONLY


@pytest.mark.parametrize("name", sorted(set(LAUNCHERS) - FORWARD_ONLY))
def test_a_second_derivative_is_refused_by_name(name: str) -> None:
    launcher = LAUNCHERS[name]
    inputs = list(launcher.make_inputs(DEVICE))
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
            for i, t in enumerate(launcher.make_inputs(DEVICE))
        ]
        out = launcher.function(*inputs, **launcher.kwargs)
        incoming = randn(*out.shape, dtype=out.dtype, seed=5)
        out.backward(torch._neg_view(-incoming) if negated else incoming)
        grads.append([inputs[i].grad for i in launcher.float_inputs])
    for plain, negated in zip(*grads, strict=True):
        assert torch.equal(plain, negated), f"{name}: a negated view's gradient read raw"

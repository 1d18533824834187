"""A guard for backward passes that are not differentiable themselves.

A ``torch.autograd.Function`` whose backward pass launches Triton kernels gives
gradients that autograd cannot differentiate again: the kernels write plain tensors.
Asked for a second derivative (``create_graph=True``, then another backward pass),
autograd would find those gradients cut off from the graph and answer with an error
about a tensor that "does not require grad", or leave a term out without a word.
:func:`first_order_only` makes the request fail with an error that says what happened,
as PyTorch's ``once_differentiable`` does, and also when the second derivative is taken
with respect to the inputs rather than the incoming gradient.
"""

import functools
from collections.abc import Callable

import torch


class _NoSecondDerivative(torch.autograd.Function):
    """Passes gradients through unchanged; differentiating them raises an error that
    names the operation."""

    @staticmethod
    def forward(ctx, operation: str, n_gradients: int, *tensors: torch.Tensor):
        ctx.operation = operation
        # The tensors after the gradients are the backward pass's own inputs: they link
        # this node to the graph, so that a second derivative reaches it.
        return tensors[:n_gradients]

    @staticmethod
    def backward(ctx, *grads: torch.Tensor):
        raise no_second_derivative(ctx.operation)


def no_second_derivative(operation: str) -> RuntimeError:
    """The error for a second derivative of ``operation``, whose backward pass runs
    Triton kernels."""
    return RuntimeError(
        f"{operation} has no second derivative: its backward pass runs Triton "
        "kernels that autograd cannot differentiate. Differentiate it once (without "
        "create_graph=True), or use PyTorch's version for higher derivatives"
    )


def first_order_only(operation: str) -> Callable:
    """Decorate the ``backward`` of an autograd Function named ``operation`` whose
    gradients come from Triton kernels.

    In an ordinary backward pass (grad mode off) this adds nothing but one test. When
    autograd records the backward pass (``create_graph=True``) and its incoming gradients
    or saved tensors require gradients, the gradients come out of a node whose own
    backward raises an error naming ``operation``.
    """

    def decorate(backward: Callable) -> Callable:
        @functools.wraps(backward)
        def guarded(ctx, *grad_outputs):
            # An incoming gradient may be a lazily negated or conjugated view (autograd
            # passes what the caller gave, such as torch._neg_view(g)): the kernels read
            # raw memory, so the bit is resolved here, once for every backward pass.
            grad_outputs = tuple(
                g.resolve_neg().resolve_conj() if isinstance(g, torch.Tensor) else g
                for g in grad_outputs
            )
            if not torch.is_grad_enabled():
                return backward(ctx, *grad_outputs)
            with torch.no_grad():
                grads = backward(ctx, *grad_outputs)
            if not isinstance(grads, tuple):
                grads = (grads,)
            sources = (*grad_outputs, *ctx.saved_tensors)
            linked = [
                t for t in sources if isinstance(t, torch.Tensor) and t.requires_grad
            ]
            computed = [g for g in grads if isinstance(g, torch.Tensor)]
            if not linked or not computed:
                return grads
            out = iter(
                _NoSecondDerivative.apply(operation, len(computed), *computed, *linked)
            )
            return tuple(next(out) if isinstance(g, torch.Tensor) else g for g in grads)

        return guarded

    return decorate

"""SwiGLU, forward and backward, wired into PyTorch two ways.

``out = silu(gate) * up``, where ``silu(g) = g * sigmoid(g)``: the gated activation in
the feed-forward block of LLaMA-style models. Eager PyTorch runs it as two elementwise
kernels, ``silu`` and then the product, with an intermediate tensor between them; one
Triton kernel reads ``gate`` and ``up`` once and writes ``out`` once. With
``s = sigmoid(gate)`` the gradients are::

    d_up   = dout * gate * s
    d_gate = dout * up * s * (1 + gate * (1 - s))

The kernels are wired into autograd by a ``torch.autograd.Function`` (:func:`swiglu`)
and, as a custom operator that ``torch.compile`` can trace, by
``torch.library.triton_op`` (:func:`swiglu_op`, ``torch.ops.ninja_gap.swiglu``), which
needs torch 2.6 or newer.
"""

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

from ..declarations.family import (
    TINY_ELEMENTS,
    Family,
    LaunchCase,
    Launcher,
    bare_launch,
    describe_inputs,
    tiny_randn,
)
from ..triton_helpers.checks import check_same_layout, check_tensor, needs_grad
from ..triton_helpers.direct_launch import launch
from ..triton_helpers.first_order import first_order_only, no_second_derivative
from ..triton_helpers.launch import accumulator, cdiv

# float64 is there for gradient checks against PyTorch.
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

# Elements per program: the vector addition's tile (kernels/operations/vector_add.py says how it
# was chosen); this kernel has not been timed on its own.
BLOCK_SIZE = 1024


@triton.jit
def swiglu_forward_kernel(
    gate_ptr, up_ptr, out_ptr, n_elements, ACC: tl.constexpr, BLOCK_SIZE: tl.constexpr
):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    # Compute in float32 (float64 for float64 inputs) and round once on the way out.
    gate = tl.load(gate_ptr + offsets, mask=mask).to(ACC)
    up = tl.load(up_ptr + offsets, mask=mask).to(ACC)
    out = gate * tl.sigmoid(gate) * up
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_backward_kernel(
    gate_ptr,
    up_ptr,
    dout_ptr,
    dgate_ptr,
    dup_ptr,
    n_elements,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    gate = tl.load(gate_ptr + offsets, mask=mask).to(ACC)
    dout = tl.load(dout_ptr + offsets, mask=mask).to(ACC)
    # sigmoid(gate) is recomputed rather than saved by the forward pass: one exp costs
    # less than writing a tensor and reading it back.
    s = tl.sigmoid(gate)
    # A None pointer is a compile-time constant: the gradient nobody asked for is
    # neither computed nor stored, and `up` is not even read when only d_up is wanted.
    if dgate_ptr is not None:
        up = tl.load(up_ptr + offsets, mask=mask).to(ACC)
        dgate = dout * up * s * (1.0 + gate * (1.0 - s))
        tl.store(dgate_ptr + offsets, dgate.to(dgate_ptr.dtype.element_ty), mask=mask)
    if dup_ptr is not None:
        dup = dout * gate * s
        tl.store(dup_ptr + offsets, dup.to(dup_ptr.dtype.element_ty), mask=mask)


def _grid(n_elements: int) -> tuple[int]:
    # One program per tile; cdiv rounds up so the tail tile is launched too.
    return (cdiv(n_elements, BLOCK_SIZE),)


def _check(gate: torch.Tensor, up: torch.Tensor) -> None:
    check_tensor("gate", gate, SUPPORTED_DTYPES)
    check_tensor("up", up, SUPPORTED_DTYPES)
    check_same_layout(("gate", "up"), gate, up)


def _forward(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(gate)
    n_elements = gate.numel()
    if n_elements:
        launch(
            swiglu_forward_kernel,
            _grid(n_elements),
            gate,
            up,
            out,
            n_elements,
            ACC=accumulator(gate.dtype),
            BLOCK_SIZE=BLOCK_SIZE,
        )
    return out


def _backward(
    gate: torch.Tensor,
    up: torch.Tensor,
    dout: torch.Tensor,
    want_dgate: bool,
    want_dup: bool,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    dgate = torch.empty_like(gate) if want_dgate else None
    dup = torch.empty_like(up) if want_dup else None
    n_elements = gate.numel()
    if n_elements and (want_dgate or want_dup):
        launch(
            swiglu_backward_kernel,
            _grid(n_elements),
            gate,
            up,
            dout,
            dgate,
            dup,
            n_elements,
            ACC=accumulator(gate.dtype),
            BLOCK_SIZE=BLOCK_SIZE,
        )
    return dgate, dup


class SwiGLUFunction(torch.autograd.Function):
    """Autograd wiring: keep the inputs; compute only the gradients wanted."""

    @staticmethod
    def forward(ctx, gate, up):
        ctx.save_for_backward(gate, up)
        return _forward(gate, up)

    @staticmethod
    @first_order_only("swiglu")
    def backward(ctx, dout):
        gate, up = ctx.saved_tensors
        want_dgate, want_dup = ctx.needs_input_grad
        return _backward(gate, up, dout.contiguous(), want_dgate, want_dup)


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """``silu(gate) * up`` computed by Triton kernels, differentiable through autograd.

    ``gate`` and ``up``: contiguous tensors of one shape and one float dtype (float16,
    bfloat16, float32 or float64) on the device Triton runs on.
    """
    _check(gate, up)
    if needs_grad(gate, up):
        return SwiGLUFunction.apply(gate, up)
    return _forward(gate, up)


# The same kernels as custom operators: torch.ops.ninja_gap.swiglu and its backward.
# To torch.compile an operator is one node of the graph, described by its schema (the
# types it takes and returns), a fake implementation and a registered backward.
@triton_op("ninja_gap::swiglu", mutates_args=())
def swiglu_op(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """:func:`swiglu` as a custom operator that torch.compile keeps in its graph."""
    _check(gate, up)
    out = torch.empty_like(gate)
    n_elements = gate.numel()
    if n_elements:
        wrap_triton(swiglu_forward_kernel)[_grid(n_elements)](
            gate,
            up,
            out,
            n_elements,
            ACC=accumulator(gate.dtype),
            BLOCK_SIZE=BLOCK_SIZE,
        )
    return out


@triton_op("ninja_gap::swiglu_backward", mutates_args=())
def swiglu_backward_op(
    gate: torch.Tensor, up: torch.Tensor, dout: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both gradients of :func:`swiglu_op`, as a custom operator."""
    dgate, dup = torch.empty_like(gate), torch.empty_like(up)
    n_elements = gate.numel()
    if n_elements:
        wrap_triton(swiglu_backward_kernel)[_grid(n_elements)](
            gate,
            up,
            dout,
            dgate,
            dup,
            n_elements,
            ACC=accumulator(gate.dtype),
            BLOCK_SIZE=BLOCK_SIZE,
        )
    return dgate, dup


# A fake implementation gives an output's shape, dtype and device without computing it;
# torch.compile runs it on tensors that have no data. By default triton_op uses the
# operator's own body, where wrap_triton does not run a compiled kernel on such tensors.
# The interpreter's kernels would run and read data that is not there, so these state
# the shapes directly, as register_fake does for any custom operator.
@swiglu_op.register_fake
def _swiglu_fake(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    _check(gate, up)
    return torch.empty_like(gate)


@swiglu_backward_op.register_fake
def _swiglu_backward_fake(
    gate: torch.Tensor, up: torch.Tensor, dout: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(gate), torch.empty_like(up)


def _save_inputs(
    ctx, inputs: tuple[torch.Tensor, torch.Tensor], output: torch.Tensor
) -> None:
    ctx.save_for_backward(*inputs)


def _swiglu_op_backward(ctx, dout: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    gate, up = ctx.saved_tensors
    return swiglu_backward_op(gate, up, dout.contiguous())


swiglu_op.register_autograd(_swiglu_op_backward, setup_context=_save_inputs)


def _swiglu_backward_op_backward(ctx, *grads: torch.Tensor) -> None:
    # Without a registered backward, PyTorch's own error would come from deep inside
    # torch.library; this one names the operation, as first_order_only does.
    raise no_second_derivative("swiglu_op")


swiglu_backward_op.register_autograd(_swiglu_backward_op_backward)


def torch_swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """The PyTorch reference: ``silu(gate) * up`` in eager PyTorch."""
    return torch.nn.functional.silu(gate) * up


def launch_cost_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.swiglu.swiglu` against ``silu(gate) * up`` in PyTorch (two
    kernels)."""
    gate, up = tiny_randn(
        (TINY_ELEMENTS,), (TINY_ELEMENTS,), dtype=torch.float32, device=device
    )
    out = torch.empty_like(gate)
    grid = (triton.cdiv(TINY_ELEMENTS, BLOCK_SIZE),)
    bare = bare_launch(
        swiglu_forward_kernel,
        grid,
        gate,
        up,
        out,
        TINY_ELEMENTS,
        ACC=accumulator(gate.dtype),
        BLOCK_SIZE=BLOCK_SIZE,
    )
    return LaunchCase(
        inputs=describe_inputs(gate=gate, up=up),
        triton=lambda: swiglu(gate, up),
        bare=bare,
        torch=lambda: torch.nn.functional.silu(gate) * up,
        bare_out=out,
    )


FAMILY = Family(
    launchers=(
        Launcher(
            swiglu,
            lambda device: tiny_randn((10,), (10,), dtype=torch.float32, device=device),
            (0, 1),
        ),
        Launcher(
            swiglu_op,
            lambda device: tiny_randn((10,), (10,), dtype=torch.float32, device=device),
            (0, 1),
            declared_name="swiglu.swiglu_op",
        ),
    ),
    launch_costs={"swiglu": launch_cost_case},
)

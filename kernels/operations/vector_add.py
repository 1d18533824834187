"""Vector addition: the "hello world" of Triton, and the simplest memory-bound kernel.

``out = x + y`` reads two vectors and writes one. Each element costs one addition and
twelve bytes of traffic in float32, so the kernel can only be as fast as memory is:
the benchmark compares it with the device's measured copy bandwidth.
"""

import dataclasses

import torch
import triton
import triton.language as tl

from ..declarations.family import (
    ODD_LENGTHS,
    TINY_ELEMENTS,
    Family,
    LaunchCase,
    Launcher,
    bare_launch,
    describe_inputs,
    tiny_randn,
)
from ..declarations.spec import BenchmarkSpec
from ..triton_helpers.checks import (
    check_no_grad,
    check_no_partial_overlap,
    check_same_layout,
    check_tensor,
    needs_grad,
)
from ..triton_helpers.direct_launch import launch
from ..triton_helpers.launch import cdiv

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

# Elements handled by one program; a power of two, as tl.arange needs. On an H200, tiles
# of 1024 to 8192 elements with 4 to 16 warps all ran within noise of each other at
# 2**24 elements and more, so the smallest tile with Triton's default 4 warps stays.
BLOCK_SIZE = 1024


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # Each program instance owns one tile of BLOCK_SIZE consecutive elements.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    # The last tile may run past the end of the vectors: the mask keeps it in bounds.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    # Add in float32 and round once on the way out: the same result as a native half
    # add, and Triton's CPU interpreter mis-adds bfloat16 values natively.
    total = x.to(tl.float32) + y.to(tl.float32)
    tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def add_tail_apart_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # add_kernel with the mask only where a tile runs past the end. When the length is
    # not a multiple of 16, Triton cannot tell that the mask is the same for the
    # neighbours one vector instruction would load, and add_kernel loads one element
    # at a time (the constexpr lesson counts the loads in its compiled code). Here
    # every full tile is loaded without a mask, in vectors; only the last program, when
    # the length leaves it a partial tile, takes the masked branch. Offsets are 64-bit,
    # so that the test cannot wrap around for lengths near 2**31.
    start = tl.program_id(axis=0).to(tl.int64) * BLOCK_SIZE
    offsets = start + tl.arange(0, BLOCK_SIZE)
    if start + BLOCK_SIZE <= n_elements:
        x = tl.load(x_ptr + offsets)
        y = tl.load(y_ptr + offsets)
        total = x.to(tl.float32) + y.to(tl.float32)
        tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty))
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        total = x.to(tl.float32) + y.to(tl.float32)
        tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), mask=mask)


class AddFunction(torch.autograd.Function):
    """Autograd wiring: the gradient of ``x + y`` is the output's gradient, for both."""

    @staticmethod
    def forward(ctx, x, y):
        # Autograd runs this with grad mode off: add launches the kernel.
        return add(x, y)

    @staticmethod
    def backward(ctx, grad):
        want_dx, want_dy = ctx.needs_input_grad
        return grad if want_dx else None, grad if want_dy else None


def add(
    x: torch.Tensor, y: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """Return ``x + y`` computed by :func:`add_tail_apart_kernel`, differentiable in
    ``x`` and ``y``.

    ``x`` and ``y`` must be contiguous tensors of one shape and one float dtype
    (float16, bfloat16 or float32) on the device Triton runs on. ``out``, if given,
    receives the result and must match them; it may be ``x`` or ``y`` itself but must
    not overlap them otherwise, and, as in PyTorch, it records no gradient."""
    check_tensor("x", x, SUPPORTED_DTYPES)
    check_tensor("y", y, SUPPORTED_DTYPES)
    check_same_layout(("x", "y"), x, y)
    if out is None:
        if needs_grad(x, y):
            return AddFunction.apply(x, y)
        out = torch.empty_like(x)
    else:
        check_out(out, x, y)
    n_elements = x.numel()
    if n_elements == 0:
        return out
    # One program per tile; cdiv rounds up so the tail tile is launched too.
    grid = (cdiv(n_elements, BLOCK_SIZE),)
    launch(add_tail_apart_kernel, grid, x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
    # A kernel's store is invisible to autograd: count it as PyTorch counts an in-place
    # write, so that a graph which saved ``out`` (as x, say) for its backward refuses to
    # use the changed values instead of computing a wrong gradient.
    torch.autograd.graph.increment_version(out)
    return out


def check_out(out: object, x: torch.Tensor, y: torch.Tensor) -> None:
    """Check the ``out`` of :func:`add`: like ``x``, no partial overlap with ``x`` or
    ``y``, and no gradient wanted."""
    check_tensor("out", out, SUPPORTED_DTYPES)
    check_same_layout(("x", "out"), x, out)
    check_no_partial_overlap(("out", "x"), out, x)
    check_no_partial_overlap(("out", "y"), out, y)
    for name, tensor in (("x", x), ("y", y), ("out", out)):
        check_no_grad(
            name, tensor, "add with out= records no gradient (nor does PyTorch's)"
        )


def torch_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The PyTorch reference: eager ``x + y``."""
    return x + y


def make_inputs(
    n_elements: int,
    dtype: torch.dtype,
    device: torch.device,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two random vectors of ``n_elements`` values (random, never zeros, which hide bugs)."""
    x = torch.randn(n_elements, dtype=dtype, device=device, generator=generator)
    y = torch.randn(n_elements, dtype=dtype, device=device, generator=generator)
    return x, y


def bytes_moved(n_elements: int, dtype: torch.dtype) -> int:
    """The fewest bytes one call moves: read x and y once, write out once."""
    return 3 * n_elements * dtype.itemsize


# Every other power of two, and two odd lengths: no tile size divides those.
SIZES = (
    2**12,
    2**14,
    2**16,
    2**18,
    2**20,
    3_000_001,
    2**22,
    2**24,
    2**26,
    100_000_001,
    2**28,
)

BENCHMARK = BenchmarkSpec(
    name="vector_add",
    metric="GB/s",
    x_name="N",
    dtype=torch.float32,
    gpu_sizes=SIZES,
    interpreter_sizes=(1, 1000, 4097),
    make_inputs=make_inputs,
    triton=add,
    torch_eager=torch_add,
    work=bytes_moved,
)

FP16_BENCHMARK = dataclasses.replace(
    BENCHMARK,
    name="vector_add_fp16",
    dtype=torch.float16,
    gpu_sizes=(3_000_001, 2**24, 100_000_001, 2**28),
    interpreter_sizes=(4097,),
)


def launch_cost_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.vector_add.add` against ``x + y``."""
    x, y = tiny_randn(
        (TINY_ELEMENTS,), (TINY_ELEMENTS,), dtype=torch.float32, device=device
    )
    out = torch.empty_like(x)
    grid = (triton.cdiv(TINY_ELEMENTS, BLOCK_SIZE),)
    bare = bare_launch(
        add_tail_apart_kernel,
        grid,
        x,
        y,
        out,
        TINY_ELEMENTS,
        BLOCK_SIZE=BLOCK_SIZE,
    )
    return LaunchCase(
        inputs=describe_inputs(x=x, y=y),
        triton=lambda: add(x, y),
        bare=bare,
        torch=lambda: x + y,
        bare_out=out,
    )


FAMILY = Family(
    launchers=(
        Launcher(
            add,
            lambda device: tiny_randn((10,), (10,), dtype=torch.float32, device=device),
            (0, 1),
            derivatives=2,
        ),
    ),
    launch_costs={"add": launch_cost_case},
    model_shapes={"vector_add": ODD_LENGTHS, "vector_add_fp16": ODD_LENGTHS},
)

"""Fused softmax over the last dimension: one read of the input, one write of the output.

``softmax(x)_i = exp(x_i - max(x)) / sum_j exp(x_j - max(x))``. PyTorch's eager
composition of the formula makes a pass over memory for each step (max, subtract and
exponentiate, sum, divide); the fused kernel keeps a whole row in registers and touches
memory twice: it reads the row once and writes the result once.

The backward pass, ``dx = y * (dy - sum(y * dy))`` per row, needs the output ``y``,
which the forward pass keeps, and the output's gradient ``dy``: its kernel reads both
from memory once (a second read, for ``dx``, comes from L2) and writes ``dx`` once.
"""

import dataclasses
import functools

import torch
import triton
import triton.language as tl

from ..declarations.family import (
    TINY_COLS,
    TINY_ROWS,
    VOCABULARIES,
    Family,
    LaunchCase,
    Launcher,
    bare_launch,
    describe_inputs,
    tiny_randn,
)
from ..declarations.spec import BenchmarkSpec
from ..triton_helpers.aligned_rows import align_for, row_parts
from ..triton_helpers.checks import check_rows, needs_grad
from ..triton_helpers.direct_launch import launch
from ..triton_helpers.first_order import first_order_only
from ..triton_helpers.launch import (
    ROW_DTYPES,
    accumulator,
    as_rows,
    benchmark_rows,
    cdiv,
    resident_programs,
    row_block,
    warps_for,
)
from ..triton_helpers.online_softmax import (
    online_max_and_sum,
    online_max_and_sum_unaligned,
)

# Rows up to this length are held whole in registers (a 32K-value row is 128 KiB as
# float32, half a multiprocessor's register file); longer rows take the two-pass kernel
# below. Its tile and warps come from sweeps on an H200 at 64K values.
MAX_FUSED_COLS = 32768
LOOP_BLOCK = 16384
LOOP_WARPS = 16
# Rows of this many values and more (up to MAX_FUSED_COLS) take the kernel that loads
# the next row while it reduces the current one, with one program per multiprocessor.
PREFETCH_FROM = 32768
PREFETCH_WARPS = 32
# Values each thread of the one-row kernel holds: 64 did better than 32 on an H200 at
# 8K and 16K values (89% of the copy ceiling at 16K with 8 warps, 87% with 16).
VALUES_PER_THREAD = 64


@triton.jit
def _row_softmax(x):
    # Subtracting the maximum keeps exp() from overflowing; the result is unchanged.
    numerator = tl.exp(x - tl.max(x, axis=0))
    # One division per row; a division per element costs more than the memory.
    return numerator * (1.0 / tl.sum(numerator, axis=0))


@triton.jit
def softmax_kernel(
    x_ptr,
    out_ptr,
    n_cols,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    EVEN: tl.constexpr,
):
    # One program per row; the row fits in one tile of BLOCK_SIZE >= n_cols values.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    # EVEN: the row fills the tile, so the mask is the constant True and compiles away,
    # and with it the registers that masked loads and stores need.
    mask = (cols < n_cols) | EVEN
    # Padding lanes read -inf, so they neither win the max nor add to the sum.
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(ACC)
    y = _row_softmax(x)
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_prefetch_kernel(
    x_ptr,
    out_ptr,
    n_rows,
    n_cols,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    EVEN: tl.constexpr,
):
    # A fixed number of programs, each taking every num_programs-th row. The next row's
    # load is issued before the current row is reduced: a load does not wait for its
    # data until the data is used, so memory keeps working through the reductions and
    # the store, which in the one-row kernel it does not.
    cols = tl.arange(0, BLOCK_SIZE)
    mask = (cols < n_cols) | EVEN
    step = tl.num_programs(0)
    first = tl.program_id(0)
    upcoming = tl.load(
        x_ptr + first.to(tl.int64) * n_cols + cols, mask=mask, other=-float("inf")
    )
    for row in tl.range(first, n_rows, step):
        x = upcoming.to(ACC)
        # After the last row, the last row is loaded again and never used, so that the
        # load needs no row mask.
        following = tl.minimum(row + step, n_rows - 1).to(tl.int64)
        upcoming = tl.load(
            x_ptr + following * n_cols + cols, mask=mask, other=-float("inf")
        )
        y = _row_softmax(x).to(out_ptr.dtype.element_ty)
        tl.store(out_ptr + tl.cast(row, tl.int64) * n_cols + cols, y, mask=mask)


@triton.jit
def _softmax_part(
    x_ptr, out_ptr, base, offsets, mask, row_max, inverse_sum, ACC: tl.constexpr
):
    # The second pass over the values at base + offsets: read again (from L2, which the
    # first pass asked to keep them), exponentiate, scale, write.
    x = tl.load(
        x_ptr + base + offsets,
        mask=mask,
        other=-float("inf"),
        eviction_policy="evict_first",
    ).to(ACC)
    y = tl.exp(x - row_max) * inverse_sum
    tl.store(out_ptr + base + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_looped_kernel(
    x_ptr,
    out_ptr,
    n_cols,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    EVEN: tl.constexpr,
    ALIGN: tl.constexpr,
):
    # For rows too long for registers: a first pass finds the maximum and the sum of
    # exponentials together (the online recurrence); a second pass reads the row again
    # and writes. The second read should come from the L2 cache, not from memory: the
    # first pass marks the row's lines "evict last", so that the stream of other rows
    # does not push them out, and the second pass marks them "evict first", since
    # they are done with. On an H200 at 64K values the hints took the kernel from 69%
    # to 81% of the copy ceiling. EVEN: the row is a whole number of tiles. ALIGN > 1:
    # rows do not all start on a 16-byte boundary (50,257 values), and both passes walk
    # them in three parts so that most loads are vectors
    # (kernels/triton_helpers/aligned_rows.py).
    row = tl.program_id(0).to(tl.int64)
    row_offset = row * n_cols
    cols = tl.arange(0, BLOCK_SIZE)
    if ALIGN > 1:
        row_max, row_sum = online_max_and_sum_unaligned(
            x_ptr, row_offset, n_cols, ACC, BLOCK_SIZE, ALIGN, "evict_last"
        )
        inverse_sum = 1.0 / row_sum
        head, body_start, body_len, tail_len = row_parts(row_offset, n_cols, ALIGN)
        edge = tl.arange(0, ALIGN)
        _softmax_part(
            x_ptr, out_ptr, row_offset, edge, edge < head, row_max, inverse_sum, ACC
        )
        for start in range(0, body_len, BLOCK_SIZE):
            body_mask = start + cols < body_len
            _softmax_part(
                x_ptr,
                out_ptr,
                body_start + start,
                cols,
                body_mask,
                row_max,
                inverse_sum,
                ACC,
            )
        _softmax_part(
            x_ptr,
            out_ptr,
            body_start + body_len,
            edge,
            edge < tail_len,
            row_max,
            inverse_sum,
            ACC,
        )
    else:
        row_max, row_sum = online_max_and_sum(
            x_ptr + row_offset, n_cols, ACC, BLOCK_SIZE, 1, "evict_last", EVEN
        )
        inverse_sum = 1.0 / row_sum
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = (start + cols < n_cols) | EVEN
            _softmax_part(
                x_ptr,
                out_ptr,
                row_offset + start,
                cols,
                mask,
                row_max,
                inverse_sum,
                ACC,
            )


@functools.cache
def forward_launch(
    n_rows: int, n_cols: int, dtype: torch.dtype, device: torch.device
) -> tuple[str, tuple[int], dict[str, object]]:
    """Which forward kernel :func:`softmax` launches for ``n_rows`` rows of ``n_cols``
    values of ``dtype`` on ``device`` (``"row"``, ``"prefetch"`` or ``"looped"``), its
    grid and compile-time arguments: worked out once per shape, since a launcher's
    Python is paid at every call."""
    acc = accumulator(dtype)
    if n_cols > MAX_FUSED_COLS:
        options = {
            "ACC": acc,
            "BLOCK_SIZE": LOOP_BLOCK,
            "EVEN": n_cols % LOOP_BLOCK == 0,
            "ALIGN": align_for(dtype, n_cols),
            "num_warps": LOOP_WARPS,
        }
        return "looped", (n_rows,), options
    block = row_block(n_cols)
    options = {"ACC": acc, "BLOCK_SIZE": block, "EVEN": block == n_cols}
    if block >= PREFETCH_FROM:
        programs = resident_programs(n_rows, PREFETCH_WARPS, device)
        return "prefetch", (programs,), {**options, "num_warps": PREFETCH_WARPS}
    return (
        "row",
        (n_rows,),
        {**options, "num_warps": warps_for(block, VALUES_PER_THREAD)},
    )


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax of ``x`` over its last dimension, by :func:`softmax_kernel` (or, for rows
    of over 16K values, :func:`softmax_prefetch_kernel` and
    :func:`softmax_looped_kernel`).

    ``x``: a contiguous float tensor (float16, bfloat16, float32 or float64) on the
    device Triton runs on, with a non-empty last dimension. Differentiable: the gradient
    comes from :func:`softmax_backward_kernel`."""
    check_rows("x", x, ROW_DTYPES)
    if needs_grad(x):
        return SoftmaxFunction.apply(x)
    # x is contiguous, so its rows follow one another in memory: the kernels need only
    # the row length, and out, laid out as x, takes the same offsets.
    out = torch.empty_like(x)
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    if n_rows == 0:
        return out
    kind, grid, options = forward_launch(n_rows, n_cols, x.dtype, x.device)
    if kind == "row":
        launch(softmax_kernel, grid, x, out, n_cols, **options)
    elif kind == "prefetch":
        # Fewer programs than rows: each needs to know where the rows end.
        launch(softmax_prefetch_kernel, grid, x, out, n_rows, n_cols, **options)
    else:
        launch(softmax_looped_kernel, grid, x, out, n_cols, **options)
    return out


# The backward kernel holds two rows, y and dy: rows up to BACKWARD_MAX_FUSED_COLS
# stay whole in registers, about BACKWARD_VALUES_PER_THREAD values of each per thread
# and at most BACKWARD_MOST_WARPS warps; longer rows are walked in tiles of
# BACKWARD_LOOP_BLOCK values. A row that leaves part of its tile masked is fused only up
# to BACKWARD_MAX_MASKED_COLS. Measured on an H100 (scratch knobs, kernel time): 65536-
# value rows ran 1.14x the best baseline in one tile of 32 warps, 1.01x with 16 warps and
# 0.76x walked in tiles; 50257-value rows in a masked 65536 tile ran 0.56x, walked in
# tiles 1.36x. Rows of 1024-32768 values ran within 2% with 8, 16 or 32 values a thread
# (4096: 0.93x with 32).
BACKWARD_MAX_FUSED_COLS = 65536
BACKWARD_MAX_MASKED_COLS = 32768
BACKWARD_VALUES_PER_THREAD = 16
BACKWARD_MOST_WARPS = 32
# The one-tile kernel reads each row twice, the second time from cache, rather than
# holding it through the sum (see softmax_backward_kernel).
BACKWARD_RELOAD = True
# Short rows share a program: it takes rows until it holds about BACKWARD_TILE values.
# On an H100, 1024-value rows ran the same one or two to a program and slower four or
# eight to a program; the sharing is for rows shorter than that.
BACKWARD_TILE = 1024
BACKWARD_LOOP_BLOCK = 8192
BACKWARD_LOOP_WARPS = 16


@triton.jit
def softmax_backward_kernel(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    ROWS: tl.constexpr,
    EVEN: tl.constexpr,
    RELOAD: tl.constexpr,
):
    # ROWS rows per program: dx = y * (dy - sum(y * dy)) for each. EVEN: the rows fill
    # the tile and the programs, so no lane is masked.
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, BLOCK_SIZE)[None, :]
    mask = ((cols < n_cols) & (rows < n_rows)) | EVEN
    offsets = rows * n_cols + cols
    if RELOAD:
        # The rows are read twice: for the sum, then again for dx, from the cache the
        # first read asked to keep them in. Holding y and dy through the sum is what the
        # other path pays in registers: for sm_90, 16384-value rows in 16 warps take 48
        # registers a thread this way and 82 the other (two programs per multiprocessor
        # instead of one), and 32768-value rows no longer spill.
        dot = tl.sum(_products(y_ptr, dy_ptr, 0, offsets, mask, ACC), axis=1)
        _dx_part(y_ptr, dy_ptr, dx_ptr, 0, offsets, mask, dot[:, None], ACC)
    else:
        # Padding lanes read zeros, which add nothing to the sum.
        y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(ACC)
        dy = tl.load(dy_ptr + offsets, mask=mask, other=0.0).to(ACC)
        dx = y * (dy - tl.sum(y * dy, axis=1)[:, None])
        tl.store(dx_ptr + offsets, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _products(y_ptr, dy_ptr, base, offsets, mask, ACC: tl.constexpr):
    # The first pass over the values at base + offsets: y * dy, lane by lane, with the
    # values asked to stay in L2 for the second pass.
    y = tl.load(
        y_ptr + base + offsets, mask=mask, other=0.0, eviction_policy="evict_last"
    )
    dy = tl.load(
        dy_ptr + base + offsets, mask=mask, other=0.0, eviction_policy="evict_last"
    )
    return y.to(ACC) * dy.to(ACC)


@triton.jit
def _dx_part(y_ptr, dy_ptr, dx_ptr, base, offsets, mask, dot, ACC: tl.constexpr):
    # The second pass over the values at base + offsets: dx = y * (dy - dot).
    y = tl.load(y_ptr + base + offsets, mask=mask, eviction_policy="evict_first").to(
        ACC
    )
    dy = tl.load(dy_ptr + base + offsets, mask=mask, eviction_policy="evict_first").to(
        ACC
    )
    tl.store(
        dx_ptr + base + offsets, (y * (dy - dot)).to(dx_ptr.dtype.element_ty), mask=mask
    )


@triton.jit
def softmax_backward_looped_kernel(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_cols,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    EVEN: tl.constexpr,
    ALIGN: tl.constexpr,
):
    # Rows too long for registers, in two passes over tiles: the sum of y * dy, then dx.
    # The eviction hints ask L2 to keep the row for the second pass, as in the forward
    # kernel for long rows. EVEN: the row is a whole number of tiles. ALIGN > 1: rows
    # do not all start on a 16-byte boundary, and are walked in three parts
    # (kernels/triton_helpers/aligned_rows.py), as the forward kernel does.
    row = tl.program_id(0).to(tl.int64)
    row_offset = row * n_cols
    cols = tl.arange(0, BLOCK_SIZE)
    # Products are summed lane by lane over the tiles and across lanes once at the end:
    # one reduction per row, not one per tile.
    partial = tl.zeros((BLOCK_SIZE,), ACC)
    if ALIGN > 1:
        head, body_start, body_len, tail_len = row_parts(row_offset, n_cols, ALIGN)
        edge = tl.arange(0, ALIGN)
        for start in range(0, body_len, BLOCK_SIZE):
            body_mask = start + cols < body_len
            partial += _products(
                y_ptr, dy_ptr, body_start + start, cols, body_mask, ACC
            )
        edges = _products(
            y_ptr, dy_ptr, row_offset, edge, edge < head, ACC
        ) + _products(y_ptr, dy_ptr, body_start + body_len, edge, edge < tail_len, ACC)
        dot = tl.sum(partial, axis=0) + tl.sum(edges, axis=0)
        _dx_part(y_ptr, dy_ptr, dx_ptr, row_offset, edge, edge < head, dot, ACC)
        for start in range(0, body_len, BLOCK_SIZE):
            body_mask = start + cols < body_len
            _dx_part(
                y_ptr, dy_ptr, dx_ptr, body_start + start, cols, body_mask, dot, ACC
            )
        _dx_part(
            y_ptr,
            dy_ptr,
            dx_ptr,
            body_start + body_len,
            edge,
            edge < tail_len,
            dot,
            ACC,
        )
    else:
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = (start + cols < n_cols) | EVEN
            partial += _products(y_ptr, dy_ptr, row_offset + start, cols, mask, ACC)
        dot = tl.sum(partial, axis=0)
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = (start + cols < n_cols) | EVEN
            _dx_part(y_ptr, dy_ptr, dx_ptr, row_offset + start, cols, mask, dot, ACC)


def backward_fits_one_tile(n_cols: int) -> bool:
    """Whether the backward pass holds rows of ``n_cols`` values in one tile (else loops)."""
    fills_tile = row_block(n_cols) == n_cols
    return n_cols <= (
        BACKWARD_MAX_FUSED_COLS if fills_tile else BACKWARD_MAX_MASKED_COLS
    )


def _backward(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """The gradient of softmax's input from its output ``y`` and the output's gradient."""
    rows, grad_rows = as_rows(y), as_rows(dy)
    dx = torch.empty_like(rows)
    n_rows, n_cols = rows.shape
    if n_rows == 0:
        return dx.view_as(y)
    acc = accumulator(y.dtype)
    if not backward_fits_one_tile(n_cols):
        launch(
            softmax_backward_looped_kernel,
            (n_rows,),
            rows,
            grad_rows,
            dx,
            n_cols,
            ACC=acc,
            BLOCK_SIZE=BACKWARD_LOOP_BLOCK,
            EVEN=n_cols % BACKWARD_LOOP_BLOCK == 0,
            ALIGN=align_for(y.dtype, n_cols),
            num_warps=BACKWARD_LOOP_WARPS,
        )
    else:
        block = row_block(n_cols)
        rows_per_program = max(1, BACKWARD_TILE // block)
        launch(
            softmax_backward_kernel,
            (cdiv(n_rows, rows_per_program),),
            rows,
            grad_rows,
            dx,
            n_rows,
            n_cols,
            ACC=acc,
            BLOCK_SIZE=block,
            ROWS=rows_per_program,
            EVEN=block == n_cols and n_rows % rows_per_program == 0,
            RELOAD=BACKWARD_RELOAD,
            num_warps=warps_for(
                rows_per_program * block,
                per_thread=BACKWARD_VALUES_PER_THREAD,
                most=BACKWARD_MOST_WARPS,
            ),
        )
    return dx.view_as(y)


class SoftmaxFunction(torch.autograd.Function):
    """Autograd wiring: the forward keeps its output, all the backward needs."""

    @staticmethod
    def forward(ctx, x):
        # Autograd runs this with grad mode off: softmax launches the forward kernel.
        y = softmax(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    @first_order_only("softmax")
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return _backward(y, dy.contiguous())


def torch_softmax(x: torch.Tensor) -> torch.Tensor:
    """PyTorch's softmax over the last dimension (one library kernel in eager mode)."""
    return torch.softmax(x, dim=-1)


def naive_softmax(x: torch.Tensor) -> torch.Tensor:
    """The formula written out in PyTorch, one operation (and one pass over memory) per
    step."""
    shifted = x - x.max(dim=-1, keepdim=True).values
    numerator = torch.exp(shifted)
    return numerator / numerator.sum(dim=-1, keepdim=True)


ROWS = 4096


def make_inputs(
    n_cols: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor]:
    """A (ROWS, n_cols) matrix of random logits (fewer rows in the interpreter)."""
    rows = benchmark_rows(device, ROWS)
    return (torch.randn(rows, n_cols, dtype=dtype, device=device, generator=generator),)


def bytes_moved(n_cols: int, dtype: torch.dtype) -> int:
    """Read the matrix once and write it once."""
    return 2 * ROWS * n_cols * dtype.itemsize


def make_backward_inputs(
    n_cols: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """The forward input, and a random gradient of the output."""
    (x,) = make_inputs(n_cols, dtype, device, generator)
    return x, torch.randn(x.shape, dtype=dtype, device=device, generator=generator)


def backward_bytes(n_cols: int, dtype: torch.dtype) -> int:
    """Read the output and its gradient once, write the input's gradient once."""
    return 3 * ROWS * n_cols * dtype.itemsize


# Powers of two, the vocabularies of GPT-2 (50257), LLaMA 2 (32000), LLaMA 3 (128256)
# and Qwen 2 (151936), and rows as long as 2**18 values.
SIZES = (256, 1024, 4096, 16384, 32000, 32768, 50257, 65536, 128256, 151936, 262144)

BENCHMARK = BenchmarkSpec(
    name="softmax",
    metric="GB/s",
    x_name="N",
    dtype=torch.bfloat16,
    gpu_sizes=SIZES,
    interpreter_sizes=(1, 781, 2048),
    make_inputs=make_inputs,
    triton=softmax,
    torch_eager=torch_softmax,
    work=bytes_moved,
    details={"rows": ROWS},
    peer_baselines={"Liger": "softmax"},
)

BACKWARD_BENCHMARK = dataclasses.replace(
    BENCHMARK,
    name="softmax_backward",
    gpu_sizes=(1024, 4096, 16384, 32768, 50257, 65536, 151936, 262144),
    make_inputs=make_backward_inputs,
    work=backward_bytes,
    grad_inputs=(0,),
)

FP16_BENCHMARK = dataclasses.replace(
    BENCHMARK,
    name="softmax_fp16",
    dtype=torch.float16,
    gpu_sizes=(4096, 32000, 50257, 151936),
    interpreter_sizes=(781,),
)


def launch_cost_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.softmax.softmax` against ``torch.softmax``; rows this short take
    the launcher's one-row kernel."""
    (x,) = tiny_randn((TINY_ROWS, TINY_COLS), dtype=torch.float32, device=device)
    out = torch.empty_like(x)
    kind, grid, options = forward_launch(TINY_ROWS, TINY_COLS, x.dtype, device)
    assert kind == "row", kind
    bare = bare_launch(softmax_kernel, grid, x, out, TINY_COLS, **options)
    return LaunchCase(
        inputs=describe_inputs(x=x),
        triton=lambda: softmax(x),
        bare=bare,
        torch=lambda: torch.softmax(x, dim=-1),
        bare_out=out,
    )


FAMILY = Family(
    launchers=(
        Launcher(
            softmax,
            lambda device: tiny_randn((3, 7), dtype=torch.float32, device=device),
            (0,),
        ),
    ),
    launch_costs={"softmax": launch_cost_case},
    model_shapes={
        "softmax": VOCABULARIES | {262144},
        "softmax_backward": frozenset({50257, 151936, 262144}),
        "softmax_fp16": frozenset({32000, 50257, 151936}),
    },
)

"""LayerNorm, forward and backward, wired into autograd.

``y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias`` over the last dimension.
The forward kernel reads each row once, writes it once and, when a backward pass will
follow, keeps two numbers per row (the mean and the inverse standard deviation) for it. The backward
kernel reads ``x`` and ``dy`` once, writes ``dx``, and sums the weight and bias
gradients over rows in registers: each program keeps a partial sum over the rows it
handles, and a second, small kernel (:mod:`kernels.triton_helpers.column_sums`) adds up the partial
sums. For rows longer than
FUSED_BACKWARD_MAX_COLS those partial sums no longer fit in registers beside the row;
there one kernel writes ``dx`` and another reads ``x`` and ``dy`` a second time, in
column strips, for the weight and bias gradients.
"""

import dataclasses
import functools

import torch
import triton
import triton.language as tl

from ..declarations.family import (
    HIDDEN_SIZES,
    TINY_COLS,
    TINY_ROWS,
    Family,
    LaunchCase,
    Launcher,
    bare_launch,
    describe_inputs,
    tiny_randn,
)
from ..declarations.spec import BenchmarkSpec
from ..triton_helpers.checks import check_normalisation, needs_grad
from ..triton_helpers.column_sums import column_sums
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
    stats_dtype,
    unused_stats,
    warps_for,
)
from ..triton_helpers.row_scale import overflowed, rewrite_rows, safe_scale
from ..triton_helpers.row_tiles import row_tile

# Rows are held whole in registers, with several row-sized values at once in the
# backward pass; past this length they would spill.
MAX_COLS = 16384


@triton.jit
def layer_norm_forward_kernel(
    x_ptr,
    weight_ptr,
    bias_ptr,
    out_ptr,
    mean_ptr,
    rstd_ptr,
    n_rows,
    n_cols,
    eps,
    STATS,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    ROWS: tl.constexpr,
    EVEN: tl.constexpr,
):
    # ROWS rows per program, one per line of a (ROWS, BLOCK_SIZE) tile: a short row
    # (768 values are 1.5 KiB in bfloat16) is too little work for a program, whose
    # reductions wait on each other's warps; several rows share those waits and one
    # load of the weight and bias.
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    row_mask = rows < n_rows
    # EVEN: the row fills the tile, so the column mask is the constant True and compiles
    # away (the row mask is the same along a row: it does not stop vector loads).
    col_mask = (cols < n_cols) | EVEN
    mask = row_mask[:, None] & col_mask[None, :]
    offsets = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC)
    mean = tl.sum(x, axis=1) / n_cols
    # Padding lanes must not add (0 - mean)**2 to the variance.
    centred = tl.where(mask, x - mean[:, None], 0.0)
    sum_squares = tl.sum(centred * centred, axis=1)
    rstd = 1.0 / tl.sqrt(sum_squares / n_cols + eps)
    weight = tl.load(weight_ptr + cols, mask=col_mask).to(ACC)
    bias = tl.load(bias_ptr + cols, mask=col_mask).to(ACC)
    y = centred * rstd[:, None] * weight[None, :] + bias[None, :]
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)
    # Two numbers per row are all the backward pass needs besides x. STATS: there will
    # be a backward pass (without one, nothing is stored and nothing allocated for
    # them). A plain bool, tested as the kernel runs, not a tl.constexpr: one binary
    # serves both calls, so a result does not depend on whether a gradient is to be
    # recorded (two binaries may fuse other multiplies and adds, and round differently).
    if STATS:
        tl.store(mean_ptr + rows, mean, mask=row_mask)
        tl.store(rstd_ptr + rows, rstd, mask=row_mask)
    # Deviations beyond about 1.8e19 overflow their squares (and values beyond about
    # 1e34 the sum for the mean), not the output: such rows are written again, after
    # the barrier that orders the two stores (kernels/triton_helpers/row_scale.py).
    rewrite = row_mask & overflowed(sum_squares)
    if tl.max(rewrite.to(tl.int32), axis=0) > 0:
        tl.debug_barrier()
        chunk: tl.constexpr = 64 if BLOCK_SIZE > 64 else BLOCK_SIZE
        mean, rstd = rewrite_rows(
            x_ptr,
            weight_ptr,
            bias_ptr,
            out_ptr,
            rows,
            rewrite,
            n_cols,
            eps,
            True,
            ACC,
            chunk,
        )
        if STATS:
            tl.store(mean_ptr + rows, mean, mask=rewrite)
            tl.store(rstd_ptr + rows, rstd, mask=rewrite)


@triton.jit
def layer_norm_forward_chunked_kernel(
    x_ptr,
    weight_ptr,
    bias_ptr,
    out_ptr,
    mean_ptr,
    rstd_ptr,
    n_cols,
    eps,
    STATS,
    ACC: tl.constexpr,
    CHUNK: tl.constexpr,
):
    # For rows whose length is not a power of two but a multiple of CHUNK (5120, 7168):
    # the one-tile kernel would pad them to the next power of two (8192), holding
    # registers for lanes that carry nothing. Here one program walks its row in
    # CHUNK-value tiles, twice, as the long-row softmax does: the first pass reads the
    # row from memory (asking L2 to keep it) and keeps, per lane, a running mean and sum
    # of squared deviations (Welford's update, which does not cancel as a sum of squares
    # does for values far from zero); the second reads the row again, from L2, and
    # writes the output.
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    cols = tl.arange(0, CHUNK)
    lane_mean = tl.zeros((CHUNK,), ACC)
    lane_m2 = tl.zeros((CHUNK,), ACC)
    steps = n_cols // CHUNK
    for step in range(0, steps):
        x = tl.load(
            x_ptr + base + step * CHUNK + cols, eviction_policy="evict_last"
        ).to(ACC)
        delta = x - lane_mean
        lane_mean += delta / (step + 1)
        lane_m2 += delta * (x - lane_mean)
    # Every lane saw the same number of values: the row's mean is the lanes' mean, and
    # its sum of squared deviations adds the spread of the lanes' means (Chan et al.).
    mean = tl.sum(lane_mean, axis=0) / CHUNK
    spread = lane_mean - mean
    m2 = tl.sum(lane_m2, axis=0) + steps * tl.sum(spread * spread, axis=0)
    rstd = 1.0 / tl.sqrt(m2 / n_cols + eps)
    if overflowed(m2):
        # As in the one-tile kernel: the row's largest magnitude, then the same
        # statistics of the row divided by it.
        largest = tl.zeros((CHUNK,), ACC)
        for step in range(0, steps):
            x = tl.load(x_ptr + base + step * CHUNK + cols).to(ACC)
            largest = tl.maximum(largest, tl.abs(x))
        scale = safe_scale(tl.max(largest, axis=0))
        lane_mean = tl.zeros((CHUNK,), ACC)
        lane_m2 = tl.zeros((CHUNK,), ACC)
        for step in range(0, steps):
            x = tl.load(x_ptr + base + step * CHUNK + cols).to(ACC) / scale
            delta = x - lane_mean
            lane_mean += delta / (step + 1)
            lane_m2 += delta * (x - lane_mean)
        scaled_mean = tl.sum(lane_mean, axis=0) / CHUNK
        spread = lane_mean - scaled_mean
        m2 = tl.sum(lane_m2, axis=0) + steps * tl.sum(spread * spread, axis=0)
        mean = scaled_mean * scale
        rstd = 1.0 / (tl.sqrt(m2 / n_cols + eps / (scale * scale)) * scale)
    for step in range(0, steps):
        offsets = step * CHUNK + cols
        x = tl.load(x_ptr + base + offsets, eviction_policy="evict_first").to(ACC)
        weight = tl.load(weight_ptr + offsets).to(ACC)
        bias = tl.load(bias_ptr + offsets).to(ACC)
        y = (x - mean) * rstd * weight + bias
        tl.store(out_ptr + base + offsets, y.to(out_ptr.dtype.element_ty))
    if STATS:
        tl.store(mean_ptr + row, mean)
        tl.store(rstd_ptr + row, rstd)


@triton.jit
def _input_gradient(x_hat, weighted_dy, rstd, n_cols, AXIS: tl.constexpr):
    """dx = rstd * (w*dy - mean(w*dy) - x_hat * mean(w*dy * x_hat)), the means taken
    along AXIS, the row; ``rstd`` broadcasts against the tile."""
    c_hat = tl.sum(x_hat * weighted_dy, axis=AXIS, keep_dims=True) / n_cols
    c_dy = tl.sum(weighted_dy, axis=AXIS, keep_dims=True) / n_cols
    return (weighted_dy - (x_hat * c_hat + c_dy)) * rstd


@triton.jit
def _backward_tile(
    x, dy, weight, mean, rstd, n_cols, dx_ptr, offsets, mask, dweight, dbias
):
    # dx of one tile of rows, stored, and the tile's shares of dweight and dbias added.
    x_hat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
    dx = _input_gradient(x_hat, dy * weight[None, :], rstd[:, None], n_cols, 1)
    tl.store(dx_ptr + offsets, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    return dweight + dy * x_hat, dbias + dy


@triton.jit
def layer_norm_backward_kernel(
    dy_ptr,
    x_ptr,
    weight_ptr,
    mean_ptr,
    rstd_ptr,
    dx_ptr,
    partial_dw_ptr,
    partial_db_ptr,
    n_rows,
    n_cols,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    ROWS_PER_TILE: tl.constexpr,
    PREFETCH: tl.constexpr,
):
    # A fixed number of programs, each striding over tiles of ROWS_PER_TILE rows, so
    # that each keeps one partial sum of dweight and dbias in registers instead of
    # writing one per row. Short rows are taken several at a time to keep loads wide.
    # PREFETCH: load the next tile before working on this one, so that memory keeps
    # working through the reductions and the store (as softmax_prefetch_kernel does).
    program = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    col_mask = cols < n_cols
    tile_rows = tl.arange(0, ROWS_PER_TILE)
    weight = tl.load(weight_ptr + cols, mask=col_mask, other=0.0).to(ACC)
    dweight = tl.zeros((ROWS_PER_TILE, BLOCK_SIZE), ACC)
    dbias = tl.zeros((ROWS_PER_TILE, BLOCK_SIZE), ACC)
    step = tl.num_programs(0) * ROWS_PER_TILE
    first = program * ROWS_PER_TILE
    if PREFETCH:
        rows, row_mask, mask, offsets = row_tile(
            first, tile_rows, cols, col_mask, n_rows, n_cols
        )
        x_next = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        dy_next = tl.load(dy_ptr + offsets, mask=mask, other=0.0)
        for first_row in range(first, n_rows, step):
            x, dy = x_next.to(ACC), dy_next.to(ACC)
            mean = tl.load(mean_ptr + rows, mask=row_mask, other=0.0)
            rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0.0)
            here, here_mask = offsets, mask
            # Past the last tile the mask is all False: nothing is read.
            rows, row_mask, mask, offsets = row_tile(
                first_row + step, tile_rows, cols, col_mask, n_rows, n_cols
            )
            x_next = tl.load(x_ptr + offsets, mask=mask, other=0.0)
            dy_next = tl.load(dy_ptr + offsets, mask=mask, other=0.0)
            dweight, dbias = _backward_tile(
                x,
                dy,
                weight,
                mean,
                rstd,
                n_cols,
                dx_ptr,
                here,
                here_mask,
                dweight,
                dbias,
            )
    else:
        for first_row in range(first, n_rows, step):
            rows, row_mask, mask, offsets = row_tile(
                first_row, tile_rows, cols, col_mask, n_rows, n_cols
            )
            x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC)
            dy = tl.load(dy_ptr + offsets, mask=mask, other=0.0).to(ACC)
            mean = tl.load(mean_ptr + rows, mask=row_mask, other=0.0)
            rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0.0)
            dweight, dbias = _backward_tile(
                x, dy, weight, mean, rstd, n_cols, dx_ptr, offsets, mask, dweight, dbias
            )
    tl.store(
        partial_dw_ptr + program * n_cols + cols, tl.sum(dweight, axis=0), mask=col_mask
    )
    tl.store(
        partial_db_ptr + program * n_cols + cols, tl.sum(dbias, axis=0), mask=col_mask
    )


@triton.jit
def layer_norm_input_grad_kernel(
    dy_ptr,
    x_ptr,
    weight_ptr,
    mean_ptr,
    rstd_ptr,
    dx_ptr,
    n_cols,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    # dx alone, one row per program, for rows too long for the kernel above; the
    # weight and bias gradients come from layer_norm_weight_grads_kernel.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(ACC)
    dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0).to(ACC)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(ACC)
    rstd = tl.load(rstd_ptr + row)
    x_hat = tl.where(mask, (x - tl.load(mean_ptr + row)) * rstd, 0.0)
    dx = _input_gradient(x_hat, dy * weight, rstd, n_cols, 0)
    tl.store(dx_ptr + row * n_cols + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layer_norm_weight_grads_kernel(
    dy_ptr,
    x_ptr,
    mean_ptr,
    rstd_ptr,
    partial_dw_ptr,
    partial_db_ptr,
    n_rows,
    n_cols,
    ROWS_PER_PROGRAM: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
):
    # Program (strip, chunk) sums dy * x_hat and dy over ROWS_PER_PROGRAM rows of one
    # strip of BLOCK_COLS columns: its two partial sums are BLOCK_COLS values each,
    # small enough for registers however long the rows are.
    strip = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = strip * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    col_mask = cols < n_cols
    dweight = tl.zeros((BLOCK_ROWS, BLOCK_COLS), partial_dw_ptr.dtype.element_ty)
    dbias = tl.zeros((BLOCK_ROWS, BLOCK_COLS), partial_dw_ptr.dtype.element_ty)
    first_row = chunk * ROWS_PER_PROGRAM
    end_row = tl.minimum(first_row + ROWS_PER_PROGRAM, n_rows)
    for start in range(first_row, end_row, BLOCK_ROWS):
        rows = start + tl.arange(0, BLOCK_ROWS)
        # The chunk's end, not just the matrix's: the next chunk's rows are another
        # program's.
        row_mask = rows < end_row
        mask = row_mask[:, None] & col_mask[None, :]
        offsets = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(
            partial_dw_ptr.dtype.element_ty
        )
        dy = tl.load(dy_ptr + offsets, mask=mask, other=0.0).to(
            partial_dw_ptr.dtype.element_ty
        )
        mean = tl.load(mean_ptr + rows, mask=row_mask, other=0.0)
        rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0.0)
        dweight += dy * ((x - mean[:, None]) * rstd[:, None])
        dbias += dy
    tl.store(
        partial_dw_ptr + chunk * n_cols + cols, tl.sum(dweight, axis=0), mask=col_mask
    )
    tl.store(
        partial_db_ptr + chunk * n_cols + cols, tl.sum(dbias, axis=0), mask=col_mask
    )


# The forward kernel gives each thread about FORWARD_VALUES_PER_THREAD values, with at
# most FORWARD_MOST_WARPS warps: on an H200 at 16K values (one row per program), 8 warps
# ran at 94% of the copy ceiling, 16 at 93%, 32 at 60%. Tiles of 768- and 1024-value
# rows (tiles of 2048, 4096 and 8192 values, up to 16 warps): 32 values per thread with
# tiles of 4096 did best (0.91x and 0.96-0.98x torch.compile), 16 ran 0.56-0.98x, 8
# 0.56-0.80x. Neither streaming stores (".cs", as Liger's softmax) nor the row length
# compiled into the kernel nor 32-bit offsets moved those two by more than 2%.
FORWARD_MOST_WARPS = 8
FORWARD_VALUES_PER_THREAD = 32
# Values a forward program takes: rows of fewer values are taken several at a time. On
# an H200 (bf16) 4096 ran 768-value rows at 0.94x torch.compile, 1024-8192 at 0.76-0.84x.
FORWARD_TILE = 4096
# Rows whose length is not a power of two but a multiple of this many values (and at
# least four times it) take the chunked forward kernel; 0 turns it off. On an H200 at
# 5120 and 7168 values it ran 1.25x the fastest baseline in bf16 and 1.25-1.33x in fp16,
# where the padded one-tile kernel ran 0.99-1.21x.
FORWARD_CHUNK = 1024
# Rows of fewer values than this are taken several at a time in the backward pass.
BACKWARD_TILE = 8192
# Warps each multiprocessor is given by the persistent backward kernel: more hide
# memory latency better, fewer leave fewer partial sums to add up.
BACKWARD_WARPS_PER_SM = 8
# The fused backward kernel loads its next tile while it works on the current one: on an
# H200 it ran 1.05-1.10x the fastest baseline this way and 0.93-0.96x loading each when
# needed (8 warps per SM; 16 ran 0.95-1.02x, 32 0.74-0.96x).
BACKWARD_PREFETCH = True
# Rows longer than this take the two-kernel backward pass: at 16384 values the fused
# kernel's two row-long partial sums spill out of registers (ptxas gives it 128 registers
# and a stack frame of 264 bytes per thread with Triton 3.6, 328 with 3.9, compiled as
# a launch with 16-divisible sizes specialises it) and it ran at 44% of the
# copy ceiling on an H200, where dx alone and the weight gradients alone each ran near
# 88% of theirs.
FUSED_BACKWARD_MAX_COLS = 8192
# The weight-gradient kernel's strips of columns and chunks of rows (from sweeps on an H200).
STRIP_COLS = 256
STRIP_ROWS = 16
ROWS_PER_CHUNK = 512


@functools.cache
def forward_launch(
    n_rows: int, n_cols: int, dtype: torch.dtype
) -> tuple[str, tuple[int], dict[str, object]]:
    """Which forward kernel runs rows of ``n_cols`` values of ``dtype`` (``"tile"``:
    :func:`layer_norm_forward_kernel`, ``"chunked"``:
    :func:`layer_norm_forward_chunked_kernel`), its grid and compile-time arguments.
    Worked out once per shape."""
    block = row_block(n_cols)
    acc = accumulator(dtype)
    chunk = FORWARD_CHUNK
    if chunk and block != n_cols and n_cols % chunk == 0 and n_cols >= 4 * chunk:
        options = {
            "ACC": acc,
            "CHUNK": chunk,
            "num_warps": warps_for(chunk, per_thread=8),
        }
        return "chunked", (n_rows,), options
    rows = max(1, FORWARD_TILE // block)
    options = {
        "ACC": acc,
        "BLOCK_SIZE": block,
        "ROWS": rows,
        "EVEN": block == n_cols,
        "num_warps": warps_for(
            rows * block, per_thread=FORWARD_VALUES_PER_THREAD, most=FORWARD_MOST_WARPS
        ),
    }
    return "tile", (cdiv(n_rows, rows),), options


def _forward(x, weight, bias, eps, stats=True):
    # x is contiguous: its rows follow one another, and out, laid out as x, likewise.
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    out = torch.empty_like(x)
    acc_dtype = stats_dtype(x.dtype)
    if stats:
        mean = torch.empty(n_rows, dtype=acc_dtype, device=x.device)
        rstd = torch.empty(n_rows, dtype=acc_dtype, device=x.device)
    else:
        mean = rstd = unused_stats(x.device, acc_dtype)
    if n_rows:
        kind, grid, options = forward_launch(n_rows, n_cols, x.dtype)
        if kind == "chunked":
            launch(
                layer_norm_forward_chunked_kernel,
                grid,
                x,
                weight,
                bias,
                out,
                mean,
                rstd,
                n_cols,
                eps,
                stats,
                **options,
            )
        else:
            launch(
                layer_norm_forward_kernel,
                grid,
                x,
                weight,
                bias,
                out,
                mean,
                rstd,
                n_rows,
                n_cols,
                eps,
                stats,
                **options,
            )
    return out, mean, rstd


def _fused_backward(grad_rows, rows, weight, mean, rstd, dx):
    """dx, and per-program partial sums of the weight and bias gradients, in one kernel."""
    n_rows, n_cols = rows.shape
    block = row_block(n_cols)
    rows_per_tile = max(1, BACKWARD_TILE // block)
    num_warps = warps_for(rows_per_tile * block)
    n_tiles = cdiv(n_rows, rows_per_tile)
    n_partials = resident_programs(
        n_tiles, num_warps, rows.device, BACKWARD_WARPS_PER_SM
    )
    partial_dw = torch.empty(n_partials, n_cols, dtype=mean.dtype, device=rows.device)
    partial_db = torch.empty_like(partial_dw)
    launch(
        layer_norm_backward_kernel,
        (n_partials,),
        grad_rows,
        rows,
        weight,
        mean,
        rstd,
        dx,
        partial_dw,
        partial_db,
        n_rows,
        n_cols,
        ACC=accumulator(rows.dtype),
        BLOCK_SIZE=block,
        ROWS_PER_TILE=rows_per_tile,
        PREFETCH=BACKWARD_PREFETCH,
        num_warps=num_warps,
    )
    return partial_dw, partial_db


def _two_kernel_backward(grad_rows, rows, weight, mean, rstd, dx):
    """dx from one kernel, partial sums of the weight and bias gradients (one per chunk
    of rows) from another, for rows too long for the fused kernel."""
    n_rows, n_cols = rows.shape
    block = row_block(n_cols)
    launch(
        layer_norm_input_grad_kernel,
        (n_rows,),
        grad_rows,
        rows,
        weight,
        mean,
        rstd,
        dx,
        n_cols,
        ACC=accumulator(rows.dtype),
        BLOCK_SIZE=block,
        num_warps=warps_for(block),
    )
    n_chunks = cdiv(n_rows, ROWS_PER_CHUNK)
    partial_dw = torch.empty(n_chunks, n_cols, dtype=mean.dtype, device=rows.device)
    partial_db = torch.empty_like(partial_dw)
    launch(
        layer_norm_weight_grads_kernel,
        (cdiv(n_cols, STRIP_COLS), n_chunks),
        grad_rows,
        rows,
        mean,
        rstd,
        partial_dw,
        partial_db,
        n_rows,
        n_cols,
        ROWS_PER_PROGRAM=ROWS_PER_CHUNK,
        BLOCK_ROWS=STRIP_ROWS,
        BLOCK_COLS=STRIP_COLS,
    )
    return partial_dw, partial_db


def _backward(dy, x, weight, mean, rstd):
    rows, grad_rows = as_rows(x), as_rows(dy)
    n_rows, n_cols = rows.shape
    dx = torch.empty_like(rows)
    if n_rows == 0:
        return dx.view_as(x), torch.zeros_like(weight), torch.zeros_like(weight)
    if n_cols <= FUSED_BACKWARD_MAX_COLS:
        partial_dw, partial_db = _fused_backward(
            grad_rows, rows, weight, mean, rstd, dx
        )
    else:
        partial_dw, partial_db = _two_kernel_backward(
            grad_rows, rows, weight, mean, rstd, dx
        )
    dweight, dbias = torch.empty_like(weight), torch.empty_like(weight)
    column_sums(partial_dw, dweight, partial_db, dbias)
    return dx.view_as(x), dweight, dbias


class LayerNormFunction(torch.autograd.Function):
    """Autograd wiring: the forward kernel and the kernels for its gradients."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        y, mean, rstd = _forward(x, weight, bias, eps)
        ctx.save_for_backward(x, weight, mean, rstd)
        return y

    @staticmethod
    @first_order_only("layer_norm")
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        dx, dweight, dbias = _backward(dy.contiguous(), x, weight, mean, rstd)
        return dx, dweight, dbias, None


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    """LayerNorm of ``x`` over its last dimension, differentiable through Triton kernels.

    ``x``: contiguous float tensor on the Triton device, rows of at most 16384 values;
    ``weight`` and ``bias``: one value per column, of ``x``'s dtype; ``eps``: added to
    the variance.
    """
    eps = check_normalisation(
        x, {"weight": weight, "bias": bias}, eps, MAX_COLS, ROW_DTYPES
    )
    if needs_grad(x, weight, bias):
        return LayerNormFunction.apply(x, weight, bias, eps)
    # Without a gradient to record, autograd's Function machinery is skipped, and with
    # it a few microseconds per call.
    return _forward(x, weight, bias, eps, stats=False)[0]


def torch_layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    """PyTorch's ``torch.nn.functional.layer_norm``."""
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)


ROWS = 16384
# The hidden size of the benchmark whose size is the number of rows (LLaMA 2 7B's).
ROW_SWEEP_COLS = 4096


def _inputs(
    rows: int,
    n_cols: int,
    dtype: torch.dtype,
    device: torch.device,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = torch.randn(rows, n_cols, dtype=dtype, device=device, generator=generator)
    weight = 1 + 0.1 * torch.randn(
        n_cols, dtype=dtype, device=device, generator=generator
    )
    bias = 0.1 * torch.randn(n_cols, dtype=dtype, device=device, generator=generator)
    return x, weight, bias


def make_inputs(
    n_cols: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Activations of ROWS tokens by ``n_cols`` features, a weight near one, a small bias."""
    return _inputs(benchmark_rows(device, ROWS), n_cols, dtype, device, generator)


def make_row_sweep_inputs(
    rows: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Activations of ``rows`` tokens by ROW_SWEEP_COLS features, weight and bias as above."""
    return _inputs(rows, ROW_SWEEP_COLS, dtype, device, generator)


def make_backward_inputs(
    n_cols: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, ...]:
    """The forward inputs, and a random gradient of the output."""
    x, weight, bias = make_inputs(n_cols, dtype, device, generator)
    return (
        x,
        weight,
        bias,
        torch.randn(x.shape, dtype=dtype, device=device, generator=generator),
    )


def forward_bytes(n_cols: int, dtype: torch.dtype) -> int:
    """Read x, the weight and the bias once; write y once."""
    return (2 * ROWS + 2) * n_cols * dtype.itemsize


def backward_bytes(n_cols: int, dtype: torch.dtype) -> int:
    """Read x, dy and the weight, write dx, dweight and dbias (the row statistics are small)."""
    return (3 * ROWS + 3) * n_cols * dtype.itemsize


def row_sweep_bytes(rows: int, dtype: torch.dtype) -> int:
    """:func:`forward_bytes` for ``rows`` rows of ROW_SWEEP_COLS values."""
    return (2 * rows + 2) * ROW_SWEEP_COLS * dtype.itemsize


# Powers of two and the hidden sizes of GPT-2 (768), GPT-2 XL (1600), LLaMA 2 13B (5120)
# and DeepSeek-V3 (7168).
SIZES = (768, 1024, 1600, 4096, 5120, 7168, 8192, 16384)

BENCHMARK = BenchmarkSpec(
    name="layer_norm",
    metric="GB/s",
    x_name="N",
    dtype=torch.bfloat16,
    gpu_sizes=SIZES,
    interpreter_sizes=(3, 781, 2048),
    make_inputs=make_inputs,
    triton=layer_norm,
    torch_eager=torch_layer_norm,
    work=forward_bytes,
    details={"rows": ROWS},
    peer_baselines={"Liger": "layer_norm"},
)

BACKWARD_BENCHMARK = dataclasses.replace(
    BENCHMARK,
    name="layer_norm_backward",
    gpu_sizes=(768, 1600, 4096, 5120, 7168, 16384),
    make_inputs=make_backward_inputs,
    work=backward_bytes,
    grad_inputs=(0, 1, 2),
)

FP16_BENCHMARK = dataclasses.replace(
    BENCHMARK,
    name="layer_norm_fp16",
    dtype=torch.float16,
    gpu_sizes=(768, 4096, 5120, 7168),
    interpreter_sizes=(781,),
)

# The number of rows swept at one hidden size: fewer than 1024 up to four times ROWS.
ROW_SWEEP_BENCHMARK = dataclasses.replace(
    BENCHMARK,
    name="layer_norm_rows",
    x_name="rows",
    gpu_sizes=(1000, 4096, 32768, 65536),
    interpreter_sizes=(1, 3),
    make_inputs=make_row_sweep_inputs,
    work=row_sweep_bytes,
    details={"n_cols": ROW_SWEEP_COLS},
)


# The eps of the launch-cost row, torch.nn.functional.layer_norm's default.
LAUNCH_COST_EPS = 1e-5


def launch_cost_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.layer_norm.layer_norm` against ``torch.nn.functional.layer_norm``
    (forward only: the inputs need no gradient)."""
    x, weight, bias = tiny_randn(
        (TINY_ROWS, TINY_COLS),
        (TINY_COLS,),
        (TINY_COLS,),
        dtype=torch.float32,
        device=device,
    )
    out = torch.empty_like(x)
    # Without a gradient to compute, the launcher keeps no statistics: nor does this
    # (STATS false, the statistics pointed at a one-value buffer, as the launcher does).
    no_stats = torch.empty(1, dtype=torch.float32, device=device)
    kind, grid, options = forward_launch(TINY_ROWS, TINY_COLS, x.dtype)
    assert kind == "tile", kind
    bare = bare_launch(
        layer_norm_forward_kernel,
        grid,
        x,
        weight,
        bias,
        out,
        no_stats,
        no_stats,
        TINY_ROWS,
        TINY_COLS,
        LAUNCH_COST_EPS,
        False,
        **options,
    )
    return LaunchCase(
        inputs=describe_inputs(x=x, weight=weight, bias=bias),
        triton=lambda: layer_norm(x, weight, bias, LAUNCH_COST_EPS),
        bare=bare,
        torch=lambda: torch.nn.functional.layer_norm(
            x, (TINY_COLS,), weight, bias, LAUNCH_COST_EPS
        ),
        bare_out=out,
    )


FAMILY = Family(
    launchers=(
        Launcher(
            layer_norm,
            lambda device: tiny_randn(
                (3, 7), (7,), (7,), dtype=torch.float32, device=device
            ),
            (0, 1, 2),
        ),
    ),
    launch_costs={"layer_norm": launch_cost_case},
    model_shapes={
        "layer_norm": HIDDEN_SIZES,
        "layer_norm_backward": HIDDEN_SIZES,
        "layer_norm_fp16": frozenset({768, 5120, 7168}),
    },
)

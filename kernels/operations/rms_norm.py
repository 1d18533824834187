"""RMSNorm: scale each row by the inverse of its root mean square, then by a weight.

``y = x / sqrt(mean(x**2) + eps) * weight``, the normalisation of LLaMA-style models.
Written out in PyTorch it takes a pass over memory for the square, one for the mean,
one for the scaling and one for the weight; the fused kernel reads each row once and
writes it once.

The backward pass has LayerNorm's plan (:mod:`kernels.operations.layer_norm`) without the mean and
the bias: one kernel reads ``x`` and ``dy`` from memory once (reading a tile a second
time, from L2, where holding it would spill registers), writes ``dx`` and keeps partial
sums of the weight's gradient in registers, and :mod:`kernels.triton_helpers.column_sums` adds them
up. Rows too long for that are split between a kernel for ``dx`` and one for the
weight's gradient. The forward pass stores each row's inverse root mean square when a
gradient is to be computed, and the backward pass reads it.
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
from ..triton_helpers.row_scale import overflowed, safe_scale
from ..triton_helpers.row_tiles import row_tile

MAX_COLS = 65536
# Values a forward program takes: rows of fewer values are taken several at a time. On
# an H200 (bf16) 2048 ran 768- and 1024-value rows at 0.93x and 0.96x torch.compile,
# where 1024, 4096 and 8192 ran them at 0.80-0.93x.
FORWARD_TILE = 2048
# Rows whose length is not a power of two but a multiple of this many values (and at
# least four times it) take the chunked kernel; 0 turns it off. Off: on an H200 a chunk
# of 1024 ran 5120-value rows 1.09x torch.compile but 7168-value rows 0.87x, where the
# padded one-tile kernel ran 0.97x and 0.98x.
FORWARD_CHUNK = 0
# Values per thread of a forward tile of up to 8192 values (it sets the warps). On an
# H200, one row per program: 8K values did best with 16 (16 warps, 98% of the copy
# ceiling, against 93% with 8 warps). Tiles of 768- and 1024-value rows, with tiles of
# 1024, 2048 and 4096 values: 16 and 32 ran the same (best: 2048, 0.91x and 0.95x
# torch.compile), 8 ran 0.66-0.90x; 5120 and 7168 values: 16 and 32 the same (0.94x,
# 0.99x), 8 0.60-0.65x.
FORWARD_VALUES_PER_THREAD = 16


def _warps(values: int) -> int:
    # Warps for a program's tile of ``values``: at 16K values, 8 warps of 64 values did
    # better than 16 on an H200 (99% of the copy ceiling against 95%).
    return warps_for(
        values, per_thread=FORWARD_VALUES_PER_THREAD if values <= 8192 else 64
    )


@triton.jit
def rms_norm_kernel(
    x_ptr,
    weight_ptr,
    out_ptr,
    inv_rms_ptr,
    n_rows,
    n_cols,
    eps,
    STATS,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    ROWS: tl.constexpr,
    EVEN: tl.constexpr,
):
    # ROWS rows per program, one per line of a (ROWS, BLOCK_SIZE) tile: short rows are
    # too little work for one program (see LayerNorm's forward kernel). EVEN: the row
    # fills the tile, so the column mask is the constant True and compiles away.
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    col_mask = (cols < n_cols) | EVEN
    row_mask = rows < n_rows
    mask = row_mask[:, None] & col_mask[None, :]
    offsets = rows[:, None] * n_cols + cols[None, :]
    # The rows are read for the sum of squares, marked to stay in cache...
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_last").to(
        ACC
    )
    # Padding lanes hold zeros, which add nothing to the sum of squares.
    sum_squares = tl.sum(x * x, axis=1)
    inv_rms = 1.0 / tl.sqrt(sum_squares / n_cols + eps)
    # Values beyond about 1.8e19 overflow their squares, not the output (x * inv_rms is
    # of order 1): such rows' inverse root is taken again, scaled, in narrow tiles.
    rescale = row_mask & overflowed(sum_squares)
    if tl.max(rescale.to(tl.int32), axis=0) > 0:
        chunk: tl.constexpr = 64 if BLOCK_SIZE > 64 else BLOCK_SIZE
        again = _scaled_inverse_root(x_ptr, rows, rescale, n_cols, eps, ACC, chunk)
        inv_rms = tl.where(rescale, again, inv_rms)
    # ...and read again, from the cache, for the output. Memory sees one read; the
    # program keeps nothing row-sized across the reduction, so it needs fewer
    # registers and more programs fit on a multiprocessor at once.
    x = tl.load(
        x_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_first"
    ).to(ACC)
    weight = tl.load(weight_ptr + cols, mask=col_mask, eviction_policy="evict_last").to(
        ACC
    )
    y = x * inv_rms[:, None] * weight[None, :]
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)
    # STATS: there will be a backward pass, which reads each row's inverse root mean
    # square instead of summing the row's squares again. A plain bool, as in LayerNorm's
    # forward kernel: one binary serves calls with and without a gradient.
    if STATS:
        tl.store(inv_rms_ptr + rows, inv_rms, mask=row_mask)


@triton.jit
def _scaled_inverse_root(
    x_ptr, rows, rescale, n_cols, eps, ACC: tl.constexpr, CHUNK: tl.constexpr
):
    # 1 / sqrt(mean(x**2) + eps) of the rows where ``rescale`` holds, as
    # 1 / (s * sqrt(mean((x / s)**2) + eps / s**2)) with s each row's largest magnitude,
    # so that no square exceeds 1. The rows are read twice in (rows, CHUNK) tiles: a
    # rare path that held a row-sized tile would raise the registers of every program,
    # taken or not (Triton 3.6, sm_90a: 40 a thread at 5120 values, where the kernel
    # without it has 30 and with this one 32).
    cols = tl.arange(0, CHUNK)
    largest = tl.zeros(rows.shape, ACC)
    for start in tl.range(0, n_cols, CHUNK, num_stages=1):
        mask = rescale[:, None] & (start + cols < n_cols)[None, :]
        x = tl.load(x_ptr + rows[:, None] * n_cols + start + cols[None, :], mask=mask)
        largest = tl.maximum(largest, tl.max(tl.abs(x.to(ACC)), axis=1))
    scale = safe_scale(largest)
    squares = tl.zeros(rows.shape, ACC)
    for start in tl.range(0, n_cols, CHUNK, num_stages=1):
        mask = rescale[:, None] & (start + cols < n_cols)[None, :]
        offsets = rows[:, None] * n_cols + start + cols[None, :]
        scaled = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC) / scale[:, None]
        squares += tl.sum(scaled * scaled, axis=1)
    return 1.0 / (tl.sqrt(squares / n_cols + eps / (scale * scale)) * scale)


@triton.jit
def rms_norm_chunked_kernel(
    x_ptr,
    weight_ptr,
    out_ptr,
    inv_rms_ptr,
    n_cols,
    eps,
    STATS,
    ACC: tl.constexpr,
    CHUNK: tl.constexpr,
):
    # For rows whose length is not a power of two but a multiple of CHUNK (5120): one
    # program walks its row in CHUNK-value tiles instead of padding it to one tile of
    # the next power of two, twice, as LayerNorm's chunked kernel does: the sum of
    # squares (asking L2 to keep the row), then the output (reading it from L2).
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    cols = tl.arange(0, CHUNK)
    squares = tl.zeros((CHUNK,), ACC)
    for start in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + base + start + cols, eviction_policy="evict_last").to(ACC)
        squares += x * x
    sum_squares = tl.sum(squares, axis=0)
    inv_rms = 1.0 / tl.sqrt(sum_squares / n_cols + eps)
    if overflowed(sum_squares):
        # As in rms_norm_kernel: the row's largest magnitude, then its squares scaled.
        largest = tl.zeros((CHUNK,), ACC)
        for start in range(0, n_cols, CHUNK):
            x = tl.load(x_ptr + base + start + cols).to(ACC)
            largest = tl.maximum(largest, tl.abs(x))
        scale = safe_scale(tl.max(largest, axis=0))
        squares = tl.zeros((CHUNK,), ACC)
        for start in range(0, n_cols, CHUNK):
            x = tl.load(x_ptr + base + start + cols).to(ACC) / scale
            squares += x * x
        mean_square = tl.sum(squares, axis=0) / n_cols
        inv_rms = 1.0 / (tl.sqrt(mean_square + eps / (scale * scale)) * scale)
    for start in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + base + start + cols, eviction_policy="evict_first").to(ACC)
        weight = tl.load(weight_ptr + start + cols).to(ACC)
        y = x * inv_rms * weight
        tl.store(out_ptr + base + start + cols, y.to(out_ptr.dtype.element_ty))
    if STATS:
        tl.store(inv_rms_ptr + row, inv_rms)


@functools.cache
def forward_launch(
    n_rows: int, n_cols: int
) -> tuple[str, tuple[int], dict[str, object]]:
    """Which forward kernel runs ``n_rows`` rows of ``n_cols`` values (``"tile"``:
    :func:`rms_norm_kernel`, ``"chunked"``: :func:`rms_norm_chunked_kernel`), its grid,
    and its compile-time arguments (the accumulator type aside). Worked out once per
    shape."""
    block = row_block(n_cols)
    chunk = FORWARD_CHUNK
    if chunk and block != n_cols and n_cols % chunk == 0 and n_cols >= 4 * chunk:
        return (
            "chunked",
            (n_rows,),
            {"CHUNK": chunk, "num_warps": warps_for(chunk, per_thread=8)},
        )
    rows = max(1, FORWARD_TILE // block)
    options = {
        "BLOCK_SIZE": block,
        "ROWS": rows,
        "EVEN": block == n_cols,
        "num_warps": _warps(rows * block),
    }
    return "tile", (cdiv(n_rows, rows),), options


def _forward(
    x: torch.Tensor, weight: torch.Tensor, eps: float, stats: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """The output, and with ``stats`` each row's inverse root mean square (float32, or
    float64 for float64 rows) for the backward pass."""
    # x is contiguous: its rows follow one another, and out, laid out as x, likewise.
    out = torch.empty_like(x)
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    acc_dtype = stats_dtype(x.dtype)
    if stats:
        inv_rms = torch.empty(n_rows, dtype=acc_dtype, device=x.device)
    else:
        inv_rms = unused_stats(x.device, acc_dtype)
    if n_rows:
        kind, grid, options = forward_launch(n_rows, n_cols)
        if kind == "chunked":
            launch(
                rms_norm_chunked_kernel,
                grid,
                x,
                weight,
                out,
                inv_rms,
                n_cols,
                eps,
                stats,
                ACC=accumulator(x.dtype),
                **options,
            )
        else:
            launch(
                rms_norm_kernel,
                grid,
                x,
                weight,
                out,
                inv_rms,
                n_rows,
                n_cols,
                eps,
                stats,
                ACC=accumulator(x.dtype),
                **options,
            )
    return out, inv_rms


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm of ``x`` over its last dimension, scaled by ``weight``, by
    :func:`rms_norm_kernel`.

    ``x``: contiguous float tensor on the Triton device, rows of at most 65536 values;
    ``weight``: one value per column, of ``x``'s dtype; ``eps``: added to the mean
    square. Differentiable in ``x`` and ``weight``, through
    :func:`rms_norm_backward_kernel`."""
    eps = check_normalisation(x, {"weight": weight}, eps, MAX_COLS, ROW_DTYPES)
    if needs_grad(x, weight):
        return RMSNormFunction.apply(x, weight, eps)
    return _forward(x, weight, eps, stats=False)[0]


@triton.jit
def _backward_tile(x, dy, weight, inv_rms, n_cols, dx_ptr, offsets, mask, dweight):
    # dx of one tile of rows, stored, and the tile's share of dweight added. inv_rms:
    # each row's inverse root mean square, saved by the forward pass, as a column. Read,
    # not recomputed: the row then needs one sum, not two, and on an H200 16384-value
    # rows ran 0.91-0.99x Liger in three runs (recomputed, with two sums: 0.78x; with
    # both sums in one tl.reduce: 0.84x); shorter rows ran as before, within 2%.
    # dx = inv_rms * (w*dy - x_hat * mean(w*dy * x_hat)), x_hat = x * inv_rms.
    c_hat = _mean_product(x, dy, weight, inv_rms, n_cols)
    return _dx_and_dweight(
        x, dy, weight, inv_rms, c_hat, dx_ptr, offsets, mask, dweight
    )


@triton.jit
def _mean_product(x, dy, weight, inv_rms, n_cols):
    # c_hat = mean(w*dy * x_hat) of each row of the tile, as a column.
    return (
        tl.sum((x * inv_rms) * (dy * weight[None, :]), axis=1, keep_dims=True) / n_cols
    )


@triton.jit
def _dx_and_dweight(x, dy, weight, inv_rms, c_hat, dx_ptr, offsets, mask, dweight):
    # dx of the tile, stored, and the tile's share of dweight added.
    weighted_dy = dy * weight[None, :]
    x_hat = x * inv_rms
    dx = (weighted_dy - x_hat * c_hat) * inv_rms
    tl.store(dx_ptr + offsets, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    return dweight + dy * x_hat


@triton.jit
def rms_norm_backward_kernel(
    dy_ptr,
    x_ptr,
    weight_ptr,
    inv_rms_ptr,
    dx_ptr,
    partial_dw_ptr,
    n_rows,
    n_cols,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    ROWS_PER_TILE: tl.constexpr,
    PREFETCH: tl.constexpr,
    RELOAD: tl.constexpr,
):
    # A fixed number of programs, each striding over tiles of ROWS_PER_TILE rows and
    # keeping one partial sum of dweight in registers, as LayerNorm's backward kernel.
    # PREFETCH: load the next tile before working on this one, so that memory keeps
    # working through the reductions and the store (as softmax_prefetch_kernel does).
    # RELOAD (without PREFETCH): read each tile twice, for the row sums and again, from
    # the cache the first read asked to keep it in, for dx and dweight, instead of
    # holding it through the sums beside the weight and dweight. Compiled here for
    # sm_90 (Triton 3.9), 16384-value rows in 16 warps then take 128 registers a thread
    # and spill nothing, where holding them took as many and spilled 164 bytes.
    program = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    col_mask = cols < n_cols
    tile_rows = tl.arange(0, ROWS_PER_TILE)
    weight = tl.load(weight_ptr + cols, mask=col_mask, other=0.0).to(ACC)
    dweight = tl.zeros((ROWS_PER_TILE, BLOCK_SIZE), ACC)
    step = tl.num_programs(0) * ROWS_PER_TILE
    first = program * ROWS_PER_TILE
    if PREFETCH:
        rows, row_mask, mask, offsets = row_tile(
            first, tile_rows, cols, col_mask, n_rows, n_cols
        )
        x_next = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        dy_next = tl.load(dy_ptr + offsets, mask=mask, other=0.0)
        inv_rms_next = tl.load(inv_rms_ptr + rows, mask=row_mask, other=0.0)
        for first_row in range(first, n_rows, step):
            x, dy, inv_rms = x_next.to(ACC), dy_next.to(ACC), inv_rms_next
            here, here_mask = offsets, mask
            # Past the last tile the mask is all False: nothing is read.
            rows, row_mask, mask, offsets = row_tile(
                first_row + step, tile_rows, cols, col_mask, n_rows, n_cols
            )
            x_next = tl.load(x_ptr + offsets, mask=mask, other=0.0)
            dy_next = tl.load(dy_ptr + offsets, mask=mask, other=0.0)
            inv_rms_next = tl.load(inv_rms_ptr + rows, mask=row_mask, other=0.0)
            dweight = _backward_tile(
                x,
                dy,
                weight,
                inv_rms[:, None],
                n_cols,
                dx_ptr,
                here,
                here_mask,
                dweight,
            )
    else:
        for first_row in range(first, n_rows, step):
            rows, row_mask, mask, offsets = row_tile(
                first_row, tile_rows, cols, col_mask, n_rows, n_cols
            )
            inv_rms = tl.load(inv_rms_ptr + rows, mask=row_mask, other=0.0)[:, None]
            if RELOAD:
                x = tl.load(
                    x_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_last"
                )
                dy = tl.load(
                    dy_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_last"
                )
                c_hat = _mean_product(x.to(ACC), dy.to(ACC), weight, inv_rms, n_cols)
                x = tl.load(
                    x_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_first"
                )
                dy = tl.load(
                    dy_ptr + offsets,
                    mask=mask,
                    other=0.0,
                    eviction_policy="evict_first",
                )
                dweight = _dx_and_dweight(
                    x.to(ACC),
                    dy.to(ACC),
                    weight,
                    inv_rms,
                    c_hat,
                    dx_ptr,
                    offsets,
                    mask,
                    dweight,
                )
            else:
                x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC)
                dy = tl.load(dy_ptr + offsets, mask=mask, other=0.0).to(ACC)
                dweight = _backward_tile(
                    x, dy, weight, inv_rms, n_cols, dx_ptr, offsets, mask, dweight
                )
    tl.store(
        partial_dw_ptr + program * n_cols + cols, tl.sum(dweight, axis=0), mask=col_mask
    )


@triton.jit
def rms_norm_input_grad_kernel(
    dy_ptr,
    x_ptr,
    weight_ptr,
    inv_rms_ptr,
    dx_ptr,
    n_cols,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    EVEN: tl.constexpr,
):
    # dx alone, one row per program, for rows too long for the kernel above: a first
    # pass over the row's tiles sums w*dy*x, a second writes dx. The loads of the first
    # pass ask L2 to keep the row for the second. EVEN: whole tiles, no mask.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    inv_rms = tl.load(inv_rms_ptr + row)
    sum_products = tl.zeros((BLOCK_SIZE,), ACC)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = (start + cols < n_cols) | EVEN
        offsets = row * n_cols + start + cols
        x = tl.load(
            x_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_last"
        ).to(ACC)
        dy = tl.load(
            dy_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_last"
        ).to(ACC)
        weight = tl.load(weight_ptr + start + cols, mask=mask, other=0.0).to(ACC)
        sum_products += dy * weight * x
    # mean(w*dy * x_hat), with x_hat = x * inv_rms.
    c_hat = tl.sum(sum_products, axis=0) * inv_rms / n_cols
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = (start + cols < n_cols) | EVEN
        offsets = row * n_cols + start + cols
        x = tl.load(x_ptr + offsets, mask=mask, eviction_policy="evict_first").to(ACC)
        dy = tl.load(dy_ptr + offsets, mask=mask, eviction_policy="evict_first").to(ACC)
        weight = tl.load(weight_ptr + start + cols, mask=mask).to(ACC)
        dx = (dy * weight - x * inv_rms * c_hat) * inv_rms
        tl.store(dx_ptr + offsets, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_weight_grad_kernel(
    dy_ptr,
    x_ptr,
    inv_rms_ptr,
    partial_dw_ptr,
    n_rows,
    n_cols,
    ROWS_PER_PROGRAM: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
):
    # Program (strip, chunk) sums dy * x_hat over ROWS_PER_PROGRAM rows of one strip of
    # BLOCK_COLS columns, as LayerNorm's layer_norm_weight_grads_kernel.
    strip = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = strip * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    col_mask = cols < n_cols
    dweight = tl.zeros((BLOCK_ROWS, BLOCK_COLS), partial_dw_ptr.dtype.element_ty)
    first_row = chunk * ROWS_PER_PROGRAM
    end_row = tl.minimum(first_row + ROWS_PER_PROGRAM, n_rows)
    for start in range(first_row, end_row, BLOCK_ROWS):
        rows = start + tl.arange(0, BLOCK_ROWS)
        # The chunk's end, not just the matrix's: the next chunk's rows are another program's.
        row_mask = rows < end_row
        mask = row_mask[:, None] & col_mask[None, :]
        offsets = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(
            partial_dw_ptr.dtype.element_ty
        )
        dy = tl.load(dy_ptr + offsets, mask=mask, other=0.0).to(
            partial_dw_ptr.dtype.element_ty
        )
        inv_rms = tl.load(inv_rms_ptr + rows, mask=row_mask, other=0.0)
        dweight += dy * (x * inv_rms[:, None])
    tl.store(
        partial_dw_ptr + chunk * n_cols + cols, tl.sum(dweight, axis=0), mask=col_mask
    )


# Rows up to FUSED_BACKWARD_MAX_COLS take the one-kernel plan, several rows at a time
# when short; longer ones the two-kernel plan, with dx in tiles of INPUT_GRAD_BLOCK
# values and the weight gradient in strips of STRIP_COLS columns. On an H200,
# 16384-value rows ran 0.78x Liger fused (16 warps, no prefetch, the row's inverse RMS
# recomputed) against 0.69x with the two-kernel plan, which reads each row twice.
FUSED_BACKWARD_MAX_COLS = 16384
# On an H200 a tile of 4096 values ran 768-value rows 1.18x torch.compile, 8192 1.14x,
# 2048 0.98x; 4096- and 7168-value rows ran the same with each.
BACKWARD_TILE = 4096
# 8 warps per SM ran 1.14-1.30x the fastest baseline, 16 1.01-1.27x, 32 0.83-1.22x.
BACKWARD_WARPS_PER_SM = 8
# The fused kernel loads its next tile while it works on the current one: on an H200 it
# ran 1.15-1.30x the fastest baseline this way and 0.80-0.83x loading each when needed.
BACKWARD_PREFETCH = True
# Prefetching holds a second tile in registers: at 16384 values it spills (0.07-0.08x).
PREFETCH_MAX_COLS = 8192
# Values of each row-sized tile per thread in the fused kernel (about; they set the
# warps), for tiles that are prefetched and for longer rows, which are not. On an H200
# with the saved inverse RMS: 5120- and 7168-value rows (prefetched) spill with 64 and
# ran 0.04-0.06x. Rows not prefetched are read twice rather than held (RELOAD in
# rms_norm_backward_kernel), which frees registers: on an H100, 16384-value rows read
# twice ran 1.08x the fastest baseline with 16 values a thread, 1.12x with 32 and 0.95x
# with 64. How many programs share a multiprocessor (BACKWARD_WARPS_PER_SM 8 to 64)
# made no difference at 16384.
BACKWARD_VALUES_PER_THREAD = 32
BACKWARD_LONG_VALUES_PER_THREAD = 32
BACKWARD_RELOAD = True
INPUT_GRAD_BLOCK = 4096
STRIP_COLS = 256
STRIP_ROWS = 16
ROWS_PER_CHUNK = 512


def _fused_backward(grad_rows, rows, weight, inv_rms, dx):
    """dx, and per-program partial sums of the weight gradient, in one kernel."""
    n_rows, n_cols = rows.shape
    block = row_block(n_cols)
    rows_per_tile = max(1, BACKWARD_TILE // block)
    prefetch = BACKWARD_PREFETCH and block <= PREFETCH_MAX_COLS
    per_thread = (
        BACKWARD_VALUES_PER_THREAD if prefetch else BACKWARD_LONG_VALUES_PER_THREAD
    )
    num_warps = warps_for(rows_per_tile * block, per_thread=per_thread)
    n_tiles = cdiv(n_rows, rows_per_tile)
    n_partials = resident_programs(
        n_tiles, num_warps, rows.device, BACKWARD_WARPS_PER_SM
    )
    partial_dw = torch.empty(
        n_partials, n_cols, dtype=stats_dtype(rows.dtype), device=rows.device
    )
    launch(
        rms_norm_backward_kernel,
        (n_partials,),
        grad_rows,
        rows,
        weight,
        inv_rms,
        dx,
        partial_dw,
        n_rows,
        n_cols,
        ACC=accumulator(rows.dtype),
        BLOCK_SIZE=block,
        ROWS_PER_TILE=rows_per_tile,
        PREFETCH=prefetch,
        RELOAD=BACKWARD_RELOAD and not prefetch,
        num_warps=num_warps,
    )
    return partial_dw


def _two_kernel_backward(grad_rows, rows, weight, inv_rms, dx):
    """dx from one kernel, partial sums of the weight gradient, one per chunk of rows,
    from another."""
    n_rows, n_cols = rows.shape
    acc_dtype = inv_rms.dtype
    launch(
        rms_norm_input_grad_kernel,
        (n_rows,),
        grad_rows,
        rows,
        weight,
        inv_rms,
        dx,
        n_cols,
        ACC=accumulator(rows.dtype),
        BLOCK_SIZE=INPUT_GRAD_BLOCK,
        EVEN=n_cols % INPUT_GRAD_BLOCK == 0,
        num_warps=warps_for(INPUT_GRAD_BLOCK, per_thread=16),
    )
    n_chunks = cdiv(n_rows, ROWS_PER_CHUNK)
    partial_dw = torch.empty(n_chunks, n_cols, dtype=acc_dtype, device=rows.device)
    launch(
        rms_norm_weight_grad_kernel,
        (cdiv(n_cols, STRIP_COLS), n_chunks),
        grad_rows,
        rows,
        inv_rms,
        partial_dw,
        n_rows,
        n_cols,
        ROWS_PER_PROGRAM=ROWS_PER_CHUNK,
        BLOCK_ROWS=STRIP_ROWS,
        BLOCK_COLS=STRIP_COLS,
    )
    return partial_dw


def _backward(dy, x, weight, inv_rms):
    rows, grad_rows = as_rows(x), as_rows(dy)
    n_rows, n_cols = rows.shape
    dx = torch.empty_like(rows)
    if n_rows == 0:
        return dx.view_as(x), torch.zeros_like(weight)
    if n_cols <= FUSED_BACKWARD_MAX_COLS:
        partial_dw = _fused_backward(grad_rows, rows, weight, inv_rms, dx)
    else:
        partial_dw = _two_kernel_backward(grad_rows, rows, weight, inv_rms, dx)
    dweight = torch.empty_like(weight)
    column_sums(partial_dw, dweight)
    return dx.view_as(x), dweight


class RMSNormFunction(torch.autograd.Function):
    """Autograd wiring: the forward kernel, and the backward kernels for both gradients."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        out, inv_rms = _forward(x, weight, eps, stats=True)
        ctx.save_for_backward(x, weight, inv_rms)
        return out

    @staticmethod
    @first_order_only("rms_norm")
    def backward(ctx, dy):
        x, weight, inv_rms = ctx.saved_tensors
        dx, dweight = _backward(dy.contiguous(), x, weight, inv_rms)
        return dx, dweight, None


def torch_rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> torch.Tensor:
    """PyTorch's ``torch.nn.functional.rms_norm``."""
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)


ROWS = 16384
# The hidden size of the benchmark whose size is the number of rows (LLaMA 2 7B's).
ROW_SWEEP_COLS = 4096


def _inputs(
    rows: int,
    n_cols: int,
    dtype: torch.dtype,
    device: torch.device,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(rows, n_cols, dtype=dtype, device=device, generator=generator)
    weight = 1 + 0.1 * torch.randn(
        n_cols, dtype=dtype, device=device, generator=generator
    )
    return x, weight


def make_inputs(
    n_cols: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Activations of ROWS tokens by ``n_cols`` features, and a weight near one."""
    return _inputs(benchmark_rows(device, ROWS), n_cols, dtype, device, generator)


def make_row_sweep_inputs(
    rows: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Activations of ``rows`` tokens by ROW_SWEEP_COLS features, and a weight near one."""
    return _inputs(rows, ROW_SWEEP_COLS, dtype, device, generator)


def bytes_moved(n_cols: int, dtype: torch.dtype) -> int:
    """Read x and the weight once, write y once."""
    return (2 * ROWS + 1) * n_cols * dtype.itemsize


def row_sweep_bytes(rows: int, dtype: torch.dtype) -> int:
    """:func:`bytes_moved` for ``rows`` rows of ROW_SWEEP_COLS values."""
    return (2 * rows + 1) * ROW_SWEEP_COLS * dtype.itemsize


def make_backward_inputs(
    n_cols: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, ...]:
    """The forward inputs, and a random gradient of the output."""
    x, weight = make_inputs(n_cols, dtype, device, generator)
    return (
        x,
        weight,
        torch.randn(x.shape, dtype=dtype, device=device, generator=generator),
    )


def backward_bytes(n_cols: int, dtype: torch.dtype) -> int:
    """Read x, dy and the weight once; write dx and the weight's gradient once."""
    return (3 * ROWS + 2) * n_cols * dtype.itemsize


# Powers of two and the hidden sizes of GPT-2 (768), GPT-2 XL (1600), LLaMA 2 13B (5120)
# and DeepSeek-V3 (7168).
SIZES = (768, 1024, 1600, 4096, 5120, 7168, 8192, 16384)

BENCHMARK = BenchmarkSpec(
    name="rms_norm",
    metric="GB/s",
    x_name="N",
    dtype=torch.bfloat16,
    gpu_sizes=SIZES,
    interpreter_sizes=(1, 781, 2048),
    make_inputs=make_inputs,
    triton=rms_norm,
    torch_eager=torch_rms_norm,
    work=bytes_moved,
    details={"rows": ROWS},
    peer_baselines={"Liger": "rms_norm"},
)

BACKWARD_BENCHMARK = dataclasses.replace(
    BENCHMARK,
    name="rms_norm_backward",
    gpu_sizes=(768, 1600, 4096, 5120, 7168, 16384),
    # Not rows of one value: there y = sign(x) * weight, and dx is a small difference of
    # nearly equal terms that no float32 computation (PyTorch's neither) gets to 1e-5.
    interpreter_sizes=(3, 781, 2048),
    make_inputs=make_backward_inputs,
    work=backward_bytes,
    grad_inputs=(0, 1),
)

FP16_BENCHMARK = dataclasses.replace(
    BENCHMARK,
    name="rms_norm_fp16",
    dtype=torch.float16,
    gpu_sizes=(768, 4096, 5120, 7168),
    interpreter_sizes=(781,),
)

# The number of rows swept at one hidden size: fewer than 1024 up to four times ROWS.
ROW_SWEEP_BENCHMARK = dataclasses.replace(
    BENCHMARK,
    name="rms_norm_rows",
    x_name="rows",
    gpu_sizes=(1000, 4096, 32768, 65536),
    interpreter_sizes=(1, 3),
    make_inputs=make_row_sweep_inputs,
    work=row_sweep_bytes,
    details={"n_cols": ROW_SWEEP_COLS},
)


# The eps of the launch-cost row, torch.nn.functional.rms_norm's usual one.
LAUNCH_COST_EPS = 1e-6


def launch_cost_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.rms_norm.rms_norm` against ``torch.nn.functional.rms_norm``."""
    x, weight = tiny_randn(
        (TINY_ROWS, TINY_COLS), (TINY_COLS,), dtype=torch.float32, device=device
    )
    out = torch.empty_like(x)
    # The launcher's own grid and options, so that the same kernel is compiled and run.
    # Without a gradient to compute, no statistics are kept (as for LayerNorm, below).
    no_stats = torch.empty(1, dtype=torch.float32, device=device)
    kind, grid, options = forward_launch(TINY_ROWS, TINY_COLS)
    assert kind == "tile", kind
    bare = bare_launch(
        rms_norm_kernel,
        grid,
        x,
        weight,
        out,
        no_stats,
        TINY_ROWS,
        TINY_COLS,
        LAUNCH_COST_EPS,
        False,
        ACC=accumulator(x.dtype),
        **options,
    )
    return LaunchCase(
        inputs=describe_inputs(x=x, weight=weight),
        triton=lambda: rms_norm(x, weight, LAUNCH_COST_EPS),
        bare=bare,
        torch=lambda: torch.nn.functional.rms_norm(
            x, (TINY_COLS,), weight, LAUNCH_COST_EPS
        ),
        bare_out=out,
    )


FAMILY = Family(
    launchers=(
        Launcher(
            rms_norm,
            lambda device: tiny_randn((3, 7), (7,), dtype=torch.float32, device=device),
            (0, 1),
        ),
    ),
    launch_costs={"rms_norm": launch_cost_case},
    model_shapes={
        "rms_norm": HIDDEN_SIZES,
        "rms_norm_backward": HIDDEN_SIZES,
        "rms_norm_fp16": frozenset({768, 5120, 7168}),
    },
)

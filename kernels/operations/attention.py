"""FlashAttention: ``softmax(Q K^T * scale) V`` without ever storing the attention matrix.

A program owns a block of BLOCK_M queries. It walks over the keys and values in blocks
of BLOCK_N, computes the scores of its queries against one key block on tensor cores,
and folds them into a running output with the online-softmax recurrence: a running
maximum ``m`` and a running sum ``l`` of exponentials per query, and a rescale of what
was accumulated so far whenever the maximum grows. Memory holds Q, K, V, the output and
one number per query (the log-sum-exp, kept for the backward pass); the N x N matrix
lives only tile by tile in registers.

The backward pass recomputes the probabilities tile by tile from that log-sum-exp: one
kernel walks the queries for each key block (gradients of K and V), another walks the
keys for each query block (gradient of Q), so that no two programs add to the same
output and no atomics are needed.
"""

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from ..declarations.family import (
    TINY_ATTENTION,
    Family,
    LaunchCase,
    Launcher,
    bare_launch,
    describe_inputs,
    tiny_randn,
)
from ..declarations.spec import BenchmarkSpec, ProviderUnavailable
from ..triton_helpers.checks import (
    check_bool,
    check_real,
    check_same_layout,
    check_tensor,
    needs_grad,
)
from ..triton_helpers.direct_launch import launch
from ..triton_helpers.first_order import first_order_only
from ..triton_helpers.launch import cdiv
from ..triton_helpers.runtime import interpreted
from ..triton_helpers.tile_dot import tile_dot

ATTENTION_DTYPES = (torch.float16, torch.bfloat16)
HEAD_DIMS = (16, 32, 64, 128)
LOG2_E = 1.4426950408889634


@triton.jit
def _load(ptrs, inside, EVEN: tl.constexpr):
    # When the sequence is a whole number of blocks no load needs a mask: the common
    # case stays free of the comparisons.
    if EVEN:
        return tl.load(ptrs)
    return tl.load(ptrs, mask=inside, other=0.0)


@triton.jit
def _store(ptrs, value, inside, EVEN: tl.constexpr):
    # Round to the output's type once, on the way out.
    if EVEN:
        tl.store(ptrs, value.to(ptrs.dtype.element_ty))
    else:
        tl.store(ptrs, value.to(ptrs.dtype.element_ty), mask=inside)


@triton.jit
def _query_block(CAUSAL: tl.constexpr):
    # Which block of queries this program owns. Under a causal mask the last block
    # attends to every key and the first to one block of them: programs start in the
    # order of their numbers, so the longest go first and the short ones fill the last
    # wave, instead of the longest starting last and running alone.
    if CAUSAL:
        return tl.num_programs(0) - 1 - tl.program_id(0)
    return tl.program_id(0)


@triton.jit
def _attend_to_keys(
    acc,
    row_sum,
    row_max,
    q,
    k_ptr,
    v_ptr,
    rows,
    seq_len,
    qk_scale,
    start,
    end,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL_MASK: tl.constexpr,
    EVEN: tl.constexpr,
):
    # Fold the key blocks in [start, end) into the running output of one query block.
    dims = tl.arange(0, HEAD_DIM)
    for start_n in tl.range(start, end, BLOCK_N):
        cols = start_n + tl.arange(0, BLOCK_N)
        # K is read transposed (HEAD_DIM x BLOCK_N), as the product Q K^T needs it.
        k_tile = k_ptr + cols[None, :] * HEAD_DIM + dims[:, None]
        v_tile = v_ptr + cols[:, None] * HEAD_DIM + dims[None, :]
        k = _load(k_tile, cols[None, :] < seq_len, EVEN)
        scores = tile_dot(q, k, tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32))
        # Scores are scaled into base-2 units (qk_scale includes log2(e)): exp2 is one
        # instruction on the GPU, exp is two.
        if CAUSAL_MASK or not EVEN:
            keep = cols[None, :] < seq_len
            if CAUSAL_MASK:
                keep = keep & (rows[:, None] >= cols[None, :])
            scores = tl.where(keep, scores * qk_scale, -float("inf"))
            new_max = tl.maximum(row_max, tl.max(scores, 1))
            p = tl.math.exp2(scores - new_max[:, None])
        else:
            new_max = tl.maximum(row_max, tl.max(scores, 1) * qk_scale)
            p = tl.math.exp2(scores * qk_scale - new_max[:, None])
        # The online-softmax step: what was summed under the old maximum is rescaled.
        correction = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * correction + tl.sum(p, 1)
        acc = acc * correction[:, None]
        v = _load(v_tile, cols[:, None] < seq_len, EVEN)
        acc = tile_dot(p.to(v.dtype), v, acc)
        row_max = new_max
    return acc, row_sum, row_max


@triton.jit
def attention_forward_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    out_ptr,
    lse_ptr,
    seq_len,
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    EVEN: tl.constexpr,
):
    # Grid: (query blocks, batch x heads). Each head's Q, K, V are contiguous matrices.
    block_m = _query_block(CAUSAL)
    head_offset = tl.program_id(1).to(tl.int64) * seq_len * HEAD_DIM
    q_ptr += head_offset
    k_ptr += head_offset
    v_ptr += head_offset
    out_ptr += head_offset
    rows = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q_tile = q_ptr + rows[:, None] * HEAD_DIM + dims[None, :]
    q = _load(q_tile, rows[:, None] < seq_len, EVEN)

    row_max = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    # Masks cost comparisons and selects on every score: only the key blocks that need
    # one get it. A sequence that is not a whole number of blocks needs it in its last
    # key block alone, not in all of them.
    if CAUSAL:
        # Key blocks left of the diagonal are wholly visible and wholly inside the
        # sequence: no mask. Only the blocks on the diagonal need one, and blocks right
        # of it are never read.
        diagonal = block_m * BLOCK_M
        acc, row_sum, row_max = _attend_to_keys(
            acc,
            row_sum,
            row_max,
            q,
            k_ptr,
            v_ptr,
            rows,
            seq_len,
            qk_scale,
            0,
            diagonal,
            HEAD_DIM,
            BLOCK_M,
            BLOCK_N,
            False,
            True,
        )
        acc, row_sum, row_max = _attend_to_keys(
            acc,
            row_sum,
            row_max,
            q,
            k_ptr,
            v_ptr,
            rows,
            seq_len,
            qk_scale,
            diagonal,
            diagonal + BLOCK_M,
            HEAD_DIM,
            BLOCK_M,
            BLOCK_N,
            True,
            EVEN,
        )
    else:
        whole = seq_len // BLOCK_N * BLOCK_N
        acc, row_sum, row_max = _attend_to_keys(
            acc,
            row_sum,
            row_max,
            q,
            k_ptr,
            v_ptr,
            rows,
            seq_len,
            qk_scale,
            0,
            whole,
            HEAD_DIM,
            BLOCK_M,
            BLOCK_N,
            False,
            True,
        )
        if not EVEN:
            acc, row_sum, row_max = _attend_to_keys(
                acc,
                row_sum,
                row_max,
                q,
                k_ptr,
                v_ptr,
                rows,
                seq_len,
                qk_scale,
                whole,
                seq_len,
                HEAD_DIM,
                BLOCK_M,
                BLOCK_N,
                False,
                False,
            )

    out = acc / row_sum[:, None]
    # The log-sum-exp of each query's scaled scores (base 2): all the backward pass
    # needs to recompute any probability, p = exp2(score * qk_scale - lse).
    lse = row_max + tl.math.log2(row_sum)
    out_tile = out_ptr + rows[:, None] * HEAD_DIM + dims[None, :]
    _store(out_tile, out, rows[:, None] < seq_len, EVEN)
    # lse_ptr is None (a compile-time constant) when no backward pass will need it.
    if lse_ptr is not None:
        lse_rows = lse_ptr + tl.program_id(1).to(tl.int64) * seq_len + rows
        _store(lse_rows, lse, rows < seq_len, EVEN)


@triton.jit
def attention_delta_kernel(
    out_ptr,
    grad_out_ptr,
    delta_ptr,
    seq_len,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
):
    # delta_i = sum_d out_id * dout_id = sum_j p_ij * dp_ij: the term that the softmax's
    # gradient subtracts from every dp_ij of row i.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    head_offset = tl.program_id(1).to(tl.int64) * seq_len
    tile = (head_offset + rows[:, None]) * HEAD_DIM + dims[None, :]
    inside = rows[:, None] < seq_len
    out = tl.load(out_ptr + tile, mask=inside, other=0.0).to(tl.float32)
    grad_out = tl.load(grad_out_ptr + tile, mask=inside, other=0.0).to(tl.float32)
    tl.store(
        delta_ptr + head_offset + rows, tl.sum(out * grad_out, 1), mask=rows < seq_len
    )


@triton.jit
def _visible(queries, keys, seq_len, CAUSAL_MASK: tl.constexpr):
    # Which (query, key) pairs of a tile enter the backward pass: both inside the
    # sequence and, if causal, the key not after the query. ``queries`` and ``keys`` are
    # positions shaped to broadcast against each other (one a column, one a row).
    keep = (queries < seq_len) & (keys < seq_len)
    if CAUSAL_MASK:
        keep = keep & (queries >= keys)
    return keep


@triton.jit
def _key_block_gradients(
    grad_k,
    grad_v,
    k,
    v,
    q_ptr,
    grad_out_ptr,
    lse_ptr,
    delta_ptr,
    cols,
    seq_len,
    qk_scale,
    start,
    end,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    CAUSAL_MASK: tl.constexpr,
    EVEN: tl.constexpr,
):
    # Add the contributions of the query blocks in [start, end) to one key block's
    # gradients. Everything is computed transposed (keys along rows) so that the
    # products land in the (BLOCK_N, HEAD_DIM) shape of dK and dV without a transpose.
    dims = tl.arange(0, HEAD_DIM)
    for start_m in tl.range(start, end, BLOCK_M):
        rows = start_m + tl.arange(0, BLOCK_M)
        q_t_tile = q_ptr + rows[None, :] * HEAD_DIM + dims[:, None]
        grad_out_tile = grad_out_ptr + rows[:, None] * HEAD_DIM + dims[None, :]
        q_t = _load(q_t_tile, rows[None, :] < seq_len, EVEN)
        lse = _load(lse_ptr + rows, rows < seq_len, EVEN)
        grad_out = _load(grad_out_tile, rows[:, None] < seq_len, EVEN)
        delta = _load(delta_ptr + rows, rows < seq_len, EVEN)
        scores_t = tile_dot(k, q_t, tl.zeros((k.shape[0], BLOCK_M), dtype=tl.float32))
        p_t = tl.math.exp2(scores_t * qk_scale - lse[None, :])
        if CAUSAL_MASK or not EVEN:
            p_t = tl.where(
                _visible(rows[None, :], cols[:, None], seq_len, CAUSAL_MASK), p_t, 0.0
            )
        # dV += P^T dO;  dP^T = V dO^T;  dS^T = P^T * (dP^T - delta);  dK += dS^T Q.
        grad_v = tile_dot(p_t.to(grad_out.dtype), grad_out, grad_v)
        grad_p_t = tile_dot(
            v, tl.trans(grad_out), tl.zeros((k.shape[0], BLOCK_M), tl.float32)
        )
        grad_s_t = p_t * (grad_p_t - delta[None, :])
        grad_k = tile_dot(grad_s_t.to(q_t.dtype), tl.trans(q_t), grad_k)
    return grad_k, grad_v


@triton.jit
def attention_backward_kv_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    grad_out_ptr,
    lse_ptr,
    delta_ptr,
    grad_k_ptr,
    grad_v_ptr,
    seq_len,
    qk_scale,
    sm_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    EVEN: tl.constexpr,
):
    # Grid: (key blocks, batch x heads). One program owns BLOCK_N keys and walks the queries.
    head = tl.program_id(1).to(tl.int64)
    head_offset = head * seq_len * HEAD_DIM
    q_ptr += head_offset
    grad_out_ptr += head_offset
    lse_ptr += head * seq_len
    delta_ptr += head * seq_len
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    kv_tile = head_offset + cols[:, None] * HEAD_DIM + dims[None, :]
    k = _load(k_ptr + kv_tile, cols[:, None] < seq_len, EVEN)
    v = _load(v_ptr + kv_tile, cols[:, None] < seq_len, EVEN)
    grad_k = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    grad_v = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    if CAUSAL:
        # Queries before this key block never see it; those on its diagonal see part of
        # it (mask); those after it see all of it (no mask).
        diagonal = tl.program_id(0) * BLOCK_N
        grad_k, grad_v = _key_block_gradients(
            grad_k,
            grad_v,
            k,
            v,
            q_ptr,
            grad_out_ptr,
            lse_ptr,
            delta_ptr,
            cols,
            seq_len,
            qk_scale,
            diagonal,
            diagonal + BLOCK_N,
            HEAD_DIM,
            BLOCK_M,
            True,
            EVEN,
        )
        first = diagonal + BLOCK_N
    else:
        first = 0
    # The query blocks after that: whole ones with no mask, then the sequence's last,
    # partial one with its mask. Keys of this block past the end of the sequence need
    # none: they only reach rows of dK and dV that are never stored.
    whole = tl.maximum(seq_len // BLOCK_M * BLOCK_M, first)
    grad_k, grad_v = _key_block_gradients(
        grad_k,
        grad_v,
        k,
        v,
        q_ptr,
        grad_out_ptr,
        lse_ptr,
        delta_ptr,
        cols,
        seq_len,
        qk_scale,
        first,
        whole,
        HEAD_DIM,
        BLOCK_M,
        False,
        True,
    )
    if not EVEN:
        grad_k, grad_v = _key_block_gradients(
            grad_k,
            grad_v,
            k,
            v,
            q_ptr,
            grad_out_ptr,
            lse_ptr,
            delta_ptr,
            cols,
            seq_len,
            qk_scale,
            whole,
            seq_len,
            HEAD_DIM,
            BLOCK_M,
            False,
            False,
        )
    # The scores were s = sm_scale * q.k, so dK carries the factor sm_scale.
    grad_k = grad_k * sm_scale
    _store(grad_k_ptr + kv_tile, grad_k, cols[:, None] < seq_len, EVEN)
    _store(grad_v_ptr + kv_tile, grad_v, cols[:, None] < seq_len, EVEN)


@triton.jit
def _query_block_gradient(
    grad_q,
    q,
    grad_out,
    lse,
    delta,
    k_ptr,
    v_ptr,
    rows,
    seq_len,
    qk_scale,
    start,
    end,
    HEAD_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL_MASK: tl.constexpr,
    EVEN: tl.constexpr,
):
    # Add the contributions of the key blocks in [start, end) to one query block's dQ.
    dims = tl.arange(0, HEAD_DIM)
    for start_n in tl.range(start, end, BLOCK_N):
        cols = start_n + tl.arange(0, BLOCK_N)
        t_tile = cols[None, :] * HEAD_DIM + dims[:, None]
        k_t = _load(k_ptr + t_tile, cols[None, :] < seq_len, EVEN)
        v_t = _load(v_ptr + t_tile, cols[None, :] < seq_len, EVEN)
        scores = tile_dot(q, k_t, tl.zeros((q.shape[0], BLOCK_N), dtype=tl.float32))
        p = tl.math.exp2(scores * qk_scale - lse[:, None])
        if CAUSAL_MASK or not EVEN:
            p = tl.where(
                _visible(rows[:, None], cols[None, :], seq_len, CAUSAL_MASK), p, 0.0
            )
        # dP = dO V^T;  dS = P * (dP - delta);  dQ += dS K.
        grad_p = tile_dot(
            grad_out, v_t, tl.zeros((q.shape[0], BLOCK_N), dtype=tl.float32)
        )
        grad_s = p * (grad_p - delta[:, None])
        grad_q = tile_dot(grad_s.to(k_t.dtype), tl.trans(k_t), grad_q)
    return grad_q


@triton.jit
def attention_backward_q_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    grad_out_ptr,
    lse_ptr,
    delta_ptr,
    grad_q_ptr,
    seq_len,
    qk_scale,
    sm_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    EVEN: tl.constexpr,
):
    # Grid: (query blocks, batch x heads). One program owns BLOCK_M queries and walks the keys.
    head = tl.program_id(1).to(tl.int64)
    head_offset = head * seq_len * HEAD_DIM
    k_ptr += head_offset
    v_ptr += head_offset
    block_m = _query_block(CAUSAL)
    rows = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q_tile = head_offset + rows[:, None] * HEAD_DIM + dims[None, :]
    q = _load(q_ptr + q_tile, rows[:, None] < seq_len, EVEN)
    grad_out = _load(grad_out_ptr + q_tile, rows[:, None] < seq_len, EVEN)
    lse = _load(lse_ptr + head * seq_len + rows, rows < seq_len, EVEN)
    delta = _load(delta_ptr + head * seq_len + rows, rows < seq_len, EVEN)
    grad_q = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    if CAUSAL:
        diagonal = block_m * BLOCK_M
        grad_q = _query_block_gradient(
            grad_q,
            q,
            grad_out,
            lse,
            delta,
            k_ptr,
            v_ptr,
            rows,
            seq_len,
            qk_scale,
            0,
            diagonal,
            HEAD_DIM,
            BLOCK_N,
            False,
            True,
        )
        grad_q = _query_block_gradient(
            grad_q,
            q,
            grad_out,
            lse,
            delta,
            k_ptr,
            v_ptr,
            rows,
            seq_len,
            qk_scale,
            diagonal,
            diagonal + BLOCK_M,
            HEAD_DIM,
            BLOCK_N,
            True,
            EVEN,
        )
    else:
        # Whole key blocks with no mask, then the last, partial one with its mask.
        whole = seq_len // BLOCK_N * BLOCK_N
        grad_q = _query_block_gradient(
            grad_q,
            q,
            grad_out,
            lse,
            delta,
            k_ptr,
            v_ptr,
            rows,
            seq_len,
            qk_scale,
            0,
            whole,
            HEAD_DIM,
            BLOCK_N,
            False,
            True,
        )
        if not EVEN:
            grad_q = _query_block_gradient(
                grad_q,
                q,
                grad_out,
                lse,
                delta,
                k_ptr,
                v_ptr,
                rows,
                seq_len,
                qk_scale,
                whole,
                seq_len,
                HEAD_DIM,
                BLOCK_N,
                False,
                False,
            )
    _store(grad_q_ptr + q_tile, grad_q * sm_scale, rows[:, None] < seq_len, EVEN)


@dataclass(frozen=True)
class Tiles:
    """Launch settings of one kernel: tile sizes, warps and software-pipeline stages."""

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int


# Chosen from sweeps on an H200 (bfloat16, 4 x 32 heads; 4K and 16K tokens forward, 8K
# backward), keyed by kernel and head dim. For head dim 128, against other candidates:
# forward 128 x 128 tiles, 8 warps, 3 stages beat 128 x 64 by 4-7%; in the backward pass
# the dK/dV kernel with 64 queries per step beat 32 by 10% at 8 warps and by 2x at 4.
# For head dim 64, from a sweep on an H100 (bfloat16, 4 x 32 heads; 1,500 and 8,192
# tokens full, 1,024 and 5,000 causal; each kernel's candidates with the others at their
# old settings; kernel time as a share of SDPA cuDNN's): forward 128 x 64 with 8 warps
# ran 0.84-1.02x where 4 warps ran 0.83-0.95x; dK/dV 32 x 64 ran 0.79-0.92x where 32 x
# 128 ran 0.76-0.84x (64 x 128 fell to 0.25x at 8,192 tokens); dQ 64 x 64 ran
# 0.80-0.90x where 128 x 32 ran 0.76-0.83x.
# Causal masking needs block_m to be a multiple of block_n in the forward and dQ
# kernels, and block_n a multiple of block_m in the dK/dV kernel.
GPU_TILES = {
    ("forward", 64): Tiles(128, 64, 8, 3),
    ("forward", 128): Tiles(128, 128, 8, 3),
    ("backward_kv", 64): Tiles(32, 64, 4, 3),
    ("backward_kv", 128): Tiles(64, 128, 8, 3),
    ("backward_q", 64): Tiles(64, 64, 4, 3),
    ("backward_q", 128): Tiles(128, 64, 8, 3),
}
# In the interpreter every program runs in Python: small tiles, so that small test
# inputs span several blocks and the masked edges.
INTERPRETER_TILES = Tiles(16, 16, 4, 1)


def tiles_for(kernel: str, head_dim: int) -> Tiles:
    """The launch settings of ``kernel`` ("forward", "backward_kv", "backward_q") here."""
    if interpreted():
        return INTERPRETER_TILES
    # Head dims below 64 use the 64 settings; their tiles are smaller still.
    return GPU_TILES[(kernel, max(64, head_dim))]


def _launch_args(seq_len: int, tiles: Tiles) -> dict[str, int | bool]:
    even = seq_len % tiles.block_m == 0 and seq_len % tiles.block_n == 0
    return {
        "BLOCK_M": tiles.block_m,
        "BLOCK_N": tiles.block_n,
        "EVEN": even,
        "num_warps": tiles.num_warps,
        "num_stages": tiles.num_stages,
    }


@functools.cache
def forward_launch(
    batch: int, heads: int, seq_len: int, head_dim: int, causal: bool
) -> tuple[tuple[int, int], dict[str, int | bool]]:
    """The grid and compile-time arguments of :func:`attention_forward_kernel` for inputs
    of shape (batch, heads, seq_len, head_dim), worked out once per shape."""
    tiles = tiles_for("forward", head_dim)
    grid = (cdiv(seq_len, tiles.block_m), batch * heads)
    return grid, {
        "HEAD_DIM": head_dim,
        "CAUSAL": causal,
        **_launch_args(seq_len, tiles),
    }


def _forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool,
    sm_scale: float,
    keep_lse: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    # keep_lse: the backward pass will need each row's log-sum-exp. Without one, it is
    # neither allocated nor stored (an allocation is a microsecond or two of the host's).
    out = torch.empty_like(q)
    batch, heads, seq_len, _ = q.shape
    lse = (
        torch.empty((batch, heads, seq_len), device=q.device, dtype=torch.float32)
        if keep_lse
        else None
    )
    grid, options = forward_launch(*q.shape, causal)
    launch(
        attention_forward_kernel,
        grid,
        q,
        k,
        v,
        out,
        lse,
        seq_len,
        sm_scale * LOG2_E,
        **options,
    )
    return out, lse


def _backward(
    saved: tuple[torch.Tensor, ...],
    grad_out: torch.Tensor,
    causal: bool,
    sm_scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q, k, v, out, lse = saved
    batch, heads, seq_len, head_dim = q.shape
    grad_q, grad_k, grad_v = (
        torch.empty_like(q),
        torch.empty_like(k),
        torch.empty_like(v),
    )
    delta = torch.empty_like(lse)
    delta_block = 64
    launch(
        attention_delta_kernel,
        (cdiv(seq_len, delta_block), batch * heads),
        out,
        grad_out,
        delta,
        seq_len,
        HEAD_DIM=head_dim,
        BLOCK_M=delta_block,
    )
    scales = (sm_scale * LOG2_E, sm_scale)
    tiles = tiles_for("backward_kv", head_dim)
    launch(
        attention_backward_kv_kernel,
        (cdiv(seq_len, tiles.block_n), batch * heads),
        q,
        k,
        v,
        grad_out,
        lse,
        delta,
        grad_k,
        grad_v,
        seq_len,
        *scales,
        HEAD_DIM=head_dim,
        CAUSAL=causal,
        **_launch_args(seq_len, tiles),
    )
    tiles = tiles_for("backward_q", head_dim)
    launch(
        attention_backward_q_kernel,
        (cdiv(seq_len, tiles.block_m), batch * heads),
        q,
        k,
        v,
        grad_out,
        lse,
        delta,
        grad_q,
        seq_len,
        *scales,
        HEAD_DIM=head_dim,
        CAUSAL=causal,
        **_launch_args(seq_len, tiles),
    )
    return grad_q, grad_k, grad_v


class FlashAttention(torch.autograd.Function):
    """Autograd wiring: the forward keeps Q, K, V, the output and the log-sum-exp."""

    @staticmethod
    def forward(ctx, q, k, v, causal: bool, sm_scale: float):
        out, lse = _forward(q, k, v, causal, sm_scale)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal, ctx.sm_scale = causal, sm_scale
        return out

    @staticmethod
    @first_order_only("attention")
    def backward(ctx, grad_out):
        grad_out = grad_out.contiguous()
        grads = _backward(ctx.saved_tensors, grad_out, ctx.causal, ctx.sm_scale)
        return *grads, None, None


def check_attention_inputs(q: object, k: object, v: object) -> None:
    """Check Q, K and V for :func:`attention`; raise an error naming the bad argument."""
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, tensor, ATTENTION_DTYPES)
        if tensor.dim() != 4:
            raise ValueError(
                f"{name} has shape {tuple(tensor.shape)}; it must be "
                "(batch, heads, seq_len, head_dim)"
            )
    check_same_layout(("q", "k"), q, k)
    check_same_layout(("q", "v"), q, v)
    head_dim = q.shape[-1]
    if head_dim not in HEAD_DIMS:
        raise ValueError(
            f"q has head_dim {head_dim}; this kernel takes {', '.join(map(str, HEAD_DIMS))}"
        )


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = False,
    sm_scale: float | None = None,
) -> torch.Tensor:
    """``softmax(q k^T * sm_scale) v`` by FlashAttention kernels, differentiable.

    ``q``, ``k``, ``v``: contiguous (batch, heads, seq_len, head_dim) tensors of one shape
    and dtype (float16 or bfloat16) on the device Triton runs on; head_dim is 16, 32, 64
    or 128. ``causal`` (a bool): query i attends to keys 0..i only. ``sm_scale`` (a
    finite number) defaults to ``1 / sqrt(head_dim)``.
    """
    check_attention_inputs(q, k, v)
    causal = check_bool("causal", causal)
    sm_scale = (
        1.0 / math.sqrt(q.shape[-1])
        if sm_scale is None
        else check_real("sm_scale", sm_scale)
    )
    if not math.isfinite(sm_scale):
        raise ValueError(f"sm_scale must be a finite number, got {sm_scale!r}")
    if q.numel() == 0:
        # No queries, nothing to launch; the sum of the empty inputs is an empty output
        # that still links them to autograd.
        return q + k + v
    if needs_grad(q, k, v):
        return FlashAttention.apply(q, k, v, causal, sm_scale)
    return _forward(q, k, v, causal, sm_scale, keep_lse=False)[0]


def attention_probabilities(
    q: torch.Tensor, k: torch.Tensor, causal: bool = False
) -> torch.Tensor:
    """``softmax(q k^T / sqrt(head_dim))``, future keys masked out if ``causal``."""
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if causal:
        seq_len = q.shape[-2]
        future = torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, -math.inf)
    return torch.softmax(scores, dim=-1)


def naive_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False
) -> torch.Tensor:
    """The formula in PyTorch: the (seq_len x seq_len) probabilities of every head in
    memory."""
    return attention_probabilities(q, k, causal) @ v


class ReferenceAttention(torch.autograd.Function):
    """The formula evaluated one head at a time, gradients included, so that a float64
    reference fits in memory at 16K tokens (the scores of all heads would not)."""

    @staticmethod
    def forward(ctx, q, k, v, causal: bool):
        ctx.save_for_backward(q, k, v)
        ctx.causal = causal
        out = torch.empty_like(q)
        for b, h in _heads(q):
            out[b, h] = naive_attention(q[b, h], k[b, h], v[b, h], causal)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v = ctx.saved_tensors
        grads = [torch.empty_like(t) for t in (q, k, v)]
        scale = 1.0 / math.sqrt(q.shape[-1])
        for b, h in _heads(q):
            p = attention_probabilities(q[b, h], k[b, h], ctx.causal)
            grad_p = grad_out[b, h] @ v[b, h].T
            grad_s = p * (grad_p - (p * grad_p).sum(-1, keepdim=True))
            grads[0][b, h] = grad_s @ k[b, h] * scale
            grads[1][b, h] = grad_s.T @ q[b, h] * scale
            grads[2][b, h] = p.T @ grad_out[b, h]
        return *grads, None


def _heads(q: torch.Tensor) -> list[tuple[int, int]]:
    return [(b, h) for b in range(q.shape[0]) for h in range(q.shape[1])]


# The benchmark's shape: 4 sequences of 32 heads of 128 dimensions; the sequence length varies.
BATCH, HEADS, HEAD_DIM = 4, 32, 128
# In the interpreter: one sequence of two heads.
INTERPRETER_BATCH, INTERPRETER_HEADS = 1, 2


def make_qkv(
    seq_len: int,
    dtype: torch.dtype,
    device: torch.device,
    generator: torch.Generator,
    head_dim: int = HEAD_DIM,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random Q, K, V of the benchmark's shape (smaller in the interpreter)."""
    batch, heads = (
        (BATCH, HEADS)
        if device.type == "cuda"
        else (INTERPRETER_BATCH, INTERPRETER_HEADS)
    )
    shape = (batch, heads, seq_len, head_dim)
    return tuple(
        torch.randn(shape, dtype=dtype, device=device, generator=generator)
        for _ in "qkv"
    )


def make_qkv_and_grad(
    seq_len: int,
    dtype: torch.dtype,
    device: torch.device,
    generator: torch.Generator,
    head_dim: int = HEAD_DIM,
) -> tuple[torch.Tensor, ...]:
    """Q, K, V and a random gradient of the output, for the backward benchmarks."""
    q, k, v = make_qkv(seq_len, dtype, device, generator, head_dim)
    return (
        q,
        k,
        v,
        torch.randn(q.shape, dtype=dtype, device=device, generator=generator),
    )


def forward_flops(seq_len: int, causal: bool, head_dim: int = HEAD_DIM) -> float:
    """Two products per head (Q K^T and P V) of 2 * seq_len^2 * head_dim each; causal
    attention computes half of each."""
    flops = 4.0 * BATCH * HEADS * seq_len**2 * head_dim
    return flops / 2 if causal else flops


# Sequence lengths of the benchmarks that judge the kernels at any length: whole numbers
# of 128-token blocks and lengths that are not (1500, 5000), in which the last block of
# queries and of keys is partial.
RAGGED_LENGTHS = [1024, 1500, 2048, 4096, 5000, 8192, 16384]


def _sdpa(backend_name: str, causal: bool):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = getattr(SDPBackend, backend_name)

    def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        try:
            with sdpa_kernel(backend):
                return torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, is_causal=causal
                )
        except RuntimeError as error:
            # SDPA's message when the backend cannot run these inputs on this machine.
            if "No available kernel" in str(error):
                raise ProviderUnavailable(f"SDPA {backend_name}: {error}") from error
            raise

    return run


def sdpa_baselines(causal: bool) -> dict[str, object]:
    """PyTorch's fused attention, one series per backend that the comparison uses."""
    return {
        "SDPA flash": _sdpa("FLASH_ATTENTION", causal),
        "SDPA cuDNN": _sdpa("CUDNN_ATTENTION", causal),
        "SDPA efficient": _sdpa("EFFICIENT_ATTENTION", causal),
    }


def _spec(
    name: str,
    causal: bool,
    backward: bool,
    head_dim: int = HEAD_DIM,
    sizes: Sequence[int] = (1024, 2048, 4096, 8192, 16384),
) -> BenchmarkSpec:
    def triton_attention(q, k, v):
        return attention(q, k, v, causal=causal)

    def eager(q, k, v):
        return naive_attention(q, k, v, causal=causal)

    def reference(q, k, v):
        return ReferenceAttention.apply(q, k, v, causal)

    def flops(seq_len: int, dtype: torch.dtype) -> float:
        # The backward pass has five products against the forward's two: 2.5 times the work.
        return forward_flops(seq_len, causal, head_dim) * (2.5 if backward else 1.0)

    def peak_memory_step(provider, inputs) -> None:
        provider(*inputs)

    memory = {} if backward or causal else {"naive": eager}
    return BenchmarkSpec(
        name=name,
        metric="TFLOP/s",
        x_name="sequence length",
        dtype=torch.bfloat16,
        gpu_sizes=list(sizes),
        interpreter_sizes=[16, 40],
        make_inputs=functools.partial(
            make_qkv_and_grad if backward else make_qkv, head_dim=head_dim
        ),
        triton=triton_attention,
        torch_eager=eager,
        work=flops,
        reference=reference,
        grad_inputs=(0, 1, 2) if backward else (),
        baselines=sdpa_baselines(causal),
        peak_memory_step=peak_memory_step if memory else None,
        memory_only=memory,
        details={
            "batch": BATCH,
            "heads": HEADS,
            "head_dim": head_dim,
            "causal": causal,
        },
    )


BENCHMARK = _spec("flash_attention", causal=False, backward=False)
CAUSAL_BENCHMARK = _spec("flash_attention_causal", causal=True, backward=False)
BACKWARD_BENCHMARK = _spec("flash_attention_backward", causal=False, backward=True)
CAUSAL_BACKWARD_BENCHMARK = _spec(
    "flash_attention_causal_backward", causal=True, backward=True
)
# Head dim 64 (as in many smaller models): the backward pass at ragged lengths up to
# 8,192 tokens (16,384, four times the work of 8,192 in every check and timing, would
# lengthen the GPU build for a length the head-dim-128 benchmarks cover), with the tiles
# of GPU_TILES' head-dim-64 entries.
D64_BACKWARD_BENCHMARK = _spec(
    "flash_attention_d64_backward",
    causal=False,
    backward=True,
    head_dim=64,
    sizes=RAGGED_LENGTHS[:-1],
)
D64_CAUSAL_BACKWARD_BENCHMARK = _spec(
    "flash_attention_d64_causal_backward",
    causal=True,
    backward=True,
    head_dim=64,
    sizes=RAGGED_LENGTHS[:-1],
)


def launch_cost_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.attention.attention` against PyTorch's
    ``scaled_dot_product_attention`` (its own choice of backend); forward only."""
    q, k, v = tiny_randn(*[TINY_ATTENTION] * 3, dtype=torch.float16, device=device)
    batch, heads, seq_len, head_dim = TINY_ATTENTION
    out = torch.empty_like(q)
    # Without a gradient to compute, the launcher keeps no log-sum-exp: nor does this.
    grid, options = forward_launch(batch, heads, seq_len, head_dim, False)
    # The launcher's default scale, 1 / sqrt(head_dim), in base 2 as its kernel takes it.
    scale = 1.0 / math.sqrt(head_dim) * LOG2_E
    bare = bare_launch(
        attention_forward_kernel,
        grid,
        q,
        k,
        v,
        out,
        None,
        seq_len,
        scale,
        **options,
    )
    return LaunchCase(
        inputs=describe_inputs(q=q, k=k, v=v),
        triton=lambda: attention(q, k, v),
        bare=bare,
        torch=lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
        bare_out=out,
    )


FAMILY = Family(
    launchers=(
        Launcher(
            attention,
            lambda device: tiny_randn(
                (1, 1, 16, 16),
                (1, 1, 16, 16),
                (1, 1, 16, 16),
                dtype=torch.float16,
                device=device,
            ),
            (0, 1, 2),
        ),
    ),
    launch_costs={"attention": launch_cost_case},
)

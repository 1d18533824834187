"""Below Triton: the attention forward pass in Gluon, for Hopper GPUs.

Triton decides for the programmer how a tile is spread over threads, when shared memory
is filled and when a tensor-core product is waited for. Gluon
(``triton.experimental.gluon``) is Triton's lower layer, where the programmer decides:
every tensor has an explicit layout, shared memory is allocated by hand, TMA copies and
their barriers are written out, and ``warpgroup_mma`` returns before its product is
done. This kernel uses that control for FlashAttention-3's schedule:

* a **loader warp** copies K and V tiles into a two-slot ring (TMA), while
* **two warpgroups** (4 warps each) own 64 query rows apiece and **take turns at the
  tensor cores** ("ping-pong"): one issues its two products (``S = Q K^T`` for the next
  key block, ``O += P V`` for the last one) and hands the turn over, then runs its
  softmax while the other's products run;
* within a warpgroup, the softmax of key block j overlaps the ``P V`` product of block
  j-1 (the products are asynchronous: the code waits for one of two);
* the kernel is **persistent**: one program per SM walks its share of the tiles (query
  block, head), and the loader brings the next tile's queries and keys while the
  warpgroups finish the last one. A program's tiles are of neighbouring heads, so
  that K and V come from L2, and under a causal mask they come in pairs of equal
  work (a long query block and its mirror).

The arithmetic is :mod:`kernels.operations.attention`'s: scores in base-2 units, the online-softmax
rescale, the log-sum-exp kept for a backward pass. Only the forward pass is written in
Gluon; :func:`gluon_attention` refuses inputs that need a gradient.

Gluon is experimental: its names change between Triton releases (the two that this
module meets are bound below), and it has no CPU interpreter, so tests compile this
kernel for sm_90a on any machine and run it only on a Hopper GPU.
"""

import functools
import math

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from ..declarations.family import (
    Family,
    Launcher,
    tiny_randn,
)
from ..declarations.spec import BenchmarkSpec, ProviderUnavailable
from ..triton_helpers.checks import check_bool, check_no_grad, check_real
from ..triton_helpers.runtime import interpreted
from .attention import (
    BATCH,
    HEAD_DIM,
    HEADS,
    LOG2_E,
    RAGGED_LENGTHS,
    ReferenceAttention,
    attention,
    check_attention_inputs,
    forward_flops,
    make_qkv,
    naive_attention,
    sdpa_baselines,
)

# Triton 3.6 names the TMA copies async_copy_global_to_shared and
# async_copy_shared_to_global; later releases renamed them async_load and async_store.
tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global

# Query rows per tile (two warpgroups of 64), keys per block, slots in the K/V ring.
# Keys per block, on an H100 against SDPA cuDNN (head dim 64, 1,024-16,384 tokens): 64
# ran at 0.74-0.82x, 128 at 0.83-0.97x, 256 (no mask only) at 0.77-0.85x; at head dim
# 128, 64 ran at 0.80-0.94x and 128 at 0.96-1.05x. The causal block count assumes
# BLOCK_N <= BLOCK_M, and BLOCK_M a multiple of BLOCK_N.
BLOCK_M, BLOCK_N, STAGES = 128, 128, 2
GLUON_HEAD_DIMS = (64, 128)
# Registers per thread after the warpgroups re-divide the register file (setmaxnreg):
# the loader warp needs few, the two computing warpgroups take the rest.
CONSUMER_REGS, LOADER_REGS = 240, 24


@gluon.jit
def _softmax_step(
    s,
    m_prev,
    l_prev,
    qk_scale,
    rows,
    start_n,
    seq_len,
    mask_from,
    causal,
    BLOCK_N: gl.constexpr,
    col_layout: gl.constexpr,
):
    # One online-softmax step over a block of scores (kernels.operations.attention's). Key blocks
    # from mask_from on need a mask: the last, partial one, or those on the diagonal.
    # causal is a run-time 0 or 1: a constexpr argument does not reach a warp_specialize
    # worker as a constant.
    cols = start_n + gl.arange(0, BLOCK_N, layout=col_layout)
    if start_n + BLOCK_N > mask_from:
        keep = (cols[None, :] < seq_len) & (
            (rows[:, None] >= cols[None, :]) | (causal == 0)
        )
        s = gl.where(keep, s * qk_scale, -float("inf"))
        m_new = gl.maximum(m_prev, gl.max(s, axis=1))
        p = gl.exp2(s - m_new[:, None])
    else:
        m_new = gl.maximum(m_prev, gl.max(s, axis=1) * qk_scale)
        p = gl.exp2(s * qk_scale - m_new[:, None])
    alpha = gl.exp2(m_prev - m_new)
    l_new = l_prev * alpha + gl.sum(p, axis=1)
    return p, m_new, l_new, alpha


@gluon.jit
def _unit(unit, n_query_blocks, causal):
    # A program's work comes in units: (head, first query block, second query block,
    # how many of the two). The units of one head are neighbours, so the programs at
    # work at once share a few heads and read their K and V from L2 (a query-block-major
    # order ran at 0.57-0.73x cuDNN on an H100, this one at 0.92-1.04x, d128, full).
    # Without a mask a unit is one query block. Under a causal mask it is a long query
    # block and its mirror, the short one: n_query_blocks + 1 key blocks, the same in
    # every unit, so that programs handed every grid-th unit get equal work (handed
    # tiles, a program took the same query block of every head whenever the grid was a
    # multiple of the query blocks: 0.64x cuDNN at 1,500 tokens).
    per_head = gl.where(causal != 0, (n_query_blocks + 1) // 2, n_query_blocks)
    head = unit // per_head
    pair = unit % per_head
    first = gl.where(causal != 0, n_query_blocks - 1 - pair, pair)
    # The middle block of an odd number of blocks is its own mirror.
    n_members = gl.where(first > pair, 2, 1)
    return head, first, pair, n_members


@gluon.jit
def _tile(query_block, seq_len, causal, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    # A query block's first query, its key blocks and the first key block that needs a
    # mask.
    off_m = query_block * BLOCK_M
    n_blocks = gl.cdiv(seq_len, BLOCK_N)
    mask_from = seq_len // BLOCK_N * BLOCK_N
    if causal != 0:
        # Key blocks past the diagonal are skipped; the diagonal's need the mask.
        n_blocks = gl.minimum(n_blocks, (off_m + BLOCK_M) // BLOCK_N)
        mask_from = gl.minimum(off_m, mask_from)
    return off_m, n_blocks, mask_from


@gluon.jit
def _load_tiles(
    q_desc,
    k_desc,
    v_desc,
    q_smem,
    k_smem,
    v_smem,
    q_ready,
    q_empty,
    k_ready,
    k_empty,
    v_ready,
    v_empty,
    seq_len,
    n_query_blocks,
    n_units,
    causal,
):
    # The loader warp, tile after tile: both halves of the query block once each
    # warpgroup has released its last one, then every key block's K and V into the
    # ring, each into a slot that both warpgroups have released. It runs ahead into
    # the next tile while the warpgroups finish this one.
    HALF_M: gl.constexpr = q_smem.shape[2]
    HEAD_DIM: gl.constexpr = q_smem.shape[3]
    BLOCK_N: gl.constexpr = k_smem.shape[2]
    STAGES: gl.constexpr = k_smem.shape[0]
    q_bytes: gl.constexpr = HALF_M * HEAD_DIM * q_smem.dtype.primitive_bitwidth // 8
    tile_bytes: gl.constexpr = BLOCK_N * HEAD_DIM * k_smem.dtype.primitive_bitwidth // 8
    loaded = 0  # key blocks loaded so far, over all tiles: the ring's position
    tiles_done = 0
    for unit in range(gl.program_id(0), n_units, gl.num_programs(0)):
        head, first, second, n_members = _unit(unit, n_query_blocks, causal)
        for member in range(n_members):
            query_block = gl.where(member == 0, first, second)
            off_m, n_blocks, _ = _tile(
                query_block, seq_len, causal, 2 * HALF_M, BLOCK_N
            )
            for i in gl.static_range(2):
                mbarrier.wait(q_empty.index(i), tiles_done & 1)
                mbarrier.expect(q_ready.index(i), q_bytes)
                tma_load(
                    q_desc,
                    [head, off_m + i * HALF_M, 0],
                    q_ready.index(i),
                    q_smem.index(i),
                )
            for j in range(n_blocks):
                slot = loaded % STAGES
                phase = (loaded // STAGES) & 1
                mbarrier.wait(k_empty.index(slot), phase)
                mbarrier.expect(k_ready.index(slot), tile_bytes)
                tma_load(
                    k_desc,
                    [head, j * BLOCK_N, 0],
                    k_ready.index(slot),
                    k_smem.index(slot),
                )
                mbarrier.wait(v_empty.index(slot), phase)
                mbarrier.expect(v_ready.index(slot), tile_bytes)
                tma_load(
                    v_desc,
                    [head, j * BLOCK_N, 0],
                    v_ready.index(slot),
                    v_smem.index(slot),
                )
                loaded += 1
            tiles_done += 1


@gluon.jit
def _attend(
    o_desc,
    lse_ptr,
    q_smem,
    o_smem,
    k_smem,
    v_smem,
    q_ready,
    q_empty,
    k_ready,
    k_empty,
    v_ready,
    v_empty,
    turns,
    seq_len,
    qk_scale,
    n_query_blocks,
    n_units,
    causal,
    ME: gl.constexpr,
):
    # One warpgroup's 64 query rows (ME: 0 or 1) of each of its program's tiles against
    # every key block, then those rows of the output and their log-sum-exp.
    HALF_M: gl.constexpr = q_smem.shape[2]
    HEAD_DIM: gl.constexpr = q_smem.shape[3]
    BLOCK_N: gl.constexpr = k_smem.shape[2]
    STAGES: gl.constexpr = k_smem.shape[0]
    dtype: gl.constexpr = q_smem.dtype
    # Accumulator layouts of the two products (wgmma, 4 warps along the rows); P goes
    # into the second product from registers, in the layout of its A operand.
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16]
    )
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_DIM, 16]
    )
    p_layout: gl.constexpr = gl.DotOperandLayout(
        operand_index=0, parent=o_layout, k_width=2
    )
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)
    col_layout: gl.constexpr = gl.SliceLayout(0, s_layout)
    o_row_layout: gl.constexpr = gl.SliceLayout(1, o_layout)

    q_tile = q_smem.index(ME).reshape([HALF_M, HEAD_DIM])
    my_out = o_smem.index(ME)
    my_turn = turns.index(ME)
    their_turn = turns.index(1 - ME)
    no_scores = gl.full([HALF_M, BLOCK_N], 0.0, gl.float32, layout=s_layout)
    used = 0  # key blocks used so far, over all tiles: the ring's position
    turns_taken = 0
    tiles_done = 0
    for unit in range(gl.program_id(0), n_units, gl.num_programs(0)):
        head, first, second, n_members = _unit(unit, n_query_blocks, causal)
        for member in range(n_members):
            query_block = gl.where(member == 0, first, second)
            off_m, n_blocks, mask_from = _tile(
                query_block, seq_len, causal, 2 * HALF_M, BLOCK_N
            )
            rows = off_m + ME * HALF_M + gl.arange(0, HALF_M, layout=row_layout)
            m_i = gl.full([HALF_M], -float("inf"), gl.float32, layout=row_layout)
            l_i = gl.full([HALF_M], 0.0, gl.float32, layout=row_layout)
            acc = gl.full([HALF_M, HEAD_DIM], 0.0, gl.float32, layout=o_layout)

            # Key block 0: its scores alone (no P V before it).
            mbarrier.wait(q_ready.index(ME), tiles_done & 1)
            slot = used % STAGES
            mbarrier.wait(k_ready.index(slot), (used // STAGES) & 1)
            mbarrier.wait(my_turn, turns_taken & 1)
            k_t = k_smem.index(slot).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0))
            s = warpgroup_mma(q_tile, k_t, no_scores, use_acc=False, is_async=True)
            mbarrier.arrive(their_turn, count=1)
            turns_taken += 1
            s = warpgroup_mma_wait(0, deps=(s,))
            mbarrier.arrive(k_empty.index(slot), count=1)
            p, m_i, l_i, alpha = _softmax_step(
                s,
                m_i,
                l_i,
                qk_scale,
                rows,
                0,
                seq_len,
                mask_from,
                causal,
                BLOCK_N,
                col_layout,
            )
            p = gl.convert_layout(p.to(dtype), p_layout)
            for j in range(1, n_blocks):
                k_slot = (used + j) % STAGES
                v_slot = (used + j - 1) % STAGES
                mbarrier.wait(k_ready.index(k_slot), ((used + j) // STAGES) & 1)
                mbarrier.wait(v_ready.index(v_slot), ((used + j - 1) // STAGES) & 1)
                # My turn at the tensor cores: issue both products, hand the turn over.
                mbarrier.wait(my_turn, turns_taken & 1)
                k_t = k_smem.index(k_slot).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0))
                s = warpgroup_mma(q_tile, k_t, no_scores, use_acc=False, is_async=True)
                v = v_smem.index(v_slot).reshape([BLOCK_N, HEAD_DIM])
                acc = warpgroup_mma(p, v, acc, is_async=True)
                mbarrier.arrive(their_turn, count=1)
                turns_taken += 1
                # The scores are done when at most one product (P V) is still running.
                s = warpgroup_mma_wait(1, deps=(s,))
                mbarrier.arrive(k_empty.index(k_slot), count=1)
                p_next, m_i, l_i, alpha = _softmax_step(
                    s,
                    m_i,
                    l_i,
                    qk_scale,
                    rows,
                    j * BLOCK_N,
                    seq_len,
                    mask_from,
                    causal,
                    BLOCK_N,
                    col_layout,
                )
                # P's registers are read by the running product until it is done.
                acc, p = warpgroup_mma_wait(0, deps=(acc, p))
                mbarrier.arrive(v_empty.index(v_slot), count=1)
                acc = acc * gl.convert_layout(alpha, o_row_layout)[:, None]
                p = gl.convert_layout(p_next.to(dtype), p_layout)
            v_slot = (used + n_blocks - 1) % STAGES
            mbarrier.wait(v_ready.index(v_slot), ((used + n_blocks - 1) // STAGES) & 1)
            v = v_smem.index(v_slot).reshape([BLOCK_N, HEAD_DIM])
            acc = warpgroup_mma(p, v, acc, is_async=True)
            acc = warpgroup_mma_wait(0, deps=(acc,))
            mbarrier.arrive(v_empty.index(v_slot), count=1)
            # Every product with these queries is done: the loader may bring the next
            # ones.
            mbarrier.arrive(q_empty.index(ME), count=1)
            used += n_blocks

            out = acc / gl.convert_layout(l_i, o_row_layout)[:, None]
            if lse_ptr is not None:
                lse = m_i + gl.log2(l_i)
                gl.store(
                    lse_ptr + head.to(gl.int64) * seq_len + rows,
                    lse,
                    mask=rows < seq_len,
                )
            # TMA writes the output from shared memory, clipped at the end of the
            # sequence; the last tile's copy must have left the buffer before it is
            # refilled.
            tma.store_wait(0)
            my_out.reshape([HALF_M, HEAD_DIM]).store(out.to(dtype))
            fence_async_shared()
            tma_store(o_desc, [head, off_m + ME * HALF_M, 0], my_out)
            tiles_done += 1
    tma.store_wait(0)


@gluon.jit
def _attend_first(
    o_desc,
    lse_ptr,
    q_smem,
    o_smem,
    k_smem,
    v_smem,
    q_ready,
    q_empty,
    k_ready,
    k_empty,
    v_ready,
    v_empty,
    turns,
    seq_len,
    qk_scale,
    n_query_blocks,
    n_units,
    causal,
):
    _attend(
        o_desc,
        lse_ptr,
        q_smem,
        o_smem,
        k_smem,
        v_smem,
        q_ready,
        q_empty,
        k_ready,
        k_empty,
        v_ready,
        v_empty,
        turns,
        seq_len,
        qk_scale,
        n_query_blocks,
        n_units,
        causal,
        0,
    )


@gluon.jit
def _attend_second(
    o_desc,
    lse_ptr,
    q_smem,
    o_smem,
    k_smem,
    v_smem,
    q_ready,
    q_empty,
    k_ready,
    k_empty,
    v_ready,
    v_empty,
    turns,
    seq_len,
    qk_scale,
    n_query_blocks,
    n_units,
    causal,
):
    _attend(
        o_desc,
        lse_ptr,
        q_smem,
        o_smem,
        k_smem,
        v_smem,
        q_ready,
        q_empty,
        k_ready,
        k_empty,
        v_ready,
        v_empty,
        turns,
        seq_len,
        qk_scale,
        n_query_blocks,
        n_units,
        causal,
        1,
    )


@gluon.jit
def attention_forward_gluon_kernel(
    q_desc,
    k_desc,
    v_desc,
    o_desc,
    lse_ptr,
    seq_len,
    qk_scale,
    n_units,
    HEAD_DIM: gl.constexpr,
    BLOCK_M: gl.constexpr,
    BLOCK_N: gl.constexpr,
    STAGES: gl.constexpr,
    CAUSAL: gl.constexpr,
    CONSUMER_REGS: gl.constexpr,
    LOADER_REGS: gl.constexpr,
):
    # Persistent: a program per SM (at most), each taking the work units (see _unit)
    # numbered as the program, + the grid size, ... (n_units: work_units()). The
    # descriptors see Q, K, V and the output as (batch x heads, seq_len, head_dim): a
    # tile past the end of a sequence reads zeros and writes nothing, instead of
    # reaching into the next head.
    HALF_M: gl.constexpr = BLOCK_M // 2
    dtype: gl.constexpr = q_desc.dtype
    n_query_blocks = gl.cdiv(seq_len, BLOCK_M)

    barrier_layout: gl.constexpr = mbarrier.MBarrierLayout()
    q_smem = gl.allocate_shared_memory(dtype, [2, 1, HALF_M, HEAD_DIM], q_desc.layout)
    o_smem = gl.allocate_shared_memory(dtype, [2, 1, HALF_M, HEAD_DIM], o_desc.layout)
    k_smem = gl.allocate_shared_memory(
        dtype, [STAGES, 1, BLOCK_N, HEAD_DIM], k_desc.layout
    )
    v_smem = gl.allocate_shared_memory(
        dtype, [STAGES, 1, BLOCK_N, HEAD_DIM], v_desc.layout
    )
    q_ready = gl.allocate_shared_memory(gl.int64, [2, 1], barrier_layout)
    q_empty = gl.allocate_shared_memory(gl.int64, [2, 1], barrier_layout)
    turns = gl.allocate_shared_memory(gl.int64, [2, 1], barrier_layout)
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], barrier_layout)
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], barrier_layout)
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], barrier_layout)
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], barrier_layout)
    for i in gl.static_range(2):
        mbarrier.init(q_ready.index(i), count=1)
        mbarrier.init(q_empty.index(i), count=1)
        mbarrier.arrive(q_empty.index(i), count=1)
        mbarrier.init(turns.index(i), count=1)
    # The first warpgroup has the first turn.
    mbarrier.arrive(turns.index(0), count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        # Both warpgroups read every tile: a slot is free once both have released it.
        # Every slot starts free.
        mbarrier.init(k_empty.index(i), count=2)
        mbarrier.init(v_empty.index(i), count=2)
        mbarrier.arrive(k_empty.index(i), count=2)
        mbarrier.arrive(v_empty.index(i), count=2)

    # causal goes to the partitions as a run-time 0 or 1: a constexpr argument does not
    # reach a warp_specialize worker as a constant.
    causal = 1 if CAUSAL else 0
    attend_args = (
        o_desc,
        lse_ptr,
        q_smem,
        o_smem,
        k_smem,
        v_smem,
        q_ready,
        q_empty,
        k_ready,
        k_empty,
        v_ready,
        v_empty,
        turns,
        seq_len,
        qk_scale,
        n_query_blocks,
        n_units,
        causal,
    )
    load_args = (
        q_desc,
        k_desc,
        v_desc,
        q_smem,
        k_smem,
        v_smem,
        q_ready,
        q_empty,
        k_ready,
        k_empty,
        v_ready,
        v_empty,
        seq_len,
        n_query_blocks,
        n_units,
        causal,
    )
    gl.warp_specialize(
        [
            (_attend_first, attend_args),
            (_attend_second, attend_args),
            (_load_tiles, load_args),
        ],
        [4, 1],
        [CONSUMER_REGS, LOADER_REGS],
    )


def gluon_unavailable() -> str | None:
    """Why the Gluon kernel cannot run here (no GPU, or not a Hopper one), or None."""
    if interpreted():
        return "Gluon kernels have no CPU interpreter: they run on a Hopper GPU only"
    major, minor = torch.cuda.get_device_capability()
    if major != 9:
        return (
            f"the Gluon kernel is written for Hopper (compute capability 9.x); "
            f"{torch.cuda.get_device_name()} is {major}.{minor}"
        )
    return None


@functools.cache
def _multiprocessors(device: torch.device) -> int:
    # The persistent grid: one program per SM (each holds a whole SM's shared memory).
    return torch.cuda.get_device_properties(device).multi_processor_count


def work_units(seq_len: int, heads: int, causal: bool) -> int:
    """How many work units the kernel splits a run into (see ``_unit``): a query block
    of a head each, or under a causal mask a pair of mirrored query blocks."""
    query_blocks = triton.cdiv(seq_len, BLOCK_M)
    return heads * ((query_blocks + 1) // 2 if causal else query_blocks)


def _descriptor(tensor: torch.Tensor, rows: int) -> object:
    # Lazily imported: the host-side descriptor class moved between Gluon releases less
    # than the device side, but it is only needed on a GPU.
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    batch, heads, seq_len, head_dim = tensor.shape
    by_head = tensor.view(batch * heads, seq_len, head_dim)
    element = gl.bfloat16 if tensor.dtype == torch.bfloat16 else gl.float16
    block = [1, rows, head_dim]
    layout = gl.NVMMASharedLayout.get_default_for(block, element)
    return TensorDescriptor(
        by_head, list(by_head.shape), list(by_head.stride()), block, layout
    )


def gluon_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = False,
    sm_scale: float | None = None,
) -> torch.Tensor:
    """The attention forward pass, ``softmax(q k^T * sm_scale) v``, by the Gluon kernel.

    Takes what :func:`kernels.operations.attention.attention` takes, with head_dim 64 or 128, on a
    Hopper GPU; inputs that need a gradient are refused (this kernel has no backward).
    """
    check_attention_inputs(q, k, v)
    head_dim = q.shape[-1]
    if head_dim not in GLUON_HEAD_DIMS:
        raise ValueError(
            f"q has head_dim {head_dim}; the Gluon kernel takes "
            f"{' or '.join(map(str, GLUON_HEAD_DIMS))}"
        )
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        check_no_grad(name, tensor, "the Gluon kernel has a forward pass only")
        if tensor.data_ptr() % 16:
            raise ValueError(
                f"{name} does not start at a 16-byte boundary, as TMA needs"
            )
    causal = check_bool("causal", causal)
    sm_scale = (
        1.0 / math.sqrt(head_dim)
        if sm_scale is None
        else check_real("sm_scale", sm_scale)
    )
    if not math.isfinite(sm_scale):
        raise ValueError(f"sm_scale must be a finite number, got {sm_scale!r}")
    why = gluon_unavailable()
    if why is not None:
        raise RuntimeError(why)
    out = torch.empty_like(q)
    if q.numel() == 0:
        return out
    batch, heads, seq_len, _ = q.shape
    half = BLOCK_M // 2
    units = work_units(seq_len, batch * heads, causal)
    grid = (min(units, _multiprocessors(q.device)),)
    attention_forward_gluon_kernel[grid](
        _descriptor(q, half),
        _descriptor(k, BLOCK_N),
        _descriptor(v, BLOCK_N),
        _descriptor(out, half),
        None,
        seq_len,
        sm_scale * LOG2_E,
        units,
        HEAD_DIM=head_dim,
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        STAGES=STAGES,
        CAUSAL=causal,
        CONSUMER_REGS=CONSUMER_REGS,
        LOADER_REGS=LOADER_REGS,
        num_warps=4,
    )
    return out


def _spec(name: str, causal: bool, head_dim: int = HEAD_DIM) -> BenchmarkSpec:
    # The Triton kernel is the series every benchmark has (it runs everywhere, the
    # interpreter included); the Gluon kernel is measured beside it, with SDPA's cuDNN
    # backend, the fastest of SDPA's backends in the attention page's records. The
    # providers are defined here so that the record's fingerprint covers this module.
    def triton_attention(q, k, v):
        return attention(q, k, v, causal=causal)

    def gluon(q, k, v):
        why = gluon_unavailable()
        if why is not None:
            raise ProviderUnavailable(why)
        return gluon_attention(q, k, v, causal=causal)

    def eager(q, k, v):
        return naive_attention(q, k, v, causal=causal)

    def reference(q, k, v):
        return ReferenceAttention.apply(q, k, v, causal)

    def flops(seq_len: int, dtype: torch.dtype) -> float:
        return forward_flops(seq_len, causal, head_dim)

    return BenchmarkSpec(
        name=name,
        metric="TFLOP/s",
        x_name="sequence length",
        dtype=torch.bfloat16,
        gpu_sizes=RAGGED_LENGTHS,
        interpreter_sizes=[40],
        make_inputs=functools.partial(make_qkv, head_dim=head_dim),
        triton=triton_attention,
        torch_eager=eager,
        work=flops,
        reference=reference,
        baselines={"Gluon": gluon, "SDPA cuDNN": sdpa_baselines(causal)["SDPA cuDNN"]},
        details={
            "batch": BATCH,
            "heads": HEADS,
            "head_dim": head_dim,
            "causal": causal,
        },
    )


GLUON_BENCHMARK = _spec("flash_attention_gluon", causal=False)
GLUON_CAUSAL_BENCHMARK = _spec("flash_attention_gluon_causal", causal=True)
GLUON_D64_BENCHMARK = _spec("flash_attention_gluon_d64", causal=False, head_dim=64)
GLUON_D64_CAUSAL_BENCHMARK = _spec(
    "flash_attention_gluon_d64_causal", causal=True, head_dim=64
)


# Forward only: it refuses inputs that need a gradient.
FAMILY = Family(
    launchers=(
        Launcher(
            gluon_attention,
            lambda device: tiny_randn(
                (1, 1, 16, 64),
                (1, 1, 16, 64),
                (1, 1, 16, 64),
                dtype=torch.float16,
                device=device,
            ),
            (0, 1, 2),
            derivatives=0,
        ),
    ),
)

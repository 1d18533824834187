"""Matrix product on tensor cores: ``C = activation(A @ B)`` in tiles, with grouped ordering.

Each program computes one (BLOCK_M, BLOCK_N) tile of ``C``. It walks along K in steps of
BLOCK_K, loading a tile of ``A`` and a tile of ``B`` and adding their product into a
float32 accumulator with ``tl.dot`` (tensor cores on the GPU). The tile sizes, the
number of warps and the software-pipelining depth are chosen by ``triton.autotune`` from
a few configurations that suit Hopper; the order in which programs take tiles is grouped
so that programs running at the same time share the tiles of ``A`` and ``B`` in L2.

Two kernels share that plan: :func:`matmul_kernel` computes the address of every element
of a tile (it takes any strides), and :func:`matmul_tma_kernel` has Hopper's Tensor
Memory Accelerator copy whole tiles from descriptors (it needs 16-byte-aligned rows, or
for a transposed operand such as a linear layer's ``w.t()``, columns).

The backward pass is two more products by the same kernels, each with a transposed
operand: ``dA = dZ @ B^T`` and ``dB = A^T @ dZ``, where ``dZ`` is the gradient of the
product before the activation.
"""

import dataclasses
from collections.abc import Callable

import torch
import triton
import triton.language as tl
import triton.testing
from triton.tools.tensor_descriptor import TensorDescriptor

from ..declarations.family import (
    TINY_SQUARE,
    Family,
    LaunchCase,
    Launcher,
    bare_launch,
    describe_inputs,
    tiny_randn,
)
from ..declarations.spec import BenchmarkSpec
from ..triton_helpers.checks import check_tensor, needs_grad
from ..triton_helpers.direct_launch import launch
from ..triton_helpers.first_order import first_order_only
from ..triton_helpers.launch import (
    cdiv,
    device_capability,
    launch_tuned,
    multiprocessors,
    row_block,
)
from ..triton_helpers.runtime import bind_cuda_context, interpreted, kernel_device
from ..triton_helpers.tile_dot import tile_dot

MATMUL_DTYPES = (torch.float16, torch.bfloat16)
TRITON_DTYPES = {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}
ACTIVATIONS = ("none", "relu", "gelu")


@triton.jit
def grouped_tile(
    pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr
):
    """The (row, column) of the tile of ``C`` that program ``pid`` computes.

    Programs walk down a group of GROUP_M tile rows column by column, instead of along a
    whole row of tiles: consecutive programs then reuse the same few tiles of ``A`` and
    ``B``, which stay in L2.
    """
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * tiles_n
    first_row = (pid // tiles_per_group) * GROUP_M
    # The last group has fewer rows when tiles_m is not a multiple of GROUP_M.
    rows_in_group = min(tiles_m - first_row, GROUP_M)
    tile_m = first_row + (pid % tiles_per_group) % rows_in_group
    tile_n = (pid % tiles_per_group) // rows_in_group
    return tile_m, tile_n


@triton.jit
def gelu_tanh(x):
    """GELU, tanh approximation, written with a sigmoid: 0.5 * (1 + tanh(z)) =
    sigmoid(2z).

    The sigmoid takes ``exp`` of ``-|2z|`` only, which is at most 1: ``exp(-2z)`` for a
    large negative ``z`` would overflow to infinity (the result would still be right, 0,
    but by way of an overflow). A NaN stays NaN."""
    two_z = 1.5957691216057308 * (x + 0.044715 * x * x * x)
    e = tl.exp(-tl.abs(two_z))
    sigmoid = tl.where(two_z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return x * sigmoid


@triton.jit
def epilogue(acc, ACTIVATION: tl.constexpr):
    """The activation, applied to the float32 tile while it is still in registers, so
    that it costs no extra pass over C."""
    if ACTIVATION == "relu":
        # Not tl.maximum(acc, 0.0): by default it returns 0 for NaN, where torch.relu
        # keeps the NaN. NaN < 0 is false, so this keeps it.
        acc = tl.where(acc < 0.0, 0.0, acc)
    elif ACTIVATION == "gelu":
        acc = gelu_tanh(acc)
    return acc


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    M_BUCKET,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    ACTIVATION: tl.constexpr,
    A_TRANSPOSED: tl.constexpr,
    B_TRANSPOSED: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # The strides give each operand's layout, transposed or not; M_BUCKET, A_TRANSPOSED
    # and B_TRANSPOSED are read by the autotuner only (they are in its key).
    tile_m, tile_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    # Rows of A and columns of B past the edge wrap around (% M, % N): every load stays
    # in bounds without a mask, and the results they feed are never stored.
    rows = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    # Accumulate in float32 whatever the input type: a sum of K products in half
    # precision would lose most of its digits.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        # Only the last step along K can run past the edge; there the padding is zero,
        # which adds nothing to the dot product.
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=ks[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=ks[:, None] < k_left, other=0.0)
        acc = tile_dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    acc = epilogue(acc, ACTIVATION)
    out_rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn
    mask = (out_rows[:, None] < M) & (out_cols[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _descriptor_tiles(
    a_desc,
    b_desc,
    tile_m,
    tile_n,
    k,
    A_TRANSPOSED: tl.constexpr,
    B_TRANSPOSED: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    # Step k of output tile (tile_m, tile_n): the BLOCK_M x BLOCK_K tile of A and the
    # BLOCK_K x BLOCK_N tile of B, each loaded through its descriptor; a transposed
    # operand's descriptor describes its transpose, whose tile is loaded and transposed.
    if A_TRANSPOSED:
        a = tl.trans(a_desc.load([k * BLOCK_K, tile_m * BLOCK_M]))
    else:
        a = a_desc.load([tile_m * BLOCK_M, k * BLOCK_K])
    if B_TRANSPOSED:
        b = tl.trans(b_desc.load([tile_n * BLOCK_N, k * BLOCK_K]))
    else:
        b = b_desc.load([k * BLOCK_K, tile_n * BLOCK_N])
    return a, b


@triton.jit
def _store_tile(
    c,
    acc,
    tile_m,
    tile_n,
    M,
    N,
    stride_cm,
    C_DESCRIPTOR: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # The finished tile into C: through its descriptor, or where C's rows do not start
    # on 16-byte boundaries (an odd N), as the pointer kernel stores it. C is written
    # once, so only this store is unvectorised, not the loads of the loop along K.
    if C_DESCRIPTOR:
        c.store([tile_m * BLOCK_M, tile_n * BLOCK_N], acc)
    else:
        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        tl.store(c + rows[:, None] * stride_cm + cols[None, :], acc, mask=mask)


@triton.jit
def matmul_tma_kernel(
    a_desc,
    b_desc,
    c,
    M,
    N,
    K,
    M_BUCKET,
    stride_cm,
    ACTIVATION: tl.constexpr,
    A_TRANSPOSED: tl.constexpr,
    B_TRANSPOSED: tl.constexpr,
    DTYPE: tl.constexpr,
    C_DESCRIPTOR: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # The same product, with tiles moved by the Tensor Memory Accelerator (Hopper and
    # later): a descriptor knows the matrix's shape and strides, the kernel names a tile
    # by the coordinates of its corner, and the copy engine fetches it into shared
    # memory without the threads computing an address. Parts of a tile outside the
    # matrix read as zero and are not written, so no masks are needed. A descriptor
    # needs contiguous rows. An operand whose columns are contiguous instead
    # (A_TRANSPOSED, B_TRANSPOSED; a linear layer's weight w read as w.t()) comes as a
    # descriptor of its transpose: the kernel loads a tile of that and transposes it.
    # The transpose need not move data on Hopper: its tensor-core instruction reads
    # 16-bit tiles from shared memory in either order.
    tile_m, tile_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a, b = _descriptor_tiles(
            a_desc,
            b_desc,
            tile_m,
            tile_n,
            k,
            A_TRANSPOSED,
            B_TRANSPOSED,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
        )
        acc = tile_dot(a, b, acc)
    acc = epilogue(acc, ACTIVATION)
    # DTYPE is C's type, which C knows too; as an argument it enters the autotune key,
    # which a descriptor does not. M_BUCKET is there for the key alone. C is a
    # descriptor when C_DESCRIPTOR, else a pointer whose rows are stride_cm apart.
    _store_tile(
        c,
        acc.to(DTYPE),
        tile_m,
        tile_n,
        M,
        N,
        stride_cm,
        C_DESCRIPTOR,
        BLOCK_M,
        BLOCK_N,
    )


@triton.jit
def _finish_tile(
    c,
    acc,
    tile_m,
    tile_n,
    M,
    N,
    stride_cm,
    ACTIVATION: tl.constexpr,
    DTYPE: tl.constexpr,
    C_DESCRIPTOR: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # A tile's whole sum, through the activation, rounded and stored into C.
    acc = epilogue(acc, ACTIVATION)
    _store_tile(
        c,
        acc.to(DTYPE),
        tile_m,
        tile_n,
        M,
        N,
        stride_cm,
        C_DESCRIPTOR,
        BLOCK_M,
        BLOCK_N,
    )


@triton.jit
def _add_up_pieces(
    acc,
    partials,
    counters,
    tail_tile,
    piece_slot,
    split,
    c,
    tile_m,
    tile_n,
    M,
    N,
    stride_cm,
    ACTIVATION: tl.constexpr,
    DTYPE: tl.constexpr,
    C_DESCRIPTOR: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # One piece of a split tile: its partial sum goes to memory, and the piece that
    # arrives last adds up all of them, in the order of the pieces (so that the result
    # does not depend on which came last), stores the tile and resets the tile's counter
    # for the next call. The sum is gathered into acc itself, whose own partial is in
    # memory by then: a second tile of float32 would not fit in the registers beside it.
    cells = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tile_cells = BLOCK_M * BLOCK_N
    tl.store(
        partials + piece_slot.to(tl.int64) * tile_cells + cells,
        acc,
        cache_modifier=".cg",
    )
    # Every thread's part of the partial is written before the count says it is there.
    tl.debug_barrier()
    arrived = tl.atomic_add(counters + tail_tile, 1, sem="acq_rel", scope="gpu")
    if arrived == split - 1:
        first = (piece_slot - piece_slot % split).to(tl.int64)
        acc = tl.load(partials + first * tile_cells + cells, cache_modifier=".cg")
        for piece in range(1, split):
            acc += tl.load(
                partials + (first + piece) * tile_cells + cells, cache_modifier=".cg"
            )
        tl.atomic_xchg(counters + tail_tile, 0)
        _finish_tile(
            c,
            acc,
            tile_m,
            tile_n,
            M,
            N,
            stride_cm,
            ACTIVATION,
            DTYPE,
            C_DESCRIPTOR,
            BLOCK_M,
            BLOCK_N,
        )


@triton.jit
def matmul_tma_persistent_kernel(
    a_desc,
    b_desc,
    c,
    M,
    N,
    K,
    M_BUCKET,
    stride_cm,
    partials,
    counters,
    max_split,
    ACTIVATION: tl.constexpr,
    A_TRANSPOSED: tl.constexpr,
    B_TRANSPOSED: tl.constexpr,
    DTYPE: tl.constexpr,
    C_DESCRIPTOR: tl.constexpr,
    PROGRAMS: tl.constexpr,
    SLOTS: tl.constexpr,
    FLATTEN: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # matmul_tma_kernel made persistent: PROGRAMS programs (one or two per SM), each
    # computing every PROGRAMS-th unit of work in turn, instead of one program per tile.
    # FLATTEN asks Triton to pipeline the loop over units and the loop over K as one
    # (as Triton's persistent-matmul tutorial does), so that a unit's first loads
    # overlap the previous unit's epilogue. Triton fuses only loops whose inner bounds
    # do not change with the outer loop (its FuseNestedLoops pass); the split along K
    # makes them change here, so compiled for sm_90 (Triton 3.9) the loops stay two.
    #
    # Wave quantisation: SLOTS tiles (one per SM) run at a time, and when the tiles are
    # not a multiple of SLOTS the last round leaves most SMs idle (3072 x 3072 in tiles
    # of 128 x 256 is 288 tiles: two full rounds on 132 SMs and 24 tiles in a third).
    # Those last tiles are split along K into up to max_split pieces, each a unit of its
    # own, so that the last round is shorter and more SMs share it (a "stream-K" tail);
    # the last piece of a tile to finish adds up the pieces (_add_up_pieces).
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    tail = tiles % SLOTS
    split = tl.minimum(tl.minimum(SLOTS // tl.maximum(tail, 1), max_split), k_steps)
    # No split with less than a full round (every tile already runs at once) or none
    # left.
    if tiles < SLOTS or tail == 0:
        split = 1
    whole = tiles - tail if split > 1 else tiles
    units = whole + (tiles - whole) * split
    for unit in tl.range(tl.program_id(0), units, PROGRAMS, flatten=FLATTEN):
        piece_slot = tl.maximum(unit - whole, 0)
        if unit < whole:
            tile, k_first, k_end = unit, 0, k_steps
        else:
            piece = piece_slot % split
            tile = whole + piece_slot // split
            k_first, k_end = piece * k_steps // split, (piece + 1) * k_steps // split
        tile_m, tile_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_first, k_end):
            a, b = _descriptor_tiles(
                a_desc,
                b_desc,
                tile_m,
                tile_n,
                k,
                A_TRANSPOSED,
                B_TRANSPOSED,
                BLOCK_M,
                BLOCK_N,
                BLOCK_K,
            )
            acc = tile_dot(a, b, acc)
        if unit < whole:
            _finish_tile(
                c,
                acc,
                tile_m,
                tile_n,
                M,
                N,
                stride_cm,
                ACTIVATION,
                DTYPE,
                C_DESCRIPTOR,
                BLOCK_M,
                BLOCK_N,
            )
        else:
            _add_up_pieces(
                acc,
                partials,
                counters,
                tile - whole,
                piece_slot,
                split,
                c,
                tile_m,
                tile_n,
                M,
                N,
                stride_cm,
                ACTIVATION,
                DTYPE,
                C_DESCRIPTOR,
                BLOCK_M,
                BLOCK_N,
            )


@triton.jit
def tile_order_kernel(order_ptr, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    # Tiles of one element: the program writes its own number into the cell of C's tile
    # grid that grouped_tile gives it.
    pid = tl.program_id(0)
    tile_m, tile_n = grouped_tile(pid, tiles_m, tiles_n, 1, 1, GROUP_M)
    tl.store(order_ptr + tile_m * tiles_n + tile_n, pid)


def tile_order(tiles_m: int, tiles_n: int, group_m: int) -> torch.Tensor:
    """Which program computes each tile of ``C``: a (tiles_m, tiles_n) matrix of program
    numbers, made by :func:`grouped_tile` itself (``group_m=1`` is row-major order)."""
    order = torch.full(
        (tiles_m, tiles_n), -1, dtype=torch.int32, device=kernel_device()
    )
    tile_order_kernel[(tiles_m * tiles_n,)](order, tiles_m, tiles_n, GROUP_M=group_m)
    return order


def _config(bm: int, bn: int, bk: int, stages: int, warps: int) -> triton.Config:
    return triton.Config(
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
        num_stages=stages,
        num_warps=warps,
    )


def _tiles(
    block_m: int, block_n: int, block_k: int, a_transposed: bool, b_transposed: bool
) -> tuple[list[int], list[int], list[int]]:
    # The tile shapes of the descriptors of a, b and c. The descriptor of a transposed
    # operand describes its transpose, and so do its tiles.
    return (
        [block_k, block_m] if a_transposed else [block_m, block_k],
        [block_n, block_k] if b_transposed else [block_k, block_n],
        [block_m, block_n],
    )


def _set_descriptor_tiles(args: dict) -> None:
    # A descriptor carries the shape of the tiles it moves: set it to the tile sizes of
    # the configuration about to run (called by autotune before each launch).
    tiles = _tiles(
        args["BLOCK_M"],
        args["BLOCK_N"],
        args["BLOCK_K"],
        args["A_TRANSPOSED"],
        args["B_TRANSPOSED"],
    )
    for name, tile in zip(("a_desc", "b_desc", "c"), tiles, strict=True):
        if isinstance(args[name], TensorDescriptor):  # C may be a pointer instead
            args[name].block_shape = tile


def _with_pre_hook(
    config: triton.Config, pre_hook: Callable[[dict], None] | None
) -> triton.Config:
    """``config`` with ``pre_hook`` run before each launch that uses it."""
    return triton.Config(
        config.kwargs,
        num_warps=config.num_warps,
        num_stages=config.num_stages,
        pre_hook=pre_hook,
    )


# Candidates for Hopper (228 KiB of shared memory per SM, warp-group MMA over 64 rows):
# large tiles with 8 warps for large products, smaller ones for small or skinny ones.
# Each stage of the pipeline holds a tile of A and one of B in shared memory, e.g.
# (128 + 256) x 64 x 2 bytes = 48 KiB for the first; four such stages would not fit
# beside the rest, so the longer pipeline takes thinner steps along K (BLOCK_K = 32).
HOPPER_CONFIGS = [
    _config(128, 256, 64, 3, 8),
    _config(128, 256, 32, 5, 8),
    _config(256, 128, 64, 3, 8),
    _config(128, 128, 64, 4, 8),
    _config(64, 256, 64, 4, 4),
    _config(128, 64, 64, 4, 4),
    _config(64, 128, 128, 4, 4),
    _config(64, 64, 128, 4, 4),
]

# Candidates for products of few rows, such as a decoding step (a few tokens against a
# weight). With M rows, each element of B feeds 2 M operations: for M up to 64 that is
# far below what the tensor cores need per byte, so the product waits on memory, and
# what counts is that enough programs stream B at once. Tiles of 16 or 32 rows (tl.dot
# takes no fewer than 16) spend little tensor-core work on padding rows, and narrow
# tiles make more programs: N / BLOCK_N of them, 64 to 256 at N = 8192 for 132 SMs.
SKINNY_CONFIGS = [
    _config(16, 32, 256, 4, 4),
    _config(16, 64, 128, 4, 4),
    _config(16, 64, 256, 3, 4),
    _config(16, 128, 128, 4, 4),
    _config(32, 64, 128, 4, 4),
    _config(32, 128, 128, 4, 4),
]
SKINNY_ROWS = 64

# Small tiles for the interpreter, where every program runs in Python: several tiles
# (and a partial group) appear in small test matrices. BLOCK_K differs from the other
# two, so that a tile of a transposed operand given the wrong shape fails the tests.
INTERPRETER_CONFIG = triton.Config(
    {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32, "GROUP_M": 2},
    num_stages=1,
    num_warps=4,
)


def _candidates(configs: list[triton.Config], named_args: dict, **kwargs: object):
    """The configurations worth timing for a product of about ``M_BUCKET`` rows: tiles
    no taller than that (a taller tile multiplies padding), and tiles of fewer than 64
    rows only for products of at most SKINNY_ROWS rows, where they pay."""
    # The interpreter would time every candidate in Python: give it one small tile.
    if interpreted():
        return [_with_pre_hook(INTERPRETER_CONFIG, configs[0].pre_hook)]
    rows = named_args["M_BUCKET"]
    return [
        config
        for config in configs
        if config.kwargs["BLOCK_M"] <= max(rows, 16)
        and (config.kwargs["BLOCK_M"] >= 64 or rows <= SKINNY_ROWS)
    ]


def candidate_gpu_time(
    kernel_call: Callable[[], None], quantiles: list[float]
) -> list[float]:
    """How autotune times a candidate configuration: replays of a CUDA graph of many
    calls (``triton.testing.do_bench_cudagraph``), so the time is the GPU's alone.

    With Triton's default, ``do_bench`` (events around each call), two H200 builds of
    the same code chose different configurations for the 1024 x 1024 product, one of
    them far slower than cuBLAS; the cause was not measured. A replay has no Python
    between the kernels, so the host's launch is not in the time. It does not flush the
    L2 between calls, which the candidates share alike."""
    return triton.testing.do_bench_cudagraph(
        kernel_call, rep=TUNING_REP_MS, quantiles=quantiles
    )


# Milliseconds of replays per candidate (do_bench_cudagraph's default).
TUNING_REP_MS = 20

# One configuration per key: the shape, with M rounded up to a power of two (a decoding
# loop whose batch grows by a row does not tune again), the layout of each operand and
# the activation. The autotuner adds the dtype of every argument that has one: tensors
# do, descriptors do not, so the descriptor kernel has DTYPE in its key as well.
TUNING_KEY = ["M_BUCKET", "N", "K", "A_TRANSPOSED", "B_TRANSPOSED", "ACTIVATION"]

tuned_matmul_kernel = triton.autotune(
    configs=HOPPER_CONFIGS + SKINNY_CONFIGS,
    key=TUNING_KEY,
    prune_configs_by={"early_config_prune": _candidates},
    do_bench=candidate_gpu_time,
)(matmul_kernel)

tuned_matmul_tma_kernel = triton.autotune(
    configs=[
        _with_pre_hook(config, _set_descriptor_tiles)
        for config in HOPPER_CONFIGS + SKINNY_CONFIGS
    ],
    key=[*TUNING_KEY, "DTYPE", "C_DESCRIPTOR"],
    prune_configs_by={"early_config_prune": _candidates},
    do_bench=candidate_gpu_time,
)(matmul_tma_kernel)

tuned_matmul_tma_persistent_kernel = triton.autotune(
    configs=[
        _with_pre_hook(config, _set_descriptor_tiles)
        for config in HOPPER_CONFIGS + SKINNY_CONFIGS
    ],
    key=[*TUNING_KEY, "DTYPE", "C_DESCRIPTOR", "PROGRAMS"],
    prune_configs_by={"early_config_prune": _candidates},
    do_bench=candidate_gpu_time,
)(matmul_tma_persistent_kernel)

# Outputs of at least this many values take the persistent kernel where TMA applies,
# with PROGRAMS_PER_SM programs per multiprocessor. On an H200 (bf16) it ran 0.96-1.07x
# cuBLAS from 2048 x 2048 up, square and with a transposed B, where one program per tile
# ran 0.77-0.99x; at 1024 x 1024 with a transposed B it fell to 0.46x, where one program
# per tile kept 0.99x. Two programs per SM beat one at 1024 x 1024 (0.98x against
# 0.42x).
PERSISTENT_MIN_OUTPUT = 2048 * 2048
PROGRAMS_PER_SM = 2
INTERPRETER_SLOTS = 4

# The persistent kernel splits each tile of its last, partial round into at most this
# many pieces along K (see matmul_tma_persistent_kernel). On an H100 (bf16, kernel time,
# as a share of cuBLAS in the same run, the kernel without the split against this one,
# two runs each): 3072 cubed 0.78x to 0.80x, 1536 x 6144 x 4096 0.78x to 0.84x, 5120
# cubed 0.90x to 0.93x. Where the tiles fill whole rounds the extra code can cost a
# little: 4096 cubed 0.93-0.96x to 0.91-0.92x, 4096 x 11008 x 4096 (w.t()) 0.97-1.01x to
# 0.91-0.96x. Against no split in an earlier run, 2000 x 3000 x 4096 went from 0.65x to
# 0.75x; up to 8 pieces did no better than 4, up to 2 worse.
MAX_SPLIT = 4

# The buffers of split tiles, by (device, stream, slots): room for one float32 partial
# tile of the largest candidate per slot (a round of pieces has at most one per slot),
# and one arrival counter per tile of the last round, zero between calls (the last piece
# of a tile resets it). One pair per stream: products on one stream run one after
# another, on two streams they would share counters.
_SPLIT_BUFFERS: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
_LARGEST_TILE = max(
    cfg.kwargs["BLOCK_M"] * cfg.kwargs["BLOCK_N"]
    for cfg in HOPPER_CONFIGS + SKINNY_CONFIGS
)


def tail_split_args(
    device: torch.device, slots: int
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The persistent kernel's ``partials``, ``counters`` and ``max_split`` for a launch
    on ``device``'s current stream. Inside a CUDA graph capture on a stream that has no
    buffers yet, zeroed counters cannot be made (the zeroing would only be captured):
    there the kernel does not split (``max_split`` 1) and the buffers are never read."""
    stream = (
        None if device.type != "cuda" else torch.cuda.current_stream(device).cuda_stream
    )
    key = (device, stream, slots)
    found = _SPLIT_BUFFERS.get(key)
    if found is None:
        if stream is not None and torch.cuda.is_current_stream_capturing():
            unused = torch.empty(1, dtype=torch.int32, device=device)
            return unused.view(torch.float32), unused, 1
        found = _SPLIT_BUFFERS[key] = (
            torch.empty(slots * _LARGEST_TILE, dtype=torch.float32, device=device),
            torch.zeros(slots, dtype=torch.int32, device=device),
        )
    return (*found, MAX_SPLIT)


def transposed(matrix: torch.Tensor) -> bool:
    """Whether ``matrix`` is stored as its transpose: its columns, not its rows, are
    contiguous in memory, as in ``w.t()`` for a contiguous ``w``."""
    return matrix.stride(1) != 1 and matrix.stride(0) == 1


def tma_ready(matrix: torch.Tensor) -> bool:
    """Whether a TMA descriptor can read ``matrix`` where it lies: its rows contiguous,
    not overlapping, and each starting on a 16-byte boundary (the start and the row
    stride both multiples of TMA_ALIGN_BYTES)."""
    return (
        matrix.stride(1) == 1
        and matrix.stride(0) >= matrix.shape[1]
        and matrix.data_ptr() % TMA_ALIGN_BYTES == 0
        and (matrix.stride(0) * matrix.element_size()) % TMA_ALIGN_BYTES == 0
    )


def tma_applies(*matrices: torch.Tensor) -> bool:
    """Whether :func:`matmul` moves tiles with the Tensor Memory Accelerator: on GPUs that
    have one (compute capability 9.0 and up; the interpreter emulates it) and when a
    descriptor can read each operand, as it sees it (a transposed one as its transpose),
    where it lies (:func:`tma_ready`)."""
    if not interpreted() and device_capability(matrices[0].device) < (9, 0):
        return False
    return all(tma_ready(t) for t in matrices)


# A TMA descriptor's rows start on boundaries of this many bytes.
TMA_ALIGN_BYTES = 16

# An operand whose rows TMA cannot read in place (a hidden size that is not a multiple
# of 8 halves, so that rows start 2 bytes off the boundary, or a strided view) is copied
# into a buffer with aligned rows first, when the product uses each of its values at
# least this many times (A's N times, B's M times). Read from unaligned rows, neither
# TMA nor 16-byte vector loads apply and the loads of the loop along K are not
# pipelined; the copy reads and writes the operand once, which a product that reuses
# every value often repays. On an H100 (bf16, kernel time, copies included), squares of
# 1025-4097 ran 1.5-3.5x cuBLAS with the copies and 0.5-1.0x without; against a 4096 x
# 4095 weight, 16 rows ran 0.58-0.74x cuBLAS with the copy and 0.66-1.02x without it,
# 64 rows 0.66-0.68x with it and 0.41-0.61x without, 256 rows 1.1x with it.
ALIGNED_COPY_MIN_REUSE = 64


def aligned_copy(matrix: torch.Tensor) -> torch.Tensor:
    """A copy of ``matrix`` (2-D) whose rows start on TMA_ALIGN_BYTES boundaries: the
    same shape and values, in a buffer whose rows are padded to a multiple of 16 bytes.
    The padding is never read: a descriptor of the copy has the matrix's own shape."""
    rows, cols = matrix.shape
    per_row = TMA_ALIGN_BYTES // matrix.element_size()
    buffer = torch.empty(
        (rows, cdiv(cols, per_row) * per_row), dtype=matrix.dtype, device=matrix.device
    )
    copy = buffer[:, :cols]
    copy.copy_(matrix)
    return copy


def _readable_rows(rows: torch.Tensor, reuse: int) -> torch.Tensor:
    """An operand as a descriptor sees it (``rows``), as the kernels will read it:
    itself where TMA can, else an aligned copy where the product uses each value
    ``reuse`` times, at least ALIGNED_COPY_MIN_REUSE."""
    if tma_ready(rows) or reuse < ALIGNED_COPY_MIN_REUSE:
        return rows
    return aligned_copy(rows)


# A descriptor's fields left at their defaults (padding and the like), whatever this
# version of Triton defines.
_DESCRIPTOR_DEFAULTS = {
    field.name: field.default
    for field in dataclasses.fields(TensorDescriptor)
    if field.default is not dataclasses.MISSING
}


def _descriptor(
    matrix: torch.Tensor,
    shape: tuple[int, ...] | None = None,
    strides: tuple[int, ...] | None = None,
    tile: list[int] | None = None,
) -> TensorDescriptor:
    """``TensorDescriptor.from_tensor(matrix, [1, 1])`` without the checks its constructor
    makes at every call, which tma_ready has made (16-byte alignment, contiguous rows):
    it is built in about half the time, and a launch builds three. The tile shape is a
    placeholder unless ``tile`` is given: the configuration's pre-hook sets the real one.
    ``shape`` and ``strides``, when given, describe the memory at ``matrix`` in place of
    its own (a transposed operand's descriptor describes its transpose)."""
    descriptor = object.__new__(TensorDescriptor)
    descriptor.__dict__.update(
        _DESCRIPTOR_DEFAULTS,
        base=matrix,
        shape=matrix.shape if shape is None else shape,
        strides=matrix.stride() if strides is None else strides,
        block_shape=[1, 1] if tile is None else tile,
    )
    return descriptor


@dataclasses.dataclass(frozen=True)
class _TmaPlan:
    """A TMA launch of one shape and layout as its first call worked it out (the
    autotuner's choice, the grid, each descriptor's shape, strides and tile, which
    operands were copied to aligned rows): what a later call of the same shape and
    layout needs besides the matrices themselves."""

    kernel: triton.runtime.JITFunction
    grid: tuple[int]
    # a, b and c; c's is None where C is written through a pointer (rows not aligned).
    views: tuple[tuple[tuple[int, ...], tuple[int, ...], list[int]] | None, ...]
    copied: tuple[bool, bool]  # a, b
    sizes: tuple[int, int, int, int, int]  # M, N, K, M's bucket, C's row stride
    options: dict[str, object]
    # The persistent kernel's SLOTS (it takes the buffers of split tiles), else None.
    slots: int | None

    def reads_in_place(self, a: torch.Tensor, b: torch.Tensor) -> bool:
        """Whether the operands this plan reads in place start on 16-byte boundaries, as
        when it was made (the rest of what tma_ready checks is in the plan's key)."""
        in_place = (
            t for t, copied in zip((a, b), self.copied, strict=True) if not copied
        )
        return not any(t.data_ptr() % TMA_ALIGN_BYTES for t in in_place)

    def run(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
        """Launch the planned kernel for ``a @ b`` into ``c``."""
        descriptors = [
            _descriptor(aligned_copy(t) if copied else t, *view)
            for t, copied, view in zip(
                self._as_read(a, b), self.copied, self.views, strict=False
            )
        ]
        c_view = self.views[2]
        c_arg = c if c_view is None else _descriptor(c, *c_view)
        split = () if self.slots is None else tail_split_args(c.device, self.slots)
        launch(
            self.kernel,
            self.grid,
            *descriptors,
            c_arg,
            *self.sizes,
            *split,
            **self.options,
        )

    def _as_read(
        self, a: torch.Tensor, b: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # Each operand as its descriptor sees it; a view in place needs only its start.
        return (
            a.t() if self.options["A_TRANSPOSED"] else a,
            b.t() if self.options["B_TRANSPOSED"] else b,
        )


# The plans by (a's shape, b's shape, a's strides, b's strides, dtype, device, activation,
# whether aligned copies are allowed).
_tma_plans: dict[tuple, _TmaPlan] = {}


def _plan_tma(
    tuner: triton.runtime.Autotuner,
    chosen: tuple[triton.Config, dict[str, object]],
    matrices: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    copied: tuple[bool, bool],
    sizes: tuple[int, int, int, int, int],
    programs: int | None,
    constexprs: dict[str, object],
) -> _TmaPlan:
    # The plan of the launch just made with ``chosen``; ``matrices`` as the descriptors
    # saw them, ``programs`` the persistent kernel's (None: one program per tile).
    options = chosen[1]
    M, N = sizes[0], sizes[1]
    tiles_m, tiles_n = cdiv(M, options["BLOCK_M"]), cdiv(N, options["BLOCK_N"])
    grid = (
        tiles_m * tiles_n if programs is None else min(programs, tiles_m * tiles_n),
    )
    tiles = _tiles(
        options["BLOCK_M"],
        options["BLOCK_N"],
        options["BLOCK_K"],
        constexprs["A_TRANSPOSED"],
        constexprs["B_TRANSPOSED"],
    )
    views = [
        (tuple(t.shape), tuple(t.stride()), tile)
        for t, tile in zip(matrices, tiles, strict=True)
    ]
    if not constexprs["C_DESCRIPTOR"]:
        views[2] = None
    slots = constexprs.get("SLOTS")
    return _TmaPlan(
        tuner.fn, grid, tuple(views), copied, sizes, {**constexprs, **options}, slots
    )


def _grid(M: int, N: int):
    return lambda meta: (cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"]),)


def _persistent_grid(M: int, N: int, programs: int):
    # No more programs than tiles.
    return lambda meta: (
        min(programs, cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"])),
    )


def check_matmul_inputs(
    a: object, b: object, activation: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Check the operands of :func:`matmul`; raise an error naming the bad argument."""
    # Any strides: the kernels read transposed and sliced matrices in place.
    a = check_tensor("a", a, MATMUL_DTYPES, contiguous=False)
    b = check_tensor("b", b, MATMUL_DTYPES, contiguous=False)
    for name, tensor in (("a", a), ("b", b)):
        if tensor.dim() != 2:
            raise ValueError(
                f"{name} has shape {tuple(tensor.shape)}; it must be a matrix (2-D)"
            )
    if a.dtype != b.dtype:
        raise TypeError(
            f"a is {str(a.dtype).removeprefix('torch.')} but b is "
            f"{str(b.dtype).removeprefix('torch.')}: cast one of them"
        )
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"a is {tuple(a.shape)} and b is {tuple(b.shape)}: a's columns must match b's rows"
        )
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"activation is {activation!r}; it must be one of {', '.join(ACTIVATIONS)}"
        )
    return a, b


def matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    activation: str = "none",
    *,
    aligned_copies: bool = True,
) -> torch.Tensor:
    """``activation(a @ b)`` by :func:`matmul_tma_kernel` (or its persistent form) or
    :func:`matmul_kernel`, in the dtype of the inputs.

    ``a`` (M, K) and ``b`` (K, N): float16 or bfloat16 matrices of one dtype on the
    device Triton runs on, with any strides (``x @ w.t()`` reads ``w`` in place; an
    operand whose rows do not start on 16-byte boundaries is copied to aligned rows
    where the product repays it, see ALIGNED_COPY_MIN_REUSE; ``aligned_copies=False``
    reads every operand in place). ``activation``: ``"none"``, ``"relu"`` or ``"gelu"``
    (the tanh approximation), applied to the float32 result before it is rounded.
    Differentiable: the gradients are products by the same kernels (see
    :class:`MatmulFunction`).
    """
    a, b = check_matmul_inputs(a, b, activation)
    if needs_grad(a, b):
        return MatmulFunction.apply(a, b, activation, aligned_copies)
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    # Both TMA paths below, a planned launch and a first one, build descriptors, which
    # need the thread bound to the device's context (once per thread: a cheap check
    # after).
    bind_cuda_context(a.device)
    # A shape and layout launched before through TMA: its plan, if the operands it reads
    # in place start on 16-byte boundaries as TMA needs (the rest is in the key).
    key = (
        a.shape,
        b.shape,
        a.stride(),
        b.stride(),
        a.dtype,
        a.device,
        activation,
        aligned_copies,
    )
    plan = _tma_plans.get(key)
    if plan is not None and plan.reads_in_place(a, b):
        plan.run(a, b, c)
        return c
    if M == 0 or N == 0:
        return c
    if K == 0:
        # An empty sum is zero, and both activations map zero to zero.
        return c.zero_()
    layout = {"A_TRANSPOSED": transposed(a), "B_TRANSPOSED": transposed(b)}
    # Each operand as a descriptor sees it (a transposed one as its transpose), copied
    # to aligned rows where TMA cannot read it in place and the product repays the copy.
    a_seen = a.t() if layout["A_TRANSPOSED"] else a
    b_seen = b.t() if layout["B_TRANSPOSED"] else b
    a_rows, b_rows = (
        (a_seen, b_seen)
        if not aligned_copies
        else (_readable_rows(a_seen, reuse=N), _readable_rows(b_seen, reuse=M))
    )
    copied = (a_rows is not a_seen, b_rows is not b_seen)
    sizes = (M, N, K, row_block(M), c.stride(0))
    if tma_applies(a_rows, b_rows):
        c_descriptor = tma_ready(c)
        descriptors = [_descriptor(t) for t in (a_rows, b_rows)]
        c_arg = _descriptor(c) if c_descriptor else c
        constexprs = {
            "ACTIVATION": activation,
            "DTYPE": TRITON_DTYPES[a.dtype],
            "C_DESCRIPTOR": c_descriptor,
            **layout,
        }
        split: tuple = ()
        if M * N >= PERSISTENT_MIN_OUTPUT:
            # The interpreter plays a GPU of four SMs, one program on each.
            slots = INTERPRETER_SLOTS if interpreted() else multiprocessors(a.device)
            programs = slots if interpreted() else PROGRAMS_PER_SM * slots
            constexprs |= {"PROGRAMS": programs, "SLOTS": slots, "FLATTEN": True}
            tuner, grid = (
                tuned_matmul_tma_persistent_kernel,
                _persistent_grid(M, N, programs),
            )
            split = tail_split_args(a.device, slots)
        else:
            programs, tuner, grid = None, tuned_matmul_tma_kernel, _grid(M, N)
        chosen = launch_tuned(
            tuner, grid, *descriptors, c_arg, *sizes, *split, **constexprs
        )
        _tma_plans[key] = _plan_tma(
            tuner, chosen, (a_rows, b_rows, c), copied, sizes, programs, constexprs
        )
    else:
        a_read = a_rows.t() if layout["A_TRANSPOSED"] else a_rows
        b_read = b_rows.t() if layout["B_TRANSPOSED"] else b_rows
        launch_tuned(
            tuned_matmul_kernel,
            _grid(M, N),
            a_read,
            b_read,
            c,
            *sizes[:4],
            *a_read.stride(),
            *b_read.stride(),
            *c.stride(),
            ACTIVATION=activation,
            **layout,
        )
    return c


class MatmulFunction(torch.autograd.Function):
    """Autograd wiring: for ``C = activation(Z)``, ``Z = A @ B``, the backward pass
    applies the activation's derivative to ``dC``, giving ``dZ``, then computes ``dA =
    dZ @ B^T`` and ``dB = A^T @ dZ`` with :func:`matmul`; the transposes are views,
    which the kernels read in place, and each gradient is laid out as its operand."""

    @staticmethod
    def forward(ctx, a, b, activation, aligned_copies):
        # Autograd runs this with grad mode off: matmul launches the kernel.
        ctx.activation, ctx.aligned_copies = activation, aligned_copies
        if activation == "gelu":
            # GELU's derivative needs its input Z, which the fused epilogue never
            # writes: here the kernel writes Z and PyTorch applies GELU, as in eager
            # PyTorch.
            z = matmul(a, b, aligned_copies=aligned_copies)
            ctx.save_for_backward(a, b, z)
            return torch.nn.functional.gelu(z, approximate="tanh")
        c = matmul(a, b, activation, aligned_copies=aligned_copies)
        # ReLU's derivative is 1 where its output is positive, 0 elsewhere: the output
        # is all it needs (and without an activation nothing is needed).
        ctx.save_for_backward(a, b, c)
        return c

    @staticmethod
    @first_order_only("matmul")
    def backward(ctx, dc):
        a, b, kept = ctx.saved_tensors
        if ctx.activation == "relu":
            # As torch.relu's gradient: zero where the output is not positive (a NaN
            # output passes the gradient on).
            dz = dc.masked_fill(kept <= 0, 0)
        elif ctx.activation == "gelu":
            dz = torch.ops.aten.gelu_backward(dc, kept, approximate="tanh")
        else:
            dz = dc
        copies = ctx.aligned_copies
        da = (
            _product_laid_out_as(a, dz, b.t(), copies)
            if ctx.needs_input_grad[0]
            else None
        )
        db = (
            _product_laid_out_as(b, a.t(), dz, copies)
            if ctx.needs_input_grad[1]
            else None
        )
        return da, db, None, None


def _product_laid_out_as(
    like: torch.Tensor, left: torch.Tensor, right: torch.Tensor, aligned_copies: bool
) -> torch.Tensor:
    """``left @ right``, stored transposed when ``like`` is, as PyTorch's own matrix
    product lays out its gradients: the gradient of ``w.t()`` then comes out as a
    transposed view of a contiguous matrix, and ``w.grad`` needs no copy."""
    if transposed(like):
        return matmul(right.t(), left.t(), aligned_copies=aligned_copies).t()
    return matmul(left, right, aligned_copies=aligned_copies)


def torch_matmul(
    a: torch.Tensor, b: torch.Tensor, activation: str = "none"
) -> torch.Tensor:
    """The same in PyTorch: ``torch.matmul`` (cuBLAS on the GPU), then the activation."""
    c = torch.matmul(a, b)
    if activation == "relu":
        return torch.relu(c)
    if activation == "gelu":
        return torch.nn.functional.gelu(c, approximate="tanh")
    return c


def make_square(
    n: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two random n x n matrices, scaled so that the product's entries are of order one."""
    a = torch.randn(n, n, dtype=dtype, device=device, generator=generator)
    b = torch.randn(n, n, dtype=dtype, device=device, generator=generator) / n**0.5
    return a, b


def square_flops(n: int, dtype: torch.dtype) -> int:
    """A product of two n x n matrices: n^2 dot products of length n, a multiply and an add each."""
    return 2 * n**3


# The skinny shape: few rows (tokens) against a large square weight, as in decoding.
SKINNY_NK = 8192


def make_skinny(
    m: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """An (m, SKINNY_NK) activation and an (SKINNY_NK, SKINNY_NK) weight (smaller on the CPU)."""
    nk = SKINNY_NK if device.type == "cuda" else 96
    a = torch.randn(m, nk, dtype=dtype, device=device, generator=generator)
    b = torch.randn(nk, nk, dtype=dtype, device=device, generator=generator) / nk**0.5
    return a, b


def skinny_flops(m: int, dtype: torch.dtype) -> int:
    """An (m, K) by (K, N) product with K = N = SKINNY_NK."""
    return 2 * m * SKINNY_NK * SKINNY_NK


def make_square_nt(
    n: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """As :func:`make_square`, with ``b`` a linear layer's weight ``w`` (out features by
    in features, contiguous) read as ``w.t()``: a transposed view, not a copy."""
    a = torch.randn(n, n, dtype=dtype, device=device, generator=generator)
    weight = torch.randn(n, n, dtype=dtype, device=device, generator=generator) / n**0.5
    return a, weight.t()


# The linear layers of a 7B-parameter transformer (hidden size 4096, MLP 11008, as in
# Llama 2 7B), applied to LINEAR_TOKENS tokens: ``x @ w.t()`` with ``w`` (N, K).
LINEAR_TOKENS = 4096
LINEAR_K = 4096


def make_linear(
    n: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Activations (LINEAR_TOKENS, LINEAR_K) and a linear layer's weight (n, LINEAR_K) read
    as ``w.t()`` (smaller on the CPU: 40 tokens of 48 features)."""
    m, k = (LINEAR_TOKENS, LINEAR_K) if device.type == "cuda" else (40, 48)
    x = torch.randn(m, k, dtype=dtype, device=device, generator=generator)
    weight = torch.randn(n, k, dtype=dtype, device=device, generator=generator) / k**0.5
    return x, weight.t()


def linear_flops(n: int, dtype: torch.dtype) -> int:
    """An (LINEAR_TOKENS, LINEAR_K) by (LINEAR_K, n) product."""
    return 2 * LINEAR_TOKENS * n * LINEAR_K


CUBLAS = {"cuBLAS": torch.matmul}


def matmul_in_place(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """:func:`matmul` reading every operand where it lies, with no aligned copy: how the
    course's kernels fare on unaligned rows without one (a series of the unaligned
    benchmarks, beside the launcher's own)."""
    return matmul(a, b, aligned_copies=False)


# The unaligned benchmarks' extra series: the same kernels without the copy.
IN_PLACE = {"Triton, no copy": matmul_in_place}

BENCHMARK = BenchmarkSpec(
    name="matmul",
    metric="TFLOP/s",
    x_name="M = N = K",
    dtype=torch.bfloat16,
    gpu_sizes=[512, 1024, 2048, 3072, 4096, 6144, 8192],
    interpreter_sizes=[16, 45],
    make_inputs=make_square,
    triton=matmul,
    torch_eager=torch.matmul,
    work=square_flops,
    baselines=CUBLAS,
)

SKINNY_BENCHMARK = BenchmarkSpec(
    name="matmul_skinny",
    metric="TFLOP/s",
    x_name="M",
    dtype=torch.bfloat16,
    gpu_sizes=[16, 64, 256, 1024, 4096],
    interpreter_sizes=[16],
    make_inputs=make_skinny,
    triton=matmul,
    torch_eager=torch.matmul,
    work=skinny_flops,
    baselines=CUBLAS,
    details={"N": SKINNY_NK, "K": SKINNY_NK},
)

# x @ w.t(), the layout of torch.nn.Linear: cuBLAS reads the transposed weight in place
# too, so neither side copies it.
NT_BENCHMARK = BenchmarkSpec(
    name="matmul_nt",
    metric="TFLOP/s",
    x_name="M = N = K",
    dtype=torch.bfloat16,
    gpu_sizes=[1024, 2048, 4096, 8192],
    interpreter_sizes=[16, 45],
    make_inputs=make_square_nt,
    triton=matmul,
    torch_eager=torch.matmul,
    work=square_flops,
    baselines=CUBLAS,
    details={"layout": "a @ w.t(), w a contiguous N x K matrix"},
)

# Sizes that are not multiples of 8: every row of A, B and C starts off a 16-byte
# boundary, so no descriptor reads them in place (see ALIGNED_COPY_MIN_REUSE).
UNALIGNED_BENCHMARK = BenchmarkSpec(
    name="matmul_unaligned",
    metric="TFLOP/s",
    x_name="M = N = K",
    dtype=torch.bfloat16,
    gpu_sizes=[1025, 2047, 3071, 4097, 6143],
    interpreter_sizes=[45],
    make_inputs=make_square,
    triton=matmul,
    torch_eager=torch.matmul,
    work=square_flops,
    baselines=CUBLAS,
    extra_baselines=IN_PLACE,
)

UNALIGNED_NT_BENCHMARK = BenchmarkSpec(
    name="matmul_unaligned_nt",
    metric="TFLOP/s",
    x_name="M = N = K",
    dtype=torch.bfloat16,
    gpu_sizes=[1025, 2047, 3071, 4097, 6143],
    interpreter_sizes=[45],
    make_inputs=make_square_nt,
    triton=matmul,
    torch_eager=torch.matmul,
    work=square_flops,
    baselines=CUBLAS,
    details={"layout": "a @ w.t(), w a contiguous N x K matrix"},
)

# N: the output features of each layer: the attention output (4096), the MLP's up and
# gate projections (11008 each), the fused query, key and value (12288), the language-
# model head of a 32000-token vocabulary, and of GPT-2's 50257, an odd one.
LINEAR_BENCHMARK = BenchmarkSpec(
    name="matmul_linear",
    metric="TFLOP/s",
    x_name="N",
    dtype=torch.bfloat16,
    gpu_sizes=[4096, 11008, 12288, 32000, 50257],
    interpreter_sizes=[29],
    make_inputs=make_linear,
    triton=matmul,
    torch_eager=torch.matmul,
    work=linear_flops,
    baselines=CUBLAS,
    details={
        "M": LINEAR_TOKENS,
        "K": LINEAR_K,
        "layout": "x @ w.t(), w a contiguous N x K matrix",
    },
)


def launch_cost_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.matmul.matmul` against ``torch.matmul`` (cuBLAS). The bare launch
    goes through ``triton.autotune`` as the launcher's does: finding the configuration
    tuned for this shape is part of Triton's launch."""
    a, b = tiny_randn(
        (TINY_SQUARE, TINY_SQUARE),
        (TINY_SQUARE, TINY_SQUARE),
        dtype=torch.float16,
        device=device,
    )
    c = torch.empty_like(a)
    grid = _grid(TINY_SQUARE, TINY_SQUARE)
    # Both operands row-major, as the launcher finds them; its key also takes M's bucket.
    layout = {"A_TRANSPOSED": False, "B_TRANSPOSED": False}
    m_bucket = triton.next_power_of_2(TINY_SQUARE)
    if tma_applies(a, b, c):
        # Placeholder tile shapes, as in the launcher: the configuration's pre-hook sets them.
        descriptors = [TensorDescriptor.from_tensor(t, [1, 1]) for t in (a, b, c)]
        bare = bare_launch(
            tuned_matmul_tma_kernel,
            grid,
            *descriptors,
            TINY_SQUARE,
            TINY_SQUARE,
            TINY_SQUARE,
            m_bucket,
            c.stride(0),
            ACTIVATION="none",
            DTYPE=TRITON_DTYPES[a.dtype],
            C_DESCRIPTOR=True,
            **layout,
        )
    else:
        bare = bare_launch(
            tuned_matmul_kernel,
            grid,
            a,
            b,
            c,
            TINY_SQUARE,
            TINY_SQUARE,
            TINY_SQUARE,
            m_bucket,
            *a.stride(),
            *b.stride(),
            *c.stride(),
            ACTIVATION="none",
            **layout,
        )
    return LaunchCase(
        inputs=describe_inputs(a=a, b=b),
        triton=lambda: matmul(a, b),
        bare=bare,
        torch=lambda: torch.matmul(a, b),
        bare_out=c,
    )


FAMILY = Family(
    launchers=(
        Launcher(
            matmul,
            lambda device: tiny_randn(
                (8, 16), (16, 8), dtype=torch.float16, device=device
            ),
            (0, 1),
        ),
    ),
    launch_costs={"matmul": launch_cost_case},
)

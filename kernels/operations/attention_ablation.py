"""The causal attention forward with one of its techniques taken out at a time: the
ablation that the attention page measures, to show what each technique gives.

The course's forward kernel (:func:`kernels.operations.attention.attention_forward_kernel`) does
four things for causal attention that a plainer kernel would not: it skips the key
blocks right of the diagonal, masks only the blocks that need a mask, starts the longest
query blocks first, and runs with tiles, warps and pipeline stages chosen by a sweep.
:func:`ablation_forward_kernel` is the same kernel, built from the same pieces
(``_attend_to_keys``, ``_load``, ``_store``), with a compile-time switch per technique;
each series of :data:`ABLATION_BENCHMARK` turns one of them off, or changes one launch
setting, and keeps the rest. A series with nothing taken out checks that the rebuilt
kernel runs as fast as the course's.
"""

import functools
from dataclasses import dataclass, replace

import torch
import triton
import triton.language as tl

from ..declarations.family import (
    Family,
    Launcher,
    tiny_randn,
)
from ..declarations.spec import BenchmarkSpec
from ..triton_helpers.checks import check_no_grad
from ..triton_helpers.direct_launch import launch
from ..triton_helpers.launch import cdiv
from .attention import (
    BATCH,
    HEAD_DIM,
    HEADS,
    LOG2_E,
    ReferenceAttention,
    Tiles,
    _attend_to_keys,
    _load,
    _store,
    attention,
    check_attention_inputs,
    forward_flops,
    make_qkv,
    naive_attention,
    sdpa_baselines,
    tiles_for,
)


@triton.jit
def ablation_forward_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    out_ptr,
    seq_len,
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    EVEN: tl.constexpr,
    SKIP: tl.constexpr,
    MASK_ONLY_WHERE_NEEDED: tl.constexpr,
    LONGEST_FIRST: tl.constexpr,
):
    # Causal attention only; grid: (query blocks, batch x heads), as the course's kernel.
    block_m = (
        tl.num_programs(0) - 1 - tl.program_id(0) if LONGEST_FIRST else tl.program_id(0)
    )
    head_offset = tl.program_id(1).to(tl.int64) * seq_len * HEAD_DIM
    q_ptr += head_offset
    k_ptr += head_offset
    v_ptr += head_offset
    out_ptr += head_offset
    rows = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = _load(
        q_ptr + rows[:, None] * HEAD_DIM + dims[None, :], rows[:, None] < seq_len, EVEN
    )
    row_max = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    diagonal = block_m * BLOCK_M
    # Without skipping, every key block of the sequence is read, and the causal mask
    # zeroes the blocks right of the diagonal.
    end = diagonal + BLOCK_M if SKIP else tl.cdiv(seq_len, BLOCK_N) * BLOCK_N
    if MASK_ONLY_WHERE_NEEDED:
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
            end,
            HEAD_DIM,
            BLOCK_M,
            BLOCK_N,
            True,
            EVEN,
        )
    else:
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
            end,
            HEAD_DIM,
            BLOCK_M,
            BLOCK_N,
            True,
            False,
        )
    out = acc / row_sum[:, None]
    _store(
        out_ptr + rows[:, None] * HEAD_DIM + dims[None, :],
        out,
        rows[:, None] < seq_len,
        EVEN,
    )


@dataclass(frozen=True)
class Ablation:
    """What one series changes: a technique switched off, or other launch settings."""

    skip: bool = True
    mask_only_where_needed: bool = True
    longest_first: bool = True
    # None: the course's settings for the forward kernel at this head dim.
    tiles: Tiles | None = None


# The series of the ablation, by name: each takes one thing out of the course's kernel.
ABLATIONS = {
    "rebuilt, nothing taken out": Ablation(),
    "no block skipping": Ablation(skip=False),
    "a mask on every block": Ablation(mask_only_where_needed=False),
    "shortest blocks first": Ablation(longest_first=False),
    "one pipeline stage": Ablation(
        tiles=replace(tiles_for("forward", HEAD_DIM), num_stages=1)
    ),
    "64 x 64 tiles, 4 warps": Ablation(tiles=Tiles(64, 64, 4, 3)),
}


def ablated_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    ablation: Ablation = Ablation(),
) -> torch.Tensor:
    """Causal attention of (batch, heads, seq_len, head_dim) ``q``, ``k``, ``v`` by
    :func:`ablation_forward_kernel`, with ``ablation``'s changes: a benchmark's series.
    It takes what :func:`kernels.operations.attention.attention` takes; inputs that need a gradient
    are refused (the ablation times the forward pass only)."""
    check_attention_inputs(q, k, v)
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        check_no_grad(name, tensor, "the ablation's kernel has a forward pass only")
    if not isinstance(ablation, Ablation):
        raise TypeError(f"ablation must be an Ablation, got {type(ablation).__name__}")
    if q.numel() == 0:
        return torch.empty_like(q)
    batch, heads, seq_len, head_dim = q.shape
    tiles = ablation.tiles or tiles_for("forward", head_dim)
    out = torch.empty_like(q)
    even = seq_len % tiles.block_m == 0 and seq_len % tiles.block_n == 0
    launch(
        ablation_forward_kernel,
        (cdiv(seq_len, tiles.block_m), batch * heads),
        q,
        k,
        v,
        out,
        seq_len,
        head_dim**-0.5 * LOG2_E,
        HEAD_DIM=head_dim,
        BLOCK_M=tiles.block_m,
        BLOCK_N=tiles.block_n,
        EVEN=even,
        SKIP=ablation.skip,
        MASK_ONLY_WHERE_NEEDED=ablation.mask_only_where_needed,
        LONGEST_FIRST=ablation.longest_first,
        num_warps=tiles.num_warps,
        num_stages=tiles.num_stages,
    )
    return out


def _series(ablation: Ablation):
    def run(q, k, v):
        return ablated_attention(q, k, v, ablation)

    return run


def _course_kernel(q, k, v):
    return attention(q, k, v, causal=True)


def _eager(q, k, v):
    return naive_attention(q, k, v, causal=True)


def _reference(q, k, v):
    return ReferenceAttention.apply(q, k, v, True)


def _flops(seq_len: int, dtype: torch.dtype) -> float:
    return forward_flops(seq_len, True)


ABLATION_BENCHMARK = BenchmarkSpec(
    name="flash_attention_ablation",
    metric="TFLOP/s",
    x_name="sequence length",
    dtype=torch.bfloat16,
    # A whole number of 128-token blocks, a ragged length, and a long one.
    gpu_sizes=[2048, 5000, 8192],
    interpreter_sizes=[40],
    make_inputs=functools.partial(make_qkv, head_dim=HEAD_DIM),
    triton=_course_kernel,
    torch_eager=_eager,
    work=_flops,
    reference=_reference,
    baselines={
        **{name: _series(ablation) for name, ablation in ABLATIONS.items()},
        "SDPA cuDNN": sdpa_baselines(True)["SDPA cuDNN"],
    },
    details={"batch": BATCH, "heads": HEADS, "head_dim": HEAD_DIM, "causal": True},
)


# Forward only: the series refuse inputs that need a gradient.
FAMILY = Family(
    launchers=(
        Launcher(
            ablated_attention,
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

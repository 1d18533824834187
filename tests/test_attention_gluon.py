"""The Gluon attention forward (kernels.operations.attention_gluon): compiled for sm_90a on any
machine (Gluon has no CPU interpreter), its inputs checked before any GPU is needed,
and, on a Hopper GPU, its output and log-sum-exp compared with float64 attention."""

import math
import re

import pytest
import torch
from triton.experimental.gluon import language as gl

from kernels.operations.attention import LOG2_E
from kernels.operations.attention_gluon import (
    BLOCK_M,
    BLOCK_N,
    CONSUMER_REGS,
    LOADER_REGS,
    STAGES,
    gluon_attention,
    gluon_unavailable,
)
from kernels.triton_helpers.compiler_output import compile_for_gpu
from kernels.triton_helpers.runtime import kernel_device

KERNEL = "kernels.operations.attention_gluon:attention_forward_gluon_kernel"


def descriptor_type(rows: int, head_dim: int) -> str:
    # How Triton names a Gluon tensor descriptor argument: dtype, block, shared layout.
    block = [1, rows, head_dim]
    layout = gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16)
    return f"tensordesc<bf16[{', '.join(map(str, block))}],{layout!r}>"


def ptx_for(head_dim: int, causal: bool) -> str:
    half = BLOCK_M // 2
    signature = {
        "q_desc": descriptor_type(half, head_dim),
        "k_desc": descriptor_type(BLOCK_N, head_dim),
        "v_desc": descriptor_type(BLOCK_N, head_dim),
        "o_desc": descriptor_type(half, head_dim),
        "lse_ptr": "*fp32",
        "seq_len": "i32",
        "qk_scale": "fp32",
        "n_units": "i32",
    }
    constexprs = {"HEAD_DIM": head_dim, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N,
                  "STAGES": STAGES, "CAUSAL": causal, "CONSUMER_REGS": CONSUMER_REGS,
                  "LOADER_REGS": LOADER_REGS}  # fmt: skip
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    return compile_for_gpu(KERNEL, signature, constexprs, num_warps=4)["ptx"]


@pytest.mark.parametrize(("head_dim", "causal"), [(64, False), (128, True)])
def test_the_kernel_compiles_for_hopper_with_its_schedule(head_dim: int, causal: bool) -> None:
    ptx = ptx_for(head_dim, causal)
    # Asynchronous tensor-core products, waited for one of two (S while P V runs)...
    assert "wgmma.mma_async" in ptx
    assert re.search(r"wgmma\.wait_group\.sync\.aligned\s+1;", ptx)
    # ... TMA copies of tiles, and warpgroups that re-divide the registers.
    assert "cp.async.bulk.tensor.3d" in ptx
    assert re.search(rf"setmaxnreg\.inc\.sync\.aligned\.u32\s+{CONSUMER_REGS};", ptx)
    assert re.search(rf"setmaxnreg\.dec\.sync\.aligned\.u32\s+{LOADER_REGS};", ptx)


def qkv(batch: int, heads: int, seq_len: int, head_dim: int, **options: object):
    generator = torch.Generator(device=kernel_device()).manual_seed(seq_len)
    return [torch.randn(batch, heads, seq_len, head_dim, device=kernel_device(),
                        dtype=torch.bfloat16, generator=generator, **options)
            for _ in range(3)]  # fmt: skip


def test_inputs_are_checked_before_a_gpu_is_needed() -> None:
    q, k, v = qkv(1, 1, 8, 32)
    with pytest.raises(ValueError, match="head_dim 32; the Gluon kernel takes 64 or 128"):
        gluon_attention(q, k, v)
    q, k, v = qkv(1, 1, 8, 64, requires_grad=True)
    with pytest.raises(RuntimeError, match="forward pass only"):
        gluon_attention(q, k, v)
    q, k, v = qkv(1, 1, 8, 64)
    with pytest.raises(TypeError, match="causal"):
        gluon_attention(q, k, v, causal="yes")
    with pytest.raises(ValueError, match="sm_scale"):
        gluon_attention(q, k, v, sm_scale=float("inf"))


@pytest.mark.skipif(gluon_unavailable() is None, reason="covers a machine without Hopper")
def test_without_a_hopper_gpu_it_says_why() -> None:
    q, k, v = qkv(1, 1, 8, 64)
    with pytest.raises(RuntimeError, match="Hopper"):
        gluon_attention(q, k, v)


def reference(q, k, v, causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    q, k, v = (t.double().cpu() for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
    return torch.softmax(scores, -1) @ v, torch.logsumexp(scores, -1) * LOG2_E


@pytest.mark.skipif(gluon_unavailable() is not None, reason=str(gluon_unavailable()))
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("seq_len", "head_dim"), [(64, 128), (300, 128), (1500, 64), (257, 64)])
def test_matches_float64_attention_at_ragged_lengths(seq_len, head_dim, causal) -> None:
    from kernels.operations import attention_gluon

    q, k, v = qkv(2, 3, seq_len, head_dim)
    out = gluon_attention(q, k, v, causal=causal)
    expected, _ = reference(q, k, v, causal)
    assert (out.double().cpu() - expected).abs().max() < 2e-2
    # The log-sum-exp the kernel keeps for a backward pass, through the kernel itself.
    lse = torch.empty(q.shape[:3], device=q.device, dtype=torch.float32)
    first = out
    out = torch.empty_like(q)
    half = BLOCK_M // 2
    # Fewer programs than tiles: each program walks several.
    attention_gluon.attention_forward_gluon_kernel[(2,)](
        attention_gluon._descriptor(q, half), attention_gluon._descriptor(k, BLOCK_N),
        attention_gluon._descriptor(v, BLOCK_N), attention_gluon._descriptor(out, half), lse,
        seq_len, LOG2_E / math.sqrt(head_dim), attention_gluon.work_units(seq_len, 6, causal),
        HEAD_DIM=head_dim, BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N, STAGES=STAGES, CAUSAL=causal, CONSUMER_REGS=CONSUMER_REGS,
        LOADER_REGS=LOADER_REGS, num_warps=4,
    )  # fmt: skip
    _, expected_lse = reference(q, k, v, causal)
    assert (lse.double().cpu() - expected_lse).abs().max() < 1e-3
    assert torch.equal(out, first)

"""FlashAttention forward and backward against float64 at awkward shapes (sequence
lengths that are not a multiple of the 16-query blocks the interpreter uses, one token,
causal with one block), the float64 reference itself, and rejected inputs (scalar
arguments of the wrong kind among them)."""

import math

import numpy as np
import pytest
import torch
from kernel_inputs import OTHER_DEVICE, assert_close_to_float64, randn

from kernels.harness.bench import RELATIVE_TOLERANCE, check, relative_error
from kernels.operations import attention, attention_gluon

HALF = (torch.float16, torch.bfloat16)
SHAPES = {
    "one-block": (1, 2, 16, 64),
    "odd-length": (1, 1, 37, 64),
    "head-dim-128": (2, 1, 50, 128),
    "one-token": (1, 1, 1, 32),
}


def qkv_and_grad(shape: tuple[int, ...], dtype: torch.dtype) -> list[torch.Tensor]:
    return [randn(*shape, dtype=dtype, seed=seed) for seed in range(4)]


def float64_gradients(fn, inputs: list[torch.Tensor], causal: bool):
    """The output and the gradients of Q, K, V of ``fn`` evaluated on float64 copies."""
    *qkv, grad_out = [t.double() for t in inputs]
    leaves = [t.requires_grad_() for t in qkv]
    out = fn(*leaves, causal)
    out.backward(grad_out)
    return out.detach(), [t.grad for t in leaves]


def assert_gradient_close(grad: torch.Tensor, reference: torch.Tensor, dtype: torch.dtype) -> None:
    # With one token the softmax is constant: the exact gradients of Q and K are zero.
    if reference.abs().max() == 0:
        assert grad.abs().max() <= 1e-6
    else:
        assert_close_to_float64(grad, reference, dtype)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_forward_and_backward_match_float64(shape, dtype: torch.dtype, causal: bool) -> None:
    inputs = qkv_and_grad(shape, dtype)
    *qkv, grad_out = inputs
    leaves = [t.clone().requires_grad_() for t in qkv]
    out = attention.attention(*leaves, causal=causal)
    out.backward(grad_out)
    ref_out, ref_grads = float64_gradients(attention.naive_attention, inputs, causal)
    assert out.shape == shape and out.dtype == dtype
    assert_close_to_float64(out, ref_out, dtype)
    for leaf, ref_grad in zip(leaves, ref_grads, strict=True):
        assert_gradient_close(leaf.grad, ref_grad, dtype)


def test_causal_output_ignores_future_keys() -> None:
    q, k, v, _ = qkv_and_grad((1, 1, 40, 64), torch.float16)
    out = attention.attention(q, k, v, causal=True)
    k2, v2 = k.clone(), v.clone()
    k2[..., 20:, :] += 5.0
    v2[..., 20:, :] -= 5.0
    changed = attention.attention(q, k2, v2, causal=True)
    assert torch.equal(out[..., :20, :], changed[..., :20, :])
    assert not torch.equal(out[..., 20:, :], changed[..., 20:, :])


def test_custom_scale_matches_float64() -> None:
    q, k, v, _ = qkv_and_grad((1, 1, 24, 32), torch.float16)
    out = attention.attention(q, k, v, sm_scale=0.5)
    scores = (q.double() @ k.double().transpose(-2, -1)) * 0.5
    assert_close_to_float64(out, torch.softmax(scores, -1) @ v.double(), torch.float16)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_reference_used_at_scale_matches_autograd_of_the_formula(causal: bool) -> None:
    # The benchmark checks every provider against ReferenceAttention (one head at a time,
    # hand-written gradients); here it is checked against autograd of the plain formula.
    inputs = [t.double() for t in qkv_and_grad((2, 3, 19, 16), torch.float32)]
    out, grads = float64_gradients(attention.ReferenceAttention.apply, inputs, causal)
    ref_out, ref_grads = float64_gradients(attention.naive_attention, inputs, causal)
    assert relative_error(out, ref_out) < 1e-12
    for grad, ref_grad in zip(grads, ref_grads, strict=True):
        assert relative_error(grad, ref_grad) < 1e-12


@pytest.mark.parametrize(
    "spec",
    [
        attention.BENCHMARK,
        attention.CAUSAL_BENCHMARK,
        attention.BACKWARD_BENCHMARK,
        attention.CAUSAL_BACKWARD_BENCHMARK,
    ],
    ids=lambda s: s.name,
)
def test_benchmark_inputs_pass_the_harness_check(spec) -> None:
    for size in spec.interpreter_sizes:
        assert check(spec, size).relative_error <= RELATIVE_TOLERANCE[spec.dtype]


def test_empty_sequence_gives_an_empty_result() -> None:
    q = randn(1, 2, 0, 64, dtype=torch.float16)
    assert attention.attention(q, q, q).shape == (1, 2, 0, 64)


def half(*shape: int) -> torch.Tensor:
    return randn(*shape, dtype=torch.float16)


GOOD = (1, 2, 8, 64)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: (half(*GOOD).to(OTHER_DEVICE), half(*GOOD), half(*GOOD)), ValueError, r"^q is on"),
        (lambda: (half(*GOOD), half(1, 2, 64, 8).transpose(-1, -2), half(*GOOD)), ValueError,
         r"k is not contiguous"),
        (lambda: (half(*GOOD), half(*GOOD), randn(*GOOD)), TypeError, r"v has dtype float32"),
        (lambda: (half(2, 8, 64), half(2, 8, 64), half(2, 8, 64)), ValueError,
         r"q has shape \(2, 8, 64\); it must be \(batch, heads, seq_len, head_dim\)"),
        (lambda: (half(*GOOD), half(1, 2, 9, 64), half(*GOOD)), ValueError,
         r"q has shape \(1, 2, 8, 64\) but k has shape \(1, 2, 9, 64\)"),
        (lambda: (half(1, 2, 8, 48),) * 3, ValueError, r"head_dim 48; this kernel takes 16, 32"),
    ],
    ids=["device", "strided", "dtype", "3d", "lengths", "head-dim"],
)  # fmt: skip
def test_rejects_bad_input(make, error, message) -> None:
    with pytest.raises(error, match=message):
        attention.attention(*make())


def test_default_scale_is_one_over_root_head_dim() -> None:
    q, k, v, _ = qkv_and_grad((1, 1, 16, 64), torch.float16)
    assert torch.equal(
        attention.attention(q, k, v), attention.attention(q, k, v, sm_scale=1 / math.sqrt(64))
    )


def test_gpu_tiles_fit_the_causal_loop_bounds() -> None:
    # The unmasked loop stops at the diagonal, a multiple of the owner's block: the
    # visiting block must divide it, or one block would straddle the diagonal unmasked.
    for (kernel, _), tiles in attention.GPU_TILES.items():
        owner, visitor = tiles.block_m, tiles.block_n
        if kernel == "backward_kv":
            owner, visitor = visitor, owner
        assert owner % visitor == 0, (kernel, tiles)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"causal": "false"}, TypeError, r"causal must be True or False, got str 'false'"),
        ({"causal": 0}, TypeError, r"causal must be True or False, got int 0"),
        ({"causal": None}, TypeError, r"causal must be True or False, got NoneType None"),
        ({"sm_scale": "0.125"}, TypeError,
         r"sm_scale must be a number \(int or float\), got str '0.125'"),
        ({"sm_scale": True}, TypeError, r"sm_scale must be a number \(int or float\), got bool"),
        ({"sm_scale": "tensor"}, TypeError,
         r"sm_scale must be a number \(int or float\), got a tensor of shape \(\)"),
        ({"sm_scale": float("inf")}, ValueError, r"sm_scale must be a finite number, got inf"),
    ],
    ids=["causal-str", "causal-int", "causal-none", "scale-str", "scale-bool", "scale-tensor",
         "scale-inf"],
)  # fmt: skip
def test_rejects_scalar_arguments_of_the_wrong_kind(kwargs, error, message) -> None:
    if kwargs.get("sm_scale") == "tensor":
        kwargs = {"sm_scale": torch.tensor(0.125)}
    q = half(*GOOD)
    with pytest.raises(error, match=message):
        attention.attention(q, q, q, **kwargs)


def test_takes_numpy_scalars() -> None:
    q, k, v, _ = qkv_and_grad((1, 1, 16, 64), torch.float16)
    expected = attention.attention(q, k, v, causal=True, sm_scale=0.125)
    got = attention.attention(q, k, v, causal=np.True_, sm_scale=np.float32(0.125))
    assert torch.equal(got, expected)


def test_empty_sequence_keeps_the_inputs_in_the_graph() -> None:
    q, k, v = (randn(1, 2, 0, 64, dtype=torch.float16).requires_grad_() for _ in range(3))
    out = attention.attention(q, k, v)
    assert out.grad_fn is not None
    out.sum().backward()
    assert q.grad.shape == q.shape and k.grad.shape == k.shape


# Tiles as on the GPU, where a query block and a key block differ in size (forward and
# dQ: queries a multiple of keys; dK/dV the other way round), small enough for the
# interpreter.
UNEQUAL_TILES = {
    "forward": attention.Tiles(32, 16, 4, 1),
    "backward_q": attention.Tiles(32, 16, 4, 1),
    "backward_kv": attention.Tiles(16, 32, 4, 1),
}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("seq_len", [64, 83, 97], ids=["whole-blocks", "ragged-83", "ragged-97"])
def test_whole_blocks_unmasked_and_the_ragged_last_block_masked_match_float64(
    seq_len: int, causal: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Several whole key and query blocks, which the kernels walk without a mask, then a
    # partial last block with one; under a causal mask the query blocks run longest
    # first. Lengths of 83 and 97 leave 3 and 1 queries, 3 and 1 keys, in the last block.
    monkeypatch.setattr(attention, "tiles_for", lambda kernel, head_dim: UNEQUAL_TILES[kernel])
    attention.forward_launch.cache_clear()
    inputs = qkv_and_grad((1, 2, seq_len, 32), torch.float16)
    *qkv, grad_out = inputs
    leaves = [t.clone().requires_grad_() for t in qkv]
    out = attention.attention(*leaves, causal=causal)
    out.backward(grad_out)
    attention.forward_launch.cache_clear()
    ref_out, ref_grads = float64_gradients(attention.naive_attention, inputs, causal)
    assert_close_to_float64(out, ref_out, torch.float16)
    for leaf, ref_grad in zip(leaves, ref_grads, strict=True):
        assert_gradient_close(leaf.grad, ref_grad, torch.float16)


@pytest.mark.parametrize(
    "spec",
    [
        attention.D64_BACKWARD_BENCHMARK,
        attention.D64_CAUSAL_BACKWARD_BENCHMARK,
        attention_gluon.GLUON_D64_BENCHMARK,
        attention_gluon.GLUON_D64_CAUSAL_BENCHMARK,
    ],
    ids=lambda spec: spec.name,
)
def test_the_head_dim_64_benchmarks_make_and_count_head_dim_64(spec) -> None:
    # Their inputs, their work and their record's fixed dimensions all say 64, and the
    # work is half that of head dim 128 at the same length (the products scale with d).
    generator = torch.Generator().manual_seed(0)
    inputs = spec.make_inputs(40, torch.float32, torch.device("cpu"), generator)
    assert {tensor.shape[-1] for tensor in inputs} == {64}
    assert spec.details["head_dim"] == 64
    causal = spec.details["causal"]
    times = 2.5 if spec.backward else 1.0
    assert spec.work(1500, torch.bfloat16) == pytest.approx(
        attention.forward_flops(1500, causal, attention.HEAD_DIM) / 2 * times
    )
    assert {1024, 1500, 5000, 8192} <= set(spec.gpu_sizes)

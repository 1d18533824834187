"""Dropout: bit-exact against a Philox written in PyTorch, seeds, autograd, bad input
(float64, and p and seed of the wrong kind, among it)."""

import numpy as np
import pytest
import torch
from kernel_inputs import DEVICE, OTHER_DEVICE, randn

from kernels.operations import dropout


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("n_elements", [1, 127, 2048, 5000])
def test_keeps_exactly_the_reference_mask(n_elements: int, dtype: torch.dtype) -> None:
    x = randn(n_elements, dtype=dtype)
    out = dropout.dropout(x, 0.4, seed=7)
    keep = dropout.keep_mask(n_elements, 0.4, 7, DEVICE)
    assert torch.equal(out != 0, keep & (x != 0))
    expected = torch.where(keep, x.double() / 0.6, 0.0)
    tolerance = torch.finfo(dtype).eps * expected.abs()
    assert torch.all((out.double() - expected).abs() <= tolerance)


def test_reference_philox_matches_the_published_test_vector() -> None:
    # Random123's known-answer test for Philox4x32-10 with all-zero counter and key.
    words = dropout.philox4x32(torch.zeros(1, dtype=torch.int64), seed=0)
    assert [int(w) for w in words] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_same_seed_same_mask_other_seed_other_mask() -> None:
    x = randn(10_000)
    first, again, other = (dropout.dropout(x, 0.5, seed) for seed in (3, 3, 4))
    assert torch.equal(first, again)
    assert not torch.equal(first, other)


def test_share_of_zeros_is_close_to_p() -> None:
    out = dropout.dropout(torch.ones(200_000, device=DEVICE), 0.25, seed=11)
    share = (out == 0).float().mean().item()
    # Binomial standard deviation is about 0.001 here: allow five of them.
    assert abs(share - 0.25) < 0.005


def test_a_draw_of_exactly_zero_is_kept_at_p_zero() -> None:
    # The words 0 and 2**32 - 1 both give the uniform draw 0.0 (probability 2**-31 per
    # element): p = 0 must keep them, p = 1 drop everything.
    extremes = torch.tensor([0, 2**32 - 1, 2**31 - 1, 2**31], dtype=torch.int64)
    assert dropout.keeps(extremes, 0.0).all()
    assert not dropout.keeps(extremes, 1.0).any()


def test_p_zero_and_one() -> None:
    x = randn(1000)
    assert torch.equal(dropout.dropout(x, 0.0, seed=1), x)
    assert torch.equal(dropout.dropout(x, 1.0, seed=1), torch.zeros_like(x))


def test_backward_applies_the_same_mask() -> None:
    x = randn(3000).requires_grad_()
    out = dropout.dropout(x, 0.3, seed=5)
    dy = randn(3000, seed=1)
    out.backward(dy)
    keep = dropout.keep_mask(3000, 0.3, 5, DEVICE)
    torch.testing.assert_close(x.grad, torch.where(keep, dy / 0.7, 0.0))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"p": 1.5}, ValueError, r"p must be a probability between 0 and 1, got 1.5"),
        ({"p": -0.1}, ValueError, r"p must be a probability"),
        ({"seed": -1}, ValueError, r"seed must be an integer from 0 to 2\*\*63 - 1, got -1"),
        ({"p": float("nan")}, ValueError, r"p must be a probability between 0 and 1, got nan"),
        ({"p": "0.5"}, TypeError, r"p must be a number \(int or float\), got str '0.5'"),
        ({"p": None}, TypeError, r"p must be a number \(int or float\), got NoneType None"),
        ({"p": True}, TypeError, r"p must be a number \(int or float\), got bool True"),
        ({"p": "tensor"}, TypeError, r"p must be a number \(int or float\), got a tensor"),
        ({"seed": 1.5}, TypeError, r"seed must be an integer, got float 1.5"),
        ({"seed": True}, TypeError, r"seed must be an integer, got bool True"),
        ({"seed": "7"}, TypeError, r"seed must be an integer, got str '7'"),
        ({"x": "meta"}, ValueError, r"^x is on"),
        ({"x": "int"}, TypeError, r"x has dtype int64"),
        ({"x": "float64"}, TypeError,
         r"x has dtype float64; this kernel takes float16, bfloat16, float32$"),
        ({"x": "strided"}, ValueError, r"x is not contiguous"),
    ],
    ids=["p-high", "p-low", "seed-negative", "p-nan", "p-str", "p-none", "p-bool", "p-tensor",
         "seed-float", "seed-bool", "seed-str", "device", "dtype", "float64", "strided"],
)  # fmt: skip
def test_rejects_bad_input(kwargs, error, message) -> None:
    inputs = {"meta": randn(8).to(OTHER_DEVICE), "int": torch.arange(8, device=DEVICE),
              "float64": randn(8, dtype=torch.float64), "strided": randn(16)[::2]}  # fmt: skip
    if kwargs.get("p") == "tensor":
        kwargs = {**kwargs, "p": torch.tensor(0.5)}
    x = inputs.get(kwargs.get("x"), randn(8))
    with pytest.raises(error, match=message):
        dropout.dropout(x, kwargs.get("p", 0.5), kwargs.get("seed", 1))


def test_takes_numpy_numbers_for_p_and_seed() -> None:
    x = randn(3000)
    expected = dropout.dropout(x, 0.25, seed=9)
    for p, seed in ((np.float32(0.25), np.int64(9)), (np.float64(0.25), np.uint32(9))):
        assert torch.equal(dropout.dropout(x, p, seed), expected)
    assert torch.equal(dropout.dropout(x, 1, 9), torch.zeros_like(x))

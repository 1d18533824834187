"""Cross-entropy: loss and gradient against float64 (logits far from zero too), ignored
rows, gradcheck, bad input."""

import math

import numpy as np
import pytest
import torch
from kernel_inputs import DEVICE, HALF_AND_SINGLE, OTHER_DEVICE, assert_close_to_float64, randn

from kernels.operations import cross_entropy


def targets_for(n_rows: int, n_classes: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator(device=DEVICE).manual_seed(seed)
    return torch.randint(0, n_classes, (n_rows,), device=DEVICE, generator=generator)


@pytest.mark.parametrize("dtype", HALF_AND_SINGLE, ids=str)
@pytest.mark.parametrize(
    ("n_rows", "n_classes"),
    [
        (1, 1),
        (1, 1000),
        (6, 781),
        (3, cross_entropy.BLOCK_SIZE + 77),
        (2, 2 * cross_entropy.BLOCK_SIZE),
    ],
    ids=["1x1", "one-row", "odd-vocab", "longer-than-a-tile", "whole-tiles"],
)
def test_loss_and_gradient_match_float64(n_rows: int, n_classes: int, dtype: torch.dtype) -> None:
    logits = (randn(n_rows, n_classes, dtype=dtype) * 3).requires_grad_()
    targets = targets_for(n_rows, n_classes)
    loss = cross_entropy.cross_entropy(logits, targets)
    loss.backward()
    logits64 = logits.detach().double().requires_grad_()
    reference = torch.nn.functional.cross_entropy(logits64, targets)
    reference.backward()
    assert_close_to_float64(loss.detach(), reference.detach(), torch.float32)
    assert_close_to_float64(logits.grad, logits64.grad, dtype)


def test_a_tile_of_minus_infinity_adds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # Masked logits (-inf) filling the first tiles of a row must not turn its loss into
    # NaN: the running maximum is -inf there, and exp(-inf - -inf) would be NaN.
    monkeypatch.setattr(cross_entropy, "BLOCK_SIZE", 16)
    logits = randn(2, 50, dtype=torch.float64)
    logits[:, :20] = -math.inf
    targets = torch.tensor([25, 49], device=DEVICE)
    loss = cross_entropy.cross_entropy(logits, targets)
    assert math.isclose(
        loss.item(), torch.nn.functional.cross_entropy(logits, targets).item(), rel_tol=1e-12
    )


def test_ignored_rows_count_for_nothing() -> None:
    logits = randn(5, 13, dtype=torch.float64).requires_grad_()
    targets = torch.tensor([1, -100, 12, 0, -100], device=DEVICE)
    loss = cross_entropy.cross_entropy(logits, targets)
    assert math.isclose(
        loss.item(), torch.nn.functional.cross_entropy(logits, targets).item(), rel_tol=1e-12
    )
    assert torch.autograd.gradcheck(lambda z: cross_entropy.cross_entropy(z, targets), (logits,))
    loss.backward()
    assert torch.all(logits.grad[[1, 4]] == 0)


def test_mean_over_more_rows_than_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    # The mean kernel reads MEAN_BLOCK rows at a time; with more rows it loops, and the
    # sum and the count of rows that count must carry across blocks (and skip padding).
    monkeypatch.setattr(cross_entropy, "MEAN_BLOCK", 16)
    logits = randn(37, 11, dtype=torch.float64)
    targets = targets_for(37, 11)
    targets[[3, 20, 36]] = cross_entropy.IGNORE_INDEX
    loss = cross_entropy.cross_entropy(logits, targets)
    assert math.isclose(
        loss.item(), torch.nn.functional.cross_entropy(logits, targets).item(), rel_tol=1e-12
    )


def test_unchecked_out_of_range_target_gives_nan_not_another_rows_logit() -> None:
    logits = randn(3, 10)
    loss = cross_entropy.cross_entropy(
        logits, torch.tensor([1, 10, 2], device=DEVICE), check_targets=False
    )
    assert math.isnan(loss.item())


@pytest.mark.parametrize(
    ("logits", "targets", "error", "message"),
    [
        ("ok", [1, 10, 2], ValueError, r"targets holds 10, outside 0\.\.9"),
        ("ok", [1, -5, 2], ValueError, r"targets holds -5, outside 0\.\.9"),
        ("ok", [1, 2], ValueError, r"targets has shape \(2,\); it must be \(3,\)"),
        ("ok", "float", TypeError, r"targets has dtype float32; this kernel takes int64"),
        (
            "3d",
            [1, 2, 3],
            ValueError,
            r"logits has shape \(3, 1, 10\); it must be \(rows, classes\)",
        ),
        ("meta", [1, 2, 3], ValueError, r"^logits is on"),
        ("int", [1, 2, 3], TypeError, r"logits has dtype int64"),
    ],
    ids=["too-high", "negative", "count", "float-targets", "3d", "device", "int-logits"],
)
def test_rejects_bad_input(logits, targets, error, message) -> None:
    logits = {"ok": randn(3, 10), "3d": randn(3, 1, 10), "meta": randn(3, 10).to(OTHER_DEVICE),
              "int": torch.ones(3, 10, dtype=torch.int64, device=DEVICE)}[logits]  # fmt: skip
    if targets == "float":
        targets = torch.ones(3, device=DEVICE)
    else:
        targets = torch.tensor(targets, device=DEVICE)
    with pytest.raises(error, match=message):
        cross_entropy.cross_entropy(logits, targets)


def loss_and_gradient(logits: torch.Tensor, targets: torch.Tensor):
    """The loss and the logits' gradient from the kernels, and PyTorch's in float64."""
    leaf = logits.detach().requires_grad_()
    loss = cross_entropy.cross_entropy(leaf, targets)
    loss.backward()
    leaf64 = logits.detach().double().requires_grad_()
    reference = torch.nn.functional.cross_entropy(leaf64, targets)
    reference.backward()
    return loss.detach(), leaf.grad, reference.detach(), leaf64.grad


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the interpreter's exp() overflowing
@pytest.mark.parametrize("offset", [1e4, 1e6, -1e6])
def test_logits_far_from_zero(offset: float, monkeypatch: pytest.MonkeyPatch) -> None:
    # Softmax does not change when every logit of a row moves by the same amount; the
    # logsumexp does, and rounded to float32 near 1e6 it is off by up to 1/32.
    monkeypatch.setattr(cross_entropy, "BLOCK_SIZE", 64)
    logits = randn(4, 200, seed=1) * 3 + offset
    loss, grad, reference_loss, reference_grad = loss_and_gradient(logits, targets_for(4, 200))
    assert_close_to_float64(grad, reference_grad, torch.float32)
    assert_close_to_float64(loss, reference_loss, torch.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_rows_of_plus_and_minus_1e30(dtype: torch.dtype) -> None:
    logits = torch.tensor(
        [[1e30, -1e30, 0.0, 1e30], [-1e30, -1e30, 5.0, -1e30], [1e30, 1e30 * 0.5, -1e30, 3.0]],
        dtype=dtype, device=DEVICE,
    )  # fmt: skip
    targets = torch.tensor([0, 2, 3], device=DEVICE)
    loss, grad, reference_loss, reference_grad = loss_and_gradient(logits, targets)
    # Each row of the gradient is softmax minus one-hot: it sums to 0.
    zeros = torch.zeros(3, dtype=torch.float64, device=grad.device)
    assert torch.allclose(grad.double().sum(dim=1), zeros)
    assert_close_to_float64(grad, reference_grad, torch.float32)
    assert_close_to_float64(loss, reference_loss, torch.float32)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"ignore_index": -100.0}, TypeError, r"ignore_index must be an integer, got float -100.0"),
        ({"ignore_index": "-100"}, TypeError, r"ignore_index must be an integer, got str '-100'"),
        ({"ignore_index": None}, TypeError, r"ignore_index must be an integer, got NoneType"),
        ({"ignore_index": True}, TypeError, r"ignore_index must be an integer, got bool True"),
        ({"check_targets": "no"}, TypeError, r"check_targets must be True or False, got str 'no'"),
    ],
    ids=["float", "str", "none", "bool", "check-targets"],
)
def test_rejects_scalar_arguments_of_the_wrong_kind(kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        cross_entropy.cross_entropy(randn(3, 10), targets_for(3, 10), **kwargs)


def test_takes_a_numpy_integer_for_ignore_index() -> None:
    logits, targets = randn(4, 10, dtype=torch.float64), torch.tensor([1, 7, 7, 0], device=DEVICE)
    loss = cross_entropy.cross_entropy(logits, targets, np.int64(7))
    expected = torch.nn.functional.cross_entropy(logits, targets, ignore_index=7)
    assert math.isclose(loss.item(), expected.item(), rel_tol=1e-12)


@pytest.mark.parametrize("ignore_index", [2**63, 2**64 + 3, -(2**63) - 1])
def test_an_ignore_index_outside_int64_is_refused_by_name(ignore_index: int) -> None:
    # Before: 2**64 + 3 failed inside Triton ("integer to be specialized too large").
    with pytest.raises(ValueError, match="ignore_index must fit in int64, the targets' dtype"):
        cross_entropy.cross_entropy(randn(3, 10), targets_for(3, 10), ignore_index=ignore_index)

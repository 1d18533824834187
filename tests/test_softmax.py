"""Softmax against float64 at awkward shapes, both kernel paths, and rejected inputs."""

import pytest
import torch
import triton
from kernel_inputs import DEVICE, HALF_AND_SINGLE, OTHER_DEVICE, assert_close_to_float64, randn

from kernels.harness.bench import check
from kernels.operations import softmax
from kernels.triton_helpers.launch import resident_programs


@pytest.mark.parametrize("dtype", HALF_AND_SINGLE, ids=str)
@pytest.mark.parametrize(
    "shape",
    [(1, 1), (1, 1000), (7, 781), (5, 1024), (3, 4, 1025)],
    ids=["1x1", "one-row", "odd-row", "row-fills-tile", "3d"],
)
def test_matches_float64(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    x = randn(*shape, dtype=dtype, seed=sum(shape))
    out = softmax.softmax(x)
    assert out.shape == x.shape and out.dtype == dtype
    assert_close_to_float64(out, torch.softmax(x.double(), dim=-1), dtype)


@pytest.mark.parametrize("n_cols", [20000, softmax.PREFETCH_FROM], ids=["odd", "fills-tile"])
def test_prefetch_path_for_32k_rows(n_cols: int) -> None:
    # More rows than programs, so each program prefetches past its first row, and one
    # program's last prefetch falls past the last row.
    assert softmax.PREFETCH_FROM <= triton.next_power_of_2(n_cols) <= softmax.MAX_FUSED_COLS
    # (5 rows in the interpreter; on a GPU, one more than its resident programs.)
    n_rows = resident_programs(2**31, softmax.PREFETCH_WARPS, DEVICE) + 1
    assert resident_programs(n_rows, softmax.PREFETCH_WARPS, DEVICE) < n_rows
    x = randn(n_rows, n_cols, seed=n_cols)
    assert_close_to_float64(softmax.softmax(x), torch.softmax(x.double(), dim=-1), torch.float32)


@pytest.mark.parametrize(
    "n_cols",
    [softmax.MAX_FUSED_COLS + 4465, softmax.MAX_FUSED_COLS + softmax.LOOP_BLOCK],
    ids=["odd", "whole-tiles"],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_looped_path_for_rows_longer_than_one_tile(n_cols: int, dtype: torch.dtype) -> None:
    # Three rows: with an odd length, each starts at another offset from a 16-byte
    # boundary, so the three-part walk meets heads and tails of several lengths.
    x = randn(3, n_cols, dtype=dtype) * 10
    assert_close_to_float64(softmax.softmax(x), torch.softmax(x.double(), dim=-1), dtype)


def test_large_values_do_not_overflow() -> None:
    x = torch.tensor([[1000.0, 1001.0, 999.0]], device=DEVICE)
    out = softmax.softmax(x)
    assert torch.isfinite(out).all()
    assert_close_to_float64(out, torch.softmax(x.double(), dim=-1), torch.float32)


def test_no_rows_gives_an_empty_result() -> None:
    assert softmax.softmax(randn(0, 5)).shape == (0, 5)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: randn(4, 8).to(OTHER_DEVICE), ValueError, r"^x is on"),
        (lambda: randn(4, 8).t(), ValueError, r"x is not contiguous"),
        (lambda: torch.arange(8, device=DEVICE), TypeError, r"x has dtype int64"),
        (lambda: randn(4, 0), ValueError, r"needs rows of at least one value"),
        (lambda: torch.tensor(1.0, device=DEVICE), ValueError, r"needs rows of at least one value"),
    ],
    ids=["device", "strided", "dtype", "empty-rows", "scalar"],
)
def test_rejects_bad_input(make, error, message) -> None:
    with pytest.raises(error, match=message):
        softmax.softmax(make())


def softmax_grad_and_float64_reference(x: torch.Tensor, dy: torch.Tensor):
    """The gradient of x through the Triton softmax, and PyTorch's in float64."""
    leaf = x.detach().requires_grad_()
    softmax.softmax(leaf).backward(dy)
    leaf64 = x.detach().double().requires_grad_()
    torch.softmax(leaf64, dim=-1).backward(dy.double())
    return leaf.grad, leaf64.grad


@pytest.mark.parametrize("reload", [True, False], ids=["read-twice", "held"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize(
    "shape", [(1, 1), (7, 781), (5, 1024), (3, 2, 1025)], ids=["1x1", "odd-row", "fills-tile", "3d"]
)
def test_backward_matches_float64(
    shape: tuple[int, ...], dtype: torch.dtype, reload: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bfloat16 is left to the harness check below: the interpreter rounds it by truncation.
    # Both ways of the one-tile kernel: the row read twice, or held through the sum.
    monkeypatch.setattr(softmax, "BACKWARD_RELOAD", reload)
    x, dy = randn(*shape, dtype=dtype, seed=1), randn(*shape, dtype=dtype, seed=2)
    grad, reference = softmax_grad_and_float64_reference(x, dy)
    assert grad.shape == x.shape and grad.dtype == dtype
    if shape[-1] == 1:
        # A row of one value has softmax 1 whatever the value: the exact gradient is 0.
        assert (grad == 0).all()
    else:
        assert_close_to_float64(grad, reference, dtype)


@pytest.mark.parametrize("reload", [True, False], ids=["read-twice", "held"])
@pytest.mark.parametrize(
    "shape", [(7, 781), (8, 1024), (3, 5)], ids=["odd-rows-and-row", "fills-tiles", "one-program"]
)
def test_backward_with_several_rows_per_program(
    shape: tuple[int, int], reload: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Four rows to a program: 7 rows leave the last program one row short, 8 fill both.
    monkeypatch.setattr(softmax, "BACKWARD_RELOAD", reload)
    monkeypatch.setattr(softmax, "BACKWARD_TILE", 4 * triton.next_power_of_2(shape[-1]))
    x, dy = randn(*shape, seed=5), randn(*shape, seed=6)
    grad, reference = softmax_grad_and_float64_reference(x, dy)
    assert_close_to_float64(grad, reference, torch.float32)


@pytest.mark.parametrize(
    "n_cols",
    [
        softmax.BACKWARD_MAX_FUSED_COLS + 4465,
        2 * softmax.BACKWARD_LOOP_BLOCK + softmax.BACKWARD_MAX_FUSED_COLS,
    ],
    ids=["odd", "whole-tiles"],
)
def test_backward_of_long_rows_takes_the_looped_kernel(n_cols: int) -> None:
    assert not softmax.backward_fits_one_tile(n_cols)
    x, dy = randn(2, n_cols, seed=3) * 10, randn(2, n_cols, seed=4)
    grad, reference = softmax_grad_and_float64_reference(x, dy)
    assert_close_to_float64(grad, reference, torch.float32)


@pytest.mark.parametrize(
    ("n_cols", "one_tile"),
    [
        (softmax.BACKWARD_MAX_MASKED_COLS, True),
        (softmax.BACKWARD_MAX_MASKED_COLS + 1, False),
        (softmax.BACKWARD_MAX_FUSED_COLS, True),
        (softmax.BACKWARD_MAX_FUSED_COLS + 1, False),
    ],
)
def test_backward_holds_masked_rows_in_one_tile_only_up_to_the_masked_limit(
    n_cols: int, one_tile: bool
) -> None:
    # A vocabulary of 50257 values in a 65536-value tile is looped: masked wide tiles
    # were measured slower than the looped kernel (the comment above the limits).
    assert softmax.BACKWARD_MAX_MASKED_COLS < 50257 <= softmax.BACKWARD_MAX_FUSED_COLS
    assert softmax.backward_fits_one_tile(n_cols) is one_tile
    assert softmax.backward_fits_one_tile(50257) is False


@pytest.mark.parametrize(
    ("looped", "reload"),
    [(False, True), (False, False), (True, False)],
    ids=["one-tile-read-twice", "one-tile-held", "looped"],
)
def test_gradcheck(looped: bool, reload: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(softmax, "BACKWARD_RELOAD", reload)
    if looped:
        # Rows of 37 values in tiles of 16: two whole tiles and a partial one.
        monkeypatch.setattr(softmax, "BACKWARD_MAX_FUSED_COLS", 8)
        monkeypatch.setattr(softmax, "BACKWARD_MAX_MASKED_COLS", 8)
        monkeypatch.setattr(softmax, "BACKWARD_LOOP_BLOCK", 16)
    for n_cols in (37, 32):
        x = randn(4, n_cols, dtype=torch.float64, seed=n_cols).requires_grad_()
        assert torch.autograd.gradcheck(softmax.softmax, (x,))


@pytest.mark.parametrize("n_cols", softmax.BACKWARD_BENCHMARK.interpreter_sizes)
def test_backward_benchmark_passes_the_harness_check(n_cols: int) -> None:
    result = check(softmax.BACKWARD_BENCHMARK, n_cols)
    assert result.relative_error <= result.tolerance


def test_without_a_gradient_no_graph_is_recorded() -> None:
    x = randn(3, 5).requires_grad_()
    with torch.no_grad():
        assert softmax.softmax(x).grad_fn is None
    assert softmax.softmax(x).grad_fn is not None

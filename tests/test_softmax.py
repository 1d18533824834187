"""Softmax against float64 at awkward shapes, both kernel paths, and rejected inputs."""

import pytest
import torch
import triton
from kernel_inputs import DEVICE, HALF_AND_SINGLE, OTHER_DEVICE, assert_close_to_float64, randn

from kernels import softmax
from kernels.launch import resident_programs


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
    n_rows = 5
    assert resident_programs(n_rows, softmax.PREFETCH_WARPS, DEVICE) < n_rows
    x = randn(n_rows, n_cols, seed=n_cols)
    assert_close_to_float64(softmax.softmax(x), torch.softmax(x.double(), dim=-1), torch.float32)


@pytest.mark.parametrize(
    "n_cols",
    [softmax.MAX_FUSED_COLS + 4465, softmax.MAX_FUSED_COLS + softmax.LOOP_BLOCK],
    ids=["odd", "whole-tiles"],
)
def test_looped_path_for_rows_longer_than_one_tile(n_cols: int) -> None:
    x = randn(2, n_cols) * 10
    assert_close_to_float64(softmax.softmax(x), torch.softmax(x.double(), dim=-1), torch.float32)


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

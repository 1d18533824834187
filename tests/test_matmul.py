"""Matmul against float64 at awkward shapes, the grouped tile order, the epilogue, and
rejected inputs. The interpreter runs the kernel with small tiles (16 x 16 x 16), so
these shapes span several tiles, partial tiles and a partial group. Also: NaN and
infinity through the activations, GELU without overflow, no gradient without a backward."""

import warnings

import pytest
import torch
from kernel_inputs import DEVICE, OTHER_DEVICE, assert_close_to_float64, randn

from kernels import matmul
from kernels.bench import check

HALF = (torch.float16, torch.bfloat16)


def half(*shape: int, dtype: torch.dtype = torch.float16) -> torch.Tensor:
    return randn(*shape, dtype=dtype)


@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize(
    ("m", "k", "n"),
    [(1, 1, 1), (1, 64, 40), (45, 37, 29), (70, 130, 33), (16, 16, 16)],
    ids=["1x1x1", "one-row", "odd", "long-k", "one-tile"],
)
def test_matches_float64(m: int, k: int, n: int, dtype: torch.dtype) -> None:
    a, b = randn(m, k, dtype=dtype, seed=m + k), randn(k, n, dtype=dtype, seed=n)
    out = matmul.matmul(a, b)
    assert out.shape == (m, n) and out.dtype == dtype
    assert_close_to_float64(out, a.double() @ b.double(), dtype)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_fused_activation_matches_float64(activation: str, dtype: torch.dtype) -> None:
    a, b = randn(33, 50, dtype=dtype, seed=1), randn(50, 47, dtype=dtype, seed=2)
    out = matmul.matmul(a, b, activation)
    reference = matmul.torch_matmul(a.double(), b.double(), activation)
    assert_close_to_float64(out, reference, dtype)
    assert (out >= 0).all() if activation == "relu" else (out < 0).any()


def test_aligned_matrices_take_the_tma_path_and_others_the_pointer_path() -> None:
    assert matmul.tma_applies(half(32, 64), half(64, 48), half(32, 48))
    # Rows of 37 half-precision values are 74 bytes: not a multiple of 16.
    assert not matmul.tma_applies(half(32, 37), half(37, 48))
    assert not matmul.tma_applies(half(32, 64)[:, 1:])


@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_tma_and_pointer_kernels_agree_with_float64(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 40 x 24 is two and a half by one and a half tiles: both kernels handle the edges.
    a, b = randn(40, 64, dtype=dtype, seed=3), randn(64, 24, dtype=dtype, seed=4)
    reference = matmul.torch_matmul(a.double(), b.double(), "gelu")
    assert matmul.tma_applies(a, b)
    with_tma = matmul.matmul(a, b, "gelu")
    monkeypatch.setattr(matmul, "tma_applies", lambda *matrices: False)
    with_pointers = matmul.matmul(a, b, "gelu")
    assert_close_to_float64(with_tma, reference, dtype)
    assert_close_to_float64(with_pointers, reference, dtype)


def test_empty_inner_dimension_gives_zeros() -> None:
    a, b = randn(5, 0, dtype=torch.float16), randn(0, 7, dtype=torch.float16)
    assert torch.equal(matmul.matmul(a, b), torch.zeros(5, 7, dtype=torch.float16, device=DEVICE))
    assert matmul.matmul(
        randn(0, 3, dtype=torch.float16), randn(3, 4, dtype=torch.float16)
    ).shape == (0, 4)


@pytest.mark.parametrize("spec", [matmul.BENCHMARK, matmul.SKINNY_BENCHMARK], ids=lambda s: s.name)
def test_benchmark_inputs_pass_the_harness_check(spec) -> None:
    for size in spec.interpreter_sizes:
        result = check(spec, size)
        assert result.relative_error <= result.tolerance


def test_grouped_order_visits_every_tile_once_and_groups_rows() -> None:
    order = matmul.tile_order(tiles_m=9, tiles_n=9, group_m=3)
    assert sorted(order.flatten().tolist()) == list(range(81))
    # The first nine programs cover a 3 x 3 block of tiles: 3 tiles of A, 3 of B.
    first = (order < 9).nonzero()
    assert set(first[:, 0].tolist()) == {0, 1, 2} and set(first[:, 1].tolist()) == {0, 1, 2}


def test_group_of_one_row_is_row_major_and_a_partial_group_is_covered() -> None:
    assert torch.equal(matmul.tile_order(4, 5, group_m=1).flatten().cpu(), torch.arange(20))
    order = matmul.tile_order(tiles_m=5, tiles_n=3, group_m=2)
    assert sorted(order.flatten().tolist()) == list(range(15))
    # The last group holds the fifth row alone: its programs run along it in order.
    assert order[4].tolist() == [12, 13, 14]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: (half(4, 8).to(OTHER_DEVICE), half(8, 2)), ValueError, r"^a is on"),
        (lambda: (half(4, 8), half(2, 8).t()), ValueError, r"b is not contiguous"),
        (lambda: (randn(4, 8), randn(8, 2)), TypeError,
         r"a has dtype float32; this kernel takes float16, bfloat16"),
        (lambda: (half(4, 8), half(8, 2, dtype=torch.bfloat16)), TypeError,
         r"a is float16 but b is bfloat16"),
        (lambda: (half(4, 8), half(7, 2)), ValueError, r"a's columns must match b's rows"),
        (lambda: (half(2, 4, 8), half(8, 2)), ValueError,
         r"a has shape \(2, 4, 8\); it must be a matrix"),
    ],
    ids=["device", "strided", "dtype", "mixed", "inner", "3d"],
)  # fmt: skip
def test_rejects_bad_input(make, error, message) -> None:
    with pytest.raises(error, match=message):
        matmul.matmul(*make())


def test_rejects_an_unknown_activation() -> None:
    a = randn(4, 8, dtype=torch.float16)
    with pytest.raises(
        ValueError, match="activation is 'tanh'; it must be one of none, relu, gelu"
    ):
        matmul.matmul(a, a.t().contiguous(), "tanh")


@pytest.mark.parametrize("name", ["a", "b"])
def test_refuses_an_input_that_needs_a_gradient(name: str) -> None:
    operands = {"a": half(8, 16), "b": half(16, 8)}
    operands[name].requires_grad_()
    with pytest.raises(RuntimeError, match=rf"^{name} requires grad, but matmul has no backward"):
        matmul.matmul(**operands)
    with torch.no_grad():
        assert matmul.matmul(**operands).shape == (8, 8)


@pytest.mark.parametrize("activation", ["none", "relu", "gelu"])
@pytest.mark.parametrize("tma", [True, False], ids=["tma", "pointers"])
def test_nan_and_infinity_pass_through_the_activation_as_in_pytorch(
    activation: str, tma: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not tma:
        monkeypatch.setattr(matmul, "tma_applies", lambda *matrices: False)
    # Row 0 of A holds a NaN, row 1 a +inf (its products have one sign per column of B),
    # so whole rows of C are NaN or infinite.
    a, b = half(32, 16), half(16, 48)
    a[0, 3], a[1, 5], b[5] = float("nan"), float("inf"), b[5].abs() + 0.5
    out = matmul.matmul(a, b, activation)
    reference = matmul.torch_matmul(a.double(), b.double(), activation)
    assert torch.equal(out.isnan(), reference.isnan())
    assert torch.equal(out.isposinf(), reference.isposinf())
    finite = reference.isfinite()
    assert_close_to_float64(out[finite], reference[finite], torch.float16)


@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_gelu_of_large_values_overflows_nothing(dtype: torch.dtype) -> None:
    # exp(-2z) of a large negative z overflows: the interpreter would warn.
    a, b = randn(16, 16, dtype=dtype, seed=5) * 30, randn(16, 16, dtype=dtype, seed=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = matmul.matmul(a, b, "gelu")
    reference = matmul.torch_matmul(a.double(), b.double(), "gelu")
    assert_close_to_float64(out, reference, dtype)

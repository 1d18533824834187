"""RMSNorm and LayerNorm (forward, backward, gradcheck) against float64, and bad input,
the second derivative and eps among it."""

import numpy as np
import pytest
import torch
import triton
from kernel_inputs import HALF_AND_SINGLE, OTHER_DEVICE, assert_close_to_float64, randn

from kernels.harness.bench import check
from kernels.operations import layer_norm, rms_norm

SHAPES = [(1, 1000), (7, 781), (3, 2, 2048), (5, 3)]
IDS = ["one-row", "odd-row", "3d", "tiny-row"]


def params(n_cols: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    return 1 + 0.1 * randn(n_cols, dtype=dtype, seed=1), 0.1 * randn(n_cols, dtype=dtype, seed=2)


@pytest.mark.parametrize("dtype", HALF_AND_SINGLE, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_rms_norm_matches_float64(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    x = randn(*shape, dtype=dtype)
    weight, _ = params(shape[-1], dtype)
    reference = rms_norm.torch_rms_norm(x.double(), weight.double())
    assert_close_to_float64(rms_norm.rms_norm(x, weight), reference, dtype)


@pytest.mark.parametrize("dtype", HALF_AND_SINGLE, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_layer_norm_forward_and_backward_match_float64(
    shape: tuple[int, ...], dtype: torch.dtype
) -> None:
    x = randn(*shape, dtype=dtype)
    weight, bias = params(shape[-1], dtype)
    dy = randn(*shape, dtype=dtype, seed=3)
    leaves = [t.detach().requires_grad_() for t in (x, weight, bias)]
    out = layer_norm.layer_norm(*leaves)
    out.backward(dy)
    leaves64 = [t.detach().double().requires_grad_() for t in (x, weight, bias)]
    reference = layer_norm.torch_layer_norm(*leaves64)
    reference.backward(dy.double())
    assert_close_to_float64(out.detach(), reference.detach(), dtype)
    for ours, theirs in zip(leaves, leaves64, strict=True):
        assert_close_to_float64(ours.grad, theirs.grad, dtype)


def test_layer_norm_gradcheck() -> None:
    inputs = [randn(*shape, dtype=torch.float64, seed=i).requires_grad_()
              for i, shape in enumerate([(6, 9), (9,), (9,)])]  # fmt: skip
    assert torch.autograd.gradcheck(layer_norm.layer_norm, inputs)


@pytest.mark.parametrize("prefetch", [True, False], ids=["prefetch", "load-when-needed"])
@pytest.mark.parametrize("n_cols", [4096, 700], ids=["long-rows", "short-rows"])
def test_layer_norm_backward_with_more_row_tiles_than_programs(
    n_cols: int, prefetch: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The interpreter runs four backward programs: each walks several tiles, the last
    # one short (and, prefetching, loads the tile after it, past the last row).
    monkeypatch.setattr(layer_norm, "BACKWARD_PREFETCH", prefetch)
    rows_per_tile = max(1, layer_norm.BACKWARD_TILE // triton.next_power_of_2(n_cols))
    shape = (4 * rows_per_tile + 3, n_cols)
    assert_layer_norm_grads_match_float64(shape)


def assert_layer_norm_grads_match_float64(shape: tuple[int, int]) -> None:
    """LayerNorm's three gradients at ``shape`` (float32) match PyTorch's in float64."""
    x, (weight, bias), dy = randn(*shape), params(shape[1], torch.float32), randn(*shape, seed=3)
    leaves = [t.requires_grad_() for t in (x, weight, bias)]
    layer_norm.layer_norm(*leaves).backward(dy)
    leaves64 = [t.detach().double().requires_grad_() for t in (x, weight, bias)]
    layer_norm.torch_layer_norm(*leaves64).backward(dy.double())
    for ours, theirs in zip(leaves, leaves64, strict=True):
        assert_close_to_float64(ours.grad, theirs.grad, torch.float32)


def test_layer_norm_backward_of_long_rows_takes_two_kernels() -> None:
    # Past FUSED_BACKWARD_MAX_COLS, dx and the weight gradients come from separate kernels;
    # 530 rows make two chunks of rows, the second one short.
    shape = (530, layer_norm.FUSED_BACKWARD_MAX_COLS + 1)
    assert shape[0] > layer_norm.ROWS_PER_CHUNK
    assert_layer_norm_grads_match_float64(shape)


def test_layer_norm_gradcheck_of_the_two_kernel_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layer_norm, "FUSED_BACKWARD_MAX_COLS", 4)
    monkeypatch.setattr(layer_norm, "ROWS_PER_CHUNK", 4)
    inputs = [randn(*shape, dtype=torch.float64, seed=i).requires_grad_()
              for i, shape in enumerate([(6, 9), (9,), (9,)])]  # fmt: skip
    assert torch.autograd.gradcheck(layer_norm.layer_norm, inputs)


def norm_call(norm: str, x, weight, bias, eps=1e-5):
    if norm == "rms":
        return rms_norm.rms_norm(x, weight, eps)
    return layer_norm.layer_norm(x, weight, bias, eps)


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_rejects_bad_input(norm: str) -> None:
    x = randn(4, 8)
    weight, bias = params(8, torch.float32)
    with pytest.raises(ValueError, match=r"weight has shape \(7,\); it must be \(8,\)"):
        norm_call(norm, x, weight[:7], bias)
    with pytest.raises(TypeError, match=r"weight is float16 but the input is float32"):
        norm_call(norm, x, weight.half(), bias)
    with pytest.raises(ValueError, match=r"^x is on"):
        norm_call(norm, x.to(OTHER_DEVICE), weight, bias)
    with pytest.raises(ValueError, match=r"x is not contiguous"):
        norm_call(norm, randn(8, 4).t(), weight, bias)
    with pytest.raises(ValueError, match=r"eps must be positive"):
        norm_call(norm, x, weight, bias, eps=0.0)


@pytest.mark.parametrize(
    ("norm", "limit"), [("rms", rms_norm.MAX_COLS), ("layer", layer_norm.MAX_COLS)]
)
def test_rejects_rows_too_long_for_registers(norm: str, limit: int) -> None:
    with pytest.raises(ValueError, match=rf"this kernel takes at most {limit}"):
        norm_call(norm, randn(1, limit + 1), *params(limit + 1, torch.float32))


def rms_norm_grads(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[list, list]:
    """The gradients of x and the weight through the Triton RMSNorm, and PyTorch's in float64."""
    x, (weight, _), dy = (
        randn(*shape, dtype=dtype),
        params(shape[-1], dtype),
        randn(*shape, dtype=dtype, seed=3),
    )
    leaves = [t.requires_grad_() for t in (x, weight)]
    rms_norm.rms_norm(*leaves).backward(dy)
    leaves64 = [t.detach().double().requires_grad_() for t in (x, weight)]
    rms_norm.torch_rms_norm(*leaves64).backward(dy.double())
    return [t.grad for t in leaves], [t.grad for t in leaves64]


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_rms_norm_backward_matches_float64(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    # bfloat16 is left to the harness check: the interpreter rounds it by truncation.
    for ours, theirs in zip(*rms_norm_grads(shape, dtype), strict=True):
        assert ours.dtype == dtype
        assert_close_to_float64(ours, theirs, dtype)


@pytest.mark.parametrize(
    ("prefetch", "reload"),
    [(True, False), (False, True), (False, False)],
    ids=["prefetch", "read-twice", "load-when-needed"],
)
@pytest.mark.parametrize("n_cols", [2000, 700], ids=["wide-rows", "short-rows"])
def test_rms_norm_backward_with_more_row_tiles_than_programs(
    n_cols: int, prefetch: bool, reload: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each program takes several tiles, the last one short (and, prefetching, loads the
    # tile after it, which is past the last row).
    monkeypatch.setattr(rms_norm, "BACKWARD_PREFETCH", prefetch)
    monkeypatch.setattr(rms_norm, "BACKWARD_RELOAD", reload)
    rows_per_tile = max(1, rms_norm.BACKWARD_TILE // triton.next_power_of_2(n_cols))
    shape = (4 * rows_per_tile + 3, n_cols)
    assert shape[0] > 4 * rows_per_tile and shape[0] % rows_per_tile
    for ours, theirs in zip(*rms_norm_grads(shape, torch.float32), strict=True):
        assert_close_to_float64(ours, theirs, torch.float32)


@pytest.mark.parametrize("n_cols", [700, 2000], ids=["prefetch", "no-prefetch"])
def test_rms_norm_backward_prefetches_only_rows_that_fit_twice(
    n_cols: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A second tile held in registers spills when the row is long (0.07x at 16384 values
    # on an H200): past PREFETCH_MAX_COLS the fused kernel loads each tile when needed.
    monkeypatch.setattr(rms_norm, "PREFETCH_MAX_COLS", 1024)
    launched, launch = {}, rms_norm.launch

    def noted_launch(kernel, grid, *args, **options):
        launched[kernel.fn.__name__] = options
        launch(kernel, grid, *args, **options)

    monkeypatch.setattr(rms_norm, "launch", noted_launch)
    for ours, theirs in zip(*rms_norm_grads((3, n_cols), torch.float32), strict=True):
        assert_close_to_float64(ours, theirs, torch.float32)
    options = launched["rms_norm_backward_kernel"]
    assert options["PREFETCH"] == (n_cols <= 1024)
    # A tile that is not prefetched is read twice rather than held through the sums.
    assert options["RELOAD"] == (rms_norm.BACKWARD_RELOAD and not options["PREFETCH"])


@pytest.mark.parametrize(
    "n_cols",
    [
        rms_norm.FUSED_BACKWARD_MAX_COLS + 1,
        (rms_norm.FUSED_BACKWARD_MAX_COLS // rms_norm.INPUT_GRAD_BLOCK + 1)
        * rms_norm.INPUT_GRAD_BLOCK,
    ],
    ids=["odd", "whole-tiles"],
)
def test_rms_norm_backward_of_long_rows_takes_two_kernels(
    n_cols: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 13 rows in chunks of 4: four chunks, the last one short.
    monkeypatch.setattr(rms_norm, "ROWS_PER_CHUNK", 4)
    assert n_cols > rms_norm.FUSED_BACKWARD_MAX_COLS
    for ours, theirs in zip(*rms_norm_grads((13, n_cols), torch.float32), strict=True):
        assert_close_to_float64(ours, theirs, torch.float32)


@pytest.mark.parametrize("two_kernels", [False, True], ids=["fused", "two-kernel"])
def test_rms_norm_gradcheck(two_kernels: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if two_kernels:
        monkeypatch.setattr(rms_norm, "FUSED_BACKWARD_MAX_COLS", 4)
        monkeypatch.setattr(rms_norm, "ROWS_PER_CHUNK", 4)
        monkeypatch.setattr(rms_norm, "INPUT_GRAD_BLOCK", 4)
    for n_cols in (9, 8):
        inputs = [randn(*shape, dtype=torch.float64, seed=i).requires_grad_()
                  for i, shape in enumerate([(6, n_cols), (n_cols,)])]  # fmt: skip
        assert torch.autograd.gradcheck(rms_norm.rms_norm, inputs)


@pytest.mark.parametrize("n_cols", rms_norm.BACKWARD_BENCHMARK.interpreter_sizes)
def test_rms_norm_backward_benchmark_passes_the_harness_check(n_cols: int) -> None:
    result = check(rms_norm.BACKWARD_BENCHMARK, n_cols)
    assert result.relative_error <= result.tolerance


def test_layer_norm_second_derivative_is_refused_by_name() -> None:
    x, weight, bias = (
        t.double().requires_grad_() for t in (randn(3, 5), *params(5, torch.float32))
    )
    (grad_x,) = torch.autograd.grad(
        layer_norm.layer_norm(x, weight, bias).pow(2).sum(), x, create_graph=True
    )
    with pytest.raises(RuntimeError, match=r"^layer_norm has no second derivative"):
        grad_x.sum().backward()


@pytest.mark.parametrize("norm", ["rms", "layer"])
@pytest.mark.parametrize(
    ("eps", "error", "message"),
    [
        ("1e-5", TypeError, r"eps must be a number \(int or float\), got str '1e-5'"),
        (None, TypeError, r"eps must be a number \(int or float\), got NoneType None"),
        (True, TypeError, r"eps must be a number \(int or float\), got bool True"),
        (torch.tensor(1e-5), TypeError, r"eps must be a number \(int or float\), got a tensor"),
        (float("nan"), ValueError, r"eps must be positive, got nan"),
    ],
    ids=["str", "none", "bool", "tensor", "nan"],
)  # fmt: skip
def test_rejects_an_eps_that_is_not_a_positive_number(norm: str, eps, error, message) -> None:
    with pytest.raises(error, match=message):
        norm_call(norm, randn(4, 8), *params(8, torch.float32), eps=eps)


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_takes_numpy_numbers_for_eps(norm: str) -> None:
    x, weight, bias = randn(4, 8), *params(8, torch.float32)
    expected = norm_call(norm, x, weight, bias, eps=1e-3)
    for eps in (np.float32(1e-3), np.float64(1e-3)):
        torch.testing.assert_close(norm_call(norm, x, weight, bias, eps=eps), expected)
    torch.testing.assert_close(
        norm_call(norm, x, weight, bias, eps=1), norm_call(norm, x, weight, bias, eps=1.0)
    )


def test_layer_norm_chunked_forward_matches_float64(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rows of 5 * 16 values, walked in chunks of 16; away from zero, where a one-pass
    # sum of squares would cancel (Welford's update does not). Further out, float32
    # inputs themselves carry more error than the tolerance.
    monkeypatch.setattr(layer_norm, "FORWARD_CHUNK", 16)
    layer_norm.forward_launch.cache_clear()
    try:
        shape, dtype = (7, 80), torch.float32
        assert layer_norm.forward_launch(*shape, dtype)[0] == "chunked"
        x = randn(*shape, dtype=dtype) + 100
        weight, bias = params(shape[1], dtype)
        out = layer_norm.layer_norm(x, weight, bias)
        reference = layer_norm.torch_layer_norm(x.double(), weight.double(), bias.double())
        assert_close_to_float64(out, reference, dtype)
        # With a gradient recorded, the kernel stores the statistics the backward needs.
        assert_layer_norm_grads_match_float64(shape)
    finally:
        layer_norm.forward_launch.cache_clear()


def test_rms_norm_chunked_forward_matches_float64(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rows of 5 * 16 values, walked in chunks of 16.
    monkeypatch.setattr(rms_norm, "FORWARD_CHUNK", 16)
    rms_norm.forward_launch.cache_clear()
    try:
        shape = (7, 80)
        assert rms_norm.forward_launch(*shape)[0] == "chunked"
        x, weight = randn(*shape) + 3, 1 + 0.1 * randn(shape[1], seed=1)
        reference = rms_norm.torch_rms_norm(x.double(), weight.double())
        assert_close_to_float64(rms_norm.rms_norm(x, weight), reference, torch.float32)
    finally:
        rms_norm.forward_launch.cache_clear()


@pytest.fixture(params=["tile", "chunked"])
def forward_kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both forward kernels of both norms: rows of 80 values take the one-tile kernel,
    or, with chunks of 16, the chunked one."""
    chunk = 16 if request.param == "chunked" else 0
    for module in (layer_norm, rms_norm):
        monkeypatch.setattr(module, "FORWARD_CHUNK", chunk)
        module.forward_launch.cache_clear()
    yield request.param
    for module in (layer_norm, rms_norm):
        module.forward_launch.cache_clear()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the interpreter's
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_norms_of_rows_whose_squares_overflow_float32(forward_kernel: str, dtype) -> None:
    # Values near 1e20: their squares overflow float32 (PyTorch's LayerNorm gives the
    # right output; ours gave the bias). One row of ordinary values keeps the plain path.
    x = (randn(4, 80, dtype=torch.float64) * 1e20 + 3e20).to(dtype)
    x[1] = randn(80, dtype=dtype, seed=2)
    x[2, :5] = 1e38  # large enough that the sum for the mean overflows too
    weight, bias = params(80, dtype)
    reference = layer_norm.torch_layer_norm(x.double(), weight.double(), bias.double())
    assert_close_to_float64(layer_norm.layer_norm(x, weight, bias), reference, dtype)
    reference = rms_norm.torch_rms_norm(x.double(), weight.double())
    assert_close_to_float64(rms_norm.rms_norm(x, weight), reference, dtype)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_the_statistics_of_an_overflowing_row_give_the_right_gradient(forward_kernel: str) -> None:
    x = (randn(3, 80, dtype=torch.float64) * 1e20 + 3e20).float().requires_grad_()
    weight, bias = (p.requires_grad_() for p in params(80, torch.float32))
    grad = randn(3, 80, seed=5)
    layer_norm.layer_norm(x, weight, bias).backward(grad)
    x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, weight, bias))
    layer_norm.torch_layer_norm(x64, w64, b64).backward(grad.double())
    assert_close_to_float64(weight.grad, w64.grad, torch.float32)
    assert_close_to_float64(bias.grad, b64.grad, torch.float32)
    assert (x.grad.double() - x64.grad).abs().max() < 1e-24  # dx is about 1e-20 here

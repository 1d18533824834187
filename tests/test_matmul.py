"""Matmul against float64 at awkward shapes, the grouped tile order, the epilogue, and
rejected inputs. The interpreter runs the kernel with small tiles (16 x 16 x 32), so
these shapes span several tiles, partial tiles and a partial group. Also: NaN and
infinity through the activations, GELU without overflow, every layout (transposed
operands, sliced views) on both kernels, few rows, each candidate configuration, the
autotune key, and gradients through the kernels."""

import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from kernel_inputs import DEVICE, OTHER_DEVICE, assert_close_to_float64, randn
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels.harness.bench import check
from kernels.operations import matmul
from kernels.triton_helpers import launch

HALF = (torch.float16, torch.bfloat16)
TUNED_KERNELS = (matmul.tuned_matmul_kernel, matmul.tuned_matmul_tma_kernel,
                 matmul.tuned_matmul_tma_persistent_kernel)  # fmt: skip


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
    # A descriptor needs contiguous rows that do not overlap: a transposed matrix is
    # passed as its transpose, and a broadcast row (stride 0) goes to the pointer kernel.
    assert not matmul.tma_applies(half(64, 32).t())
    assert matmul.tma_applies(half(64, 32).t().t(), half(32, 128)[:, 16:80])
    assert not matmul.tma_applies(half(1, 64).expand(32, 64))


def test_a_matrix_is_transposed_when_its_columns_are_contiguous() -> None:
    weight = half(48, 64)
    assert matmul.transposed(weight.t()) and not matmul.transposed(weight)
    assert not matmul.transposed(half(64, 96)[::2, ::3])


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


@pytest.mark.parametrize(
    "spec", [matmul.BENCHMARK, matmul.SKINNY_BENCHMARK, matmul.NT_BENCHMARK], ids=lambda s: s.name
)
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
        (lambda: (randn(4, 8), randn(8, 2)), TypeError,
         r"a has dtype float32; this kernel takes float16, bfloat16"),
        (lambda: (half(4, 8), half(8, 2, dtype=torch.bfloat16)), TypeError,
         r"a is float16 but b is bfloat16"),
        (lambda: (half(4, 8), half(7, 2)), ValueError, r"a's columns must match b's rows"),
        (lambda: (half(2, 4, 8), half(8, 2)), ValueError,
         r"a has shape \(2, 4, 8\); it must be a matrix"),
    ],
    ids=["device", "dtype", "mixed", "inner", "3d"],
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


# Operands of a (40 x 64) @ (64 x 48) product in each layout, as (a, b) of the given
# dtype. Rows of 64 and 48 half-precision values are multiples of 16 bytes, so the
# descriptor kernel takes every layout but "sliced-odd", whose columns are 3 apart.
LAYOUTS: dict[str, Callable[[torch.dtype], tuple[torch.Tensor, torch.Tensor]]] = {
    "a-b": lambda dtype: (half(40, 64, dtype=dtype), half(64, 48, dtype=dtype)),
    "a.t()": lambda dtype: (half(64, 40, dtype=dtype).t(), half(64, 48, dtype=dtype)),
    "b.t()": lambda dtype: (half(40, 64, dtype=dtype), half(48, 64, dtype=dtype).t()),
    "a.t()-b.t()": lambda dtype: (half(64, 40, dtype=dtype).t(), half(48, 64, dtype=dtype).t()),
    "sliced": lambda dtype: (
        half(50, 96, dtype=dtype)[5:45, 16:80], half(64, 72, dtype=dtype)[:, 8:56]
    ),
    "sliced-odd": lambda dtype: (
        half(80, 200, dtype=dtype)[::2, 5:197:3], half(128, 150, dtype=dtype)[::2, 1:145:3]
    ),
}  # fmt: skip


def _as_descriptors_see_them(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return tuple(t.t() if matmul.transposed(t) else t for t in (a, b))


@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize(
    ("layout", "tma"),
    [
        (layout, tma)
        for layout in LAYOUTS
        for tma in (True, False)
        if layout != "sliced-odd" or not tma
    ],
    ids=lambda value: {True: "tma", False: "pointers"}.get(value, value),
)
def test_every_layout_matches_float64_without_a_copy(
    layout: str, dtype: torch.dtype, tma: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = LAYOUTS[layout](dtype)
    assert a.shape == (40, 64) and b.shape == (64, 48)
    assert matmul.tma_applies(*_as_descriptors_see_them(a, b)) == (layout != "sliced-odd")
    if not tma:
        monkeypatch.setattr(matmul, "tma_applies", lambda *matrices: False)
    # The launcher must read the operands in place: a copy would show as a call to
    # Tensor.contiguous (or clone) on the way to the kernel.
    copies = []
    for name in ("contiguous", "clone"):
        original = getattr(torch.Tensor, name)
        monkeypatch.setattr(
            torch.Tensor,
            name,
            lambda self, *args, _f=original, **kw: copies.append(1) or _f(self, *args, **kw),
        )
    out = matmul.matmul(a, b, "relu")
    monkeypatch.undo()
    assert not copies
    reference = matmul.torch_matmul(a.double(), b.double(), "relu")
    assert_close_to_float64(out, reference, dtype)


@pytest.mark.parametrize("transposed", [False, True], ids=["b", "w.t()"])
@pytest.mark.parametrize("m", [1, 3, 8, 16, 33])
def test_few_rows_match_float64(m: int, transposed: bool) -> None:
    # A decoding step: a few rows against a weight, stored as nn.Linear stores it or not.
    a = randn(m, 96, dtype=torch.bfloat16, seed=m)
    weight = randn(80, 96, dtype=torch.bfloat16, seed=7)
    b = weight.t() if transposed else weight.t().contiguous()
    assert_close_to_float64(matmul.matmul(a, b), a.double() @ b.double(), torch.bfloat16)


@pytest.fixture(autouse=True)
def no_earlier_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without the TMA plans of earlier tests: a test that turns TMA off
    for a shape another test launched through it must not find that launch's plan."""
    monkeypatch.setattr(matmul, "_tma_plans", {})


@pytest.fixture
def fresh_autotune_cache():
    """Empty autotune caches, so that what a test launches is tuned afresh and the
    caches hold only its keys."""
    for kernel in TUNED_KERNELS:
        kernel.cache.clear()
    launch._chosen.clear()  # launch_tuned's own record of the autotuners' choices
    yield
    for kernel in TUNED_KERNELS:
        kernel.cache.clear()
    launch._chosen.clear()


@pytest.mark.parametrize(
    "config",
    matmul.HOPPER_CONFIGS + matmul.SKINNY_CONFIGS,
    ids=lambda c: "x".join(str(c.kwargs[k]) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")),
)
def test_each_candidate_tile_gives_the_product(
    config, monkeypatch: pytest.MonkeyPatch, fresh_autotune_cache
) -> None:
    # Each candidate in turn on both kernels, with a transposed operand (whose descriptor
    # tile is transposed too): the pruning keeps only that candidate, on a GPU as in the
    # interpreter, so the autotuner launches it and times nothing.
    for kernel in (matmul.tuned_matmul_kernel, matmul.tuned_matmul_tma_kernel):
        monkeypatch.setattr(
            kernel,
            "early_config_prune",
            lambda configs, named_args, **kwargs: [c for c in configs if c.kwargs == config.kwargs],
        )
    a, b = randn(24, 64, dtype=torch.float16, seed=1), randn(40, 64, dtype=torch.float16).t()
    reference = a.double() @ b.double()
    assert matmul.tma_applies(*_as_descriptors_see_them(a, b))
    assert_close_to_float64(matmul.matmul(a, b), reference, torch.float16)
    # Without TMA, and without the plan the first call made for this shape through it.
    monkeypatch.setattr(matmul, "tma_applies", lambda *matrices: False)
    monkeypatch.setattr(matmul, "_tma_plans", {})
    assert_close_to_float64(matmul.matmul(a, b), reference, torch.float16)
    for kernel in (matmul.tuned_matmul_kernel, matmul.tuned_matmul_tma_kernel):
        assert [chosen.kwargs for chosen in kernel.cache.values()] == [config.kwargs]


def _tile_rows(configs: list) -> list[int]:
    return sorted({config.kwargs["BLOCK_M"] for config in configs})


def test_few_rows_get_short_tiles_and_many_rows_tall_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the autotuner would time on a GPU, by M rounded up to a power of two.
    monkeypatch.setattr(matmul, "interpreted", lambda: False)
    configs = matmul.tuned_matmul_tma_kernel.configs

    def rows(m_bucket: int) -> list[int]:
        return _tile_rows(matmul._candidates(configs, {"M_BUCKET": m_bucket}))

    assert rows(1) == rows(16) == [16]
    assert rows(32) == [16, 32]
    assert rows(64) == [16, 32, 64]
    assert rows(128) == [64, 128]
    assert rows(4096) == [64, 128, 256]
    assert len(matmul._candidates(configs, {"M_BUCKET": 4096})) == len(matmul.HOPPER_CONFIGS)


def test_autotune_key_separates_dtypes_layouts_activations_and_sizes_of_m(
    fresh_autotune_cache,
) -> None:
    weight = half(48, 64)
    calls = [
        (half(40, 64), weight.t().contiguous(), "none"),
        (half(40, 64, dtype=torch.bfloat16), weight.t().contiguous().bfloat16(), "none"),
        (half(40, 64), weight.t(), "none"),
        (half(64, 40).t(), weight.t(), "none"),
        (half(40, 64), weight.t(), "gelu"),
        (half(3, 64), weight.t(), "none"),
        # 33 rows round up to 64, like 40: the same key as the third call.
        (half(33, 64), weight.t(), "none"),
    ]
    for a, b, activation in calls:
        assert matmul.tma_applies(*_as_descriptors_see_them(a, b), half(a.shape[0], 48))
        matmul.matmul(a, b, activation)
    # An odd N, B read in place: C's rows are not aligned, so C is stored through pointers.
    matmul.matmul(half(40, 64), half(64, 48)[:, :47], "none")
    keys = list(matmul.tuned_matmul_tma_kernel.cache)
    assert len(keys) == len(calls)
    # (M rounded up, N, K, A transposed, B transposed, activation, dtype, C by descriptor)
    float16 = matmul.TRITON_DTYPES[torch.float16]
    assert keys[0][:8] == (64, 48, 64, False, False, "none", float16, True)
    assert keys[-1][:8] == (64, 47, 64, False, False, "none", float16, False)
    assert keys[1][6] == matmul.TRITON_DTYPES[torch.bfloat16] and keys[1][:6] == keys[0][:6]
    assert keys[2][3:5] == (False, True) and keys[3][3:5] == (True, True)
    assert keys[4][5] == "gelu" and keys[5][0] == 4


def _reference_gradients(
    a: torch.Tensor, b: torch.Tensor, grad: torch.Tensor, activation: str
) -> tuple[torch.Tensor, ...]:
    a64 = a.detach().double().requires_grad_()
    b64 = b.detach().double().requires_grad_()
    out = matmul.torch_matmul(a64, b64, activation)
    out.backward(grad.double())
    return out, a64.grad, b64.grad


@pytest.mark.parametrize("layout", ["a-b", "b.t()", "a.t()-b.t()", "sliced-odd"])
@pytest.mark.parametrize("activation", matmul.ACTIVATIONS)
@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_gradients_through_the_kernels_match_float64(
    dtype: torch.dtype, activation: str, layout: str
) -> None:
    # The kernels take float16 and bfloat16 only, so the gradients are compared with
    # float64 ones at those types' tolerance (the formulas alone: the gradcheck below).
    a, b = (t.requires_grad_() for t in LAYOUTS[layout](dtype))
    grad = randn(40, 48, dtype=dtype, seed=9)
    out = matmul.matmul(a, b, activation)
    assert isinstance(out.grad_fn, matmul.MatmulFunction._backward_cls)
    out.backward(grad)
    references = _reference_gradients(a, b, grad, activation)
    for mine, reference in zip((out, a.grad, b.grad), references, strict=True):
        assert mine.dtype == dtype
        assert_close_to_float64(mine, reference, dtype)


@pytest.mark.parametrize("activation", matmul.ACTIVATIONS)
def test_the_backward_formulas_pass_gradcheck_in_float64(
    activation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MatmulFunction with PyTorch's float64 product in place of the kernel (which takes
    # half precision only): its derivatives, transposes and activation gradients are
    # checked against finite differences.
    monkeypatch.setattr(
        matmul, "matmul", lambda a, b, activation="none", aligned_copies=True: (
            matmul.torch_matmul(a, b, activation))
    )  # fmt: skip
    a = randn(5, 7, dtype=torch.float64, seed=1).requires_grad_()
    b = randn(6, 7, dtype=torch.float64, seed=2).t().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda a, b: matmul.MatmulFunction.apply(a, b, activation, True), (a, b)
    )


def test_only_the_gradients_asked_for_are_computed_and_a_broadcast_gradient_works() -> None:
    a, weight = half(40, 64), half(48, 64).requires_grad_()
    # out.sum() sends back a gradient of ones with strides (0, 0): no descriptor takes it.
    out = matmul.matmul(a, weight.t(), "relu")
    out.float().sum().backward()
    assert a.grad is None
    _, _, reference = _reference_gradients(a, weight.t(), torch.ones(40, 48, device=DEVICE), "relu")
    assert_close_to_float64(weight.grad, reference.t(), torch.float16)


def test_relu_gradient_passes_through_nan_as_in_pytorch() -> None:
    a, b = half(16, 16).requires_grad_(), half(16, 16)
    with torch.no_grad():
        a[0, 0] = float("nan")
    matmul.matmul(a, b, "relu").backward(torch.ones(16, 16, dtype=torch.float16, device=DEVICE))
    a_ref = a.detach().clone().requires_grad_()
    torch.relu(a_ref @ b).backward(torch.ones(16, 16, dtype=torch.float16, device=DEVICE))
    assert torch.equal(a.grad.isnan(), a_ref.grad.isnan())


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_a_second_derivative_is_refused_with_an_activation_too(activation: str) -> None:
    a, b = (
        half(16, 32).requires_grad_(),
        randn(32, 16, dtype=torch.float16, seed=1).requires_grad_(),
    )
    (grad_a,) = torch.autograd.grad(
        matmul.matmul(a, b, activation).float().pow(2).sum(), a, create_graph=True
    )
    with pytest.raises(RuntimeError, match=r"^matmul has no second derivative"):
        grad_a.sum().backward()


def test_gradients_are_laid_out_as_their_operands() -> None:
    # As PyTorch's product does: the weight of x @ weight.t() gets a contiguous gradient,
    # which autograd then stores without a copy.
    x, weight = half(64, 40).t().requires_grad_(), half(48, 64).requires_grad_()
    matmul.matmul(x, weight.t()).backward(torch.ones(40, 48, dtype=torch.float16, device=DEVICE))
    x_ref, weight_ref = (t.detach().clone().requires_grad_() for t in (x, weight))
    (x_ref @ weight_ref.t()).backward(torch.ones(40, 48, dtype=torch.float16, device=DEVICE))
    assert weight.grad.stride() == weight_ref.grad.stride() == weight.stride()
    assert x.grad.stride() == x_ref.grad.stride()


def test_a_descriptor_built_without_checks_equals_triton_s() -> None:
    a = randn(24, 64, dtype=torch.float16)
    for matrix in (a, randn(64, 40, dtype=torch.float16).t().t(), a[:, :32]):
        assert matmul._descriptor(matrix) == TensorDescriptor.from_tensor(matrix, [1, 1])
        assert type(matmul._descriptor(matrix)) is TensorDescriptor


@pytest.mark.parametrize("b_transposed", [False, True], ids=["a@b", "a@w.t()"])
def test_the_persistent_kernel_gives_the_product(
    b_transposed: bool, monkeypatch: pytest.MonkeyPatch, fresh_autotune_cache
) -> None:
    # More tiles than programs (the interpreter runs four): each program takes several
    # tiles in turn, and the last takes fewer.
    monkeypatch.setattr(matmul, "PERSISTENT_MIN_OUTPUT", 0)
    a = randn(70, 64, dtype=torch.float16, seed=1)
    w = randn(40, 64, dtype=torch.float16)
    b = w.t() if b_transposed else w.t().contiguous()
    out = matmul.matmul(a, b, "relu")
    assert_close_to_float64(out, torch.relu(a.double() @ b.double()), torch.float16)
    assert matmul.tuned_matmul_tma_persistent_kernel.cache


@pytest.mark.parametrize("b_transposed", [False, True], ids=["a@b", "a@w.t()"])
@pytest.mark.parametrize("k", [128, 104], ids=["k-whole-steps", "k-partial-step"])
def test_the_last_round_s_tiles_are_split_along_k_and_added_up(
    k: int, b_transposed: bool, monkeypatch: pytest.MonkeyPatch, fresh_autotune_cache
) -> None:
    # 48 x 48 in tiles of 16 x 16 is 9 tiles on the interpreter's 4 slots: two full
    # rounds and 1 tile left, split into 4 pieces of one step along K each (the last
    # piece partly past K when K = 104).
    monkeypatch.setattr(matmul, "PERSISTENT_MIN_OUTPUT", 0)
    monkeypatch.setattr(matmul, "_SPLIT_BUFFERS", {})
    partials, counters, max_split = matmul.tail_split_args(DEVICE, matmul.INTERPRETER_SLOTS)
    assert max_split == matmul.MAX_SPLIT == 4
    partials.fill_(float("nan"))
    a = randn(48, k, dtype=torch.float16, seed=3)
    w = randn(48, k, dtype=torch.float16, seed=4)
    b = w.t() if b_transposed else w.t().contiguous()
    for _ in range(2):  # the second call goes through the plan, with the same buffers
        out = matmul.matmul(a, b, "relu")
        assert_close_to_float64(out, torch.relu(a.double() @ b.double()), torch.float16)
        # The four pieces wrote their partial sums (a 16 x 16 tile each), nothing more,
        # and the counter of the split tile is back to zero for the next call.
        written = torch.isfinite(partials.view(-1, 16 * 16)).all(dim=1)
        assert written.nonzero().flatten().tolist() == [0, 1, 2, 3]
        assert not counters.any()


def test_with_max_split_one_no_tile_is_split(
    monkeypatch: pytest.MonkeyPatch, fresh_autotune_cache
) -> None:
    monkeypatch.setattr(matmul, "PERSISTENT_MIN_OUTPUT", 0)
    monkeypatch.setattr(matmul, "_SPLIT_BUFFERS", {})
    monkeypatch.setattr(matmul, "MAX_SPLIT", 1)
    partials, _, _ = matmul.tail_split_args(DEVICE, matmul.INTERPRETER_SLOTS)
    partials.fill_(float("nan"))
    a, b = randn(48, 64, dtype=torch.float16, seed=5), randn(64, 48, dtype=torch.float16)
    assert_close_to_float64(matmul.matmul(a, b), a.double() @ b.double(), torch.float16)
    assert partials.isnan().all()


@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_a_thread_whose_first_cuda_work_is_a_product_gets_it_right(dtype: torch.dtype) -> None:
    # Autograd's backward thread was such a thread: on the H200 its first TMA launch
    # failed with "invalid device context" (kernels.triton_helpers.runtime.bind_cuda_context).
    a, b = half(40, 64, dtype=dtype), half(64, 48, dtype=dtype)
    with ThreadPoolExecutor(max_workers=1) as fresh_thread:
        product = fresh_thread.submit(matmul.matmul, a, b).result()  # raises what it raised
    assert_close_to_float64(product, a.double() @ b.double(), dtype)


@pytest.mark.parametrize(
    "tuner",
    [
        matmul.tuned_matmul_kernel,
        matmul.tuned_matmul_tma_kernel,
        matmul.tuned_matmul_tma_persistent_kernel,
    ],
    ids=["pointers", "descriptors", "persistent"],
)
def test_autotune_ranks_candidates_by_gpu_time(tuner: object) -> None:
    # Not Triton's default do_bench, whose events around each call time the host for
    # a kernel shorter than its launch.
    assert tuner.do_bench is matmul.candidate_gpu_time


def test_a_product_binds_its_thread_on_the_planned_path_too(monkeypatch: pytest.MonkeyPatch):
    # A shape launched before goes through its plan; on a thread whose first CUDA work it
    # is (autograd's), its descriptors need the bound context as much as the first time.
    bound: list[threading.Thread] = []
    bind = matmul.bind_cuda_context

    def bind_and_note(device: torch.device) -> None:
        # Still binds: on a GPU, the fresh thread's descriptors need it.
        bound.append(threading.current_thread())
        bind(device)

    monkeypatch.setattr(matmul, "bind_cuda_context", bind_and_note)
    monkeypatch.setattr(matmul, "_tma_plans", {})
    a, b = half(40, 64, dtype=torch.float16), half(64, 48, dtype=torch.float16)
    matmul.matmul(a, b)
    assert len(matmul._tma_plans) == 1
    with ThreadPoolExecutor(max_workers=1) as fresh_thread:
        fresh_thread.submit(matmul.matmul, a, b).result()
    assert len(bound) == 2 and bound[1] is not bound[0]


# Operands whose rows TMA cannot read in place: an odd inner size (rows of 37 halves are
# 74 bytes apart), the same transposed, an odd number of rows read transposed, a strided
# view. Each (a, b) is 45 x 37 by 37 x 29 (or so): C's rows (29 halves) are unaligned too.
UNALIGNED = {
    "odd-k": lambda dtype: (half(45, 37, dtype=dtype), half(37, 29, dtype=dtype)),
    "odd-k-w.t()": lambda dtype: (half(45, 37, dtype=dtype), half(29, 37, dtype=dtype).t()),
    "odd-m-a.t()": lambda dtype: (half(37, 45, dtype=dtype).t(), half(37, 29, dtype=dtype)),
    "strided": lambda dtype: (
        half(90, 80, dtype=dtype)[::2, 3:77:2], half(74, 60, dtype=dtype)[::2, 1:59:2]
    ),
}  # fmt: skip


@pytest.mark.parametrize("persistent", [False, True], ids=["per-tile", "persistent"])
@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("layout", UNALIGNED)
def test_unaligned_operands_are_copied_to_aligned_rows_and_read_by_tma(
    layout: str, dtype: torch.dtype, persistent: bool, monkeypatch: pytest.MonkeyPatch,
    fresh_autotune_cache,
) -> None:  # fmt: skip
    a, b = UNALIGNED[layout](dtype)
    assert not matmul.tma_applies(*_as_descriptors_see_them(a, b))
    monkeypatch.setattr(matmul, "ALIGNED_COPY_MIN_REUSE", 1)
    monkeypatch.setattr(matmul, "PERSISTENT_MIN_OUTPUT", 0 if persistent else 10**9)
    copied = []
    copy = matmul.aligned_copy
    monkeypatch.setattr(matmul, "aligned_copy", lambda t: copied.append(t.shape) or copy(t))
    reference = matmul.torch_matmul(a.double(), b.double(), "relu")
    first = matmul.matmul(a, b, "relu")
    assert len(copied) == 2  # both operands
    # The second call goes through the plan the first made: it copies again.
    second = matmul.matmul(a.clone() if layout == "odd-k" else a, b, "relu")
    assert len(copied) == 4 and len(matmul._tma_plans) == 1
    for out in (first, second):
        assert out.shape == reference.shape and out.is_contiguous()
        assert_close_to_float64(out, reference, dtype)
    kernel = (
        matmul.tuned_matmul_tma_persistent_kernel if persistent else matmul.tuned_matmul_tma_kernel
    )
    assert kernel.cache and not matmul.tuned_matmul_kernel.cache


def test_a_product_that_reuses_an_operand_little_reads_it_in_place(
    monkeypatch: pytest.MonkeyPatch, fresh_autotune_cache
) -> None:
    # B's values are used M = 45 times, fewer than the threshold: no copy, the pointer
    # kernel reads both where they lie.
    monkeypatch.setattr(matmul, "ALIGNED_COPY_MIN_REUSE", 46)
    monkeypatch.setattr(matmul, "aligned_copy", lambda t: pytest.fail("copied"))
    a, b = UNALIGNED["odd-k"](torch.float16)
    assert_close_to_float64(matmul.matmul(a, b), a.double() @ b.double(), torch.float16)
    assert matmul.tuned_matmul_kernel.cache and not matmul.tuned_matmul_tma_kernel.cache


def test_only_the_operand_tma_cannot_read_is_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matmul, "ALIGNED_COPY_MIN_REUSE", 1)
    copied = []
    copy = matmul.aligned_copy
    monkeypatch.setattr(matmul, "aligned_copy", lambda t: copied.append(t.shape) or copy(t))
    # A's rows are 64 halves (aligned); B's, 29 halves, are not (nor, then, are C's).
    a, b = half(45, 64), half(64, 29)
    assert_close_to_float64(matmul.matmul(a, b), a.double() @ b.double(), torch.float16)
    assert copied == [(64, 29)]


@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize(("rows", "cols"), [(3, 1), (5, 37), (4, 8), (2, 100)])
def test_an_aligned_copy_has_the_values_and_rows_on_16_byte_boundaries(
    rows: int, cols: int, dtype: torch.dtype
) -> None:
    matrix = half(cols, rows, dtype=dtype).t()  # any layout: here column-major
    copy = matmul.aligned_copy(matrix)
    assert copy.shape == matrix.shape and torch.equal(copy, matrix)
    assert matmul.tma_ready(copy) and copy.stride(0) * copy.element_size() % 16 == 0
    assert copy.stride(0) - cols < 8  # padded to the next boundary only


def test_a_planned_launch_that_would_read_a_misaligned_start_goes_back_to_the_first_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The plan reads A in place: a later A of the same shape and strides that starts
    # 2 bytes off a boundary cannot take the plan (its descriptor would be refused).
    a, b = half(40, 72), half(64, 48)
    matmul.matmul(a[:, :64], b)
    assert len(matmul._tma_plans) == 1
    shifted = a[:, 1:65]
    assert shifted.stride() == a[:, :64].stride() and shifted.data_ptr() % 16
    plan = next(iter(matmul._tma_plans.values()))
    assert not plan.reads_in_place(shifted, b)
    assert_close_to_float64(matmul.matmul(shifted, b), shifted.double() @ b.double(),
                            torch.float16)  # fmt: skip


def test_aligned_copies_off_reads_every_operand_in_place_forward_and_backward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(matmul, "ALIGNED_COPY_MIN_REUSE", 1)
    monkeypatch.setattr(matmul, "aligned_copy", lambda t: pytest.fail("copied"))
    a, b = (t.requires_grad_() for t in UNALIGNED["odd-k-w.t()"](torch.float16))
    grad = half(45, 29)
    out = matmul.matmul(a, b, "relu", aligned_copies=False)
    out.backward(grad)
    reference, a_grad, b_grad = _reference_gradients(a, b, grad, "relu")
    assert_close_to_float64(out, reference, torch.float16)
    assert_close_to_float64(a.grad, a_grad, torch.float16)
    assert_close_to_float64(b.grad, b_grad, torch.float16)
    # The unaligned benchmarks' extra series is that call.
    assert matmul.IN_PLACE["Triton, no copy"] is matmul.matmul_in_place
    a, b = a.detach(), b.detach()
    assert_close_to_float64(matmul.matmul_in_place(a, b), a.double() @ b.double(), torch.float16)


def test_the_copies_are_made_in_the_backward_pass_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matmul, "ALIGNED_COPY_MIN_REUSE", 1)
    copied = []
    copy = matmul.aligned_copy
    monkeypatch.setattr(matmul, "aligned_copy", lambda t: copied.append(t.shape) or copy(t))
    a, b = (t.requires_grad_() for t in UNALIGNED["odd-k"](torch.bfloat16))
    grad = half(45, 29, dtype=torch.bfloat16)
    matmul.matmul(a, b).backward(grad)
    _, a_grad, b_grad = _reference_gradients(a, b, grad, "none")
    assert_close_to_float64(a.grad, a_grad, torch.bfloat16)
    assert_close_to_float64(b.grad, b_grad, torch.bfloat16)
    assert len(copied) > 2  # forward's two and the gradients' products'

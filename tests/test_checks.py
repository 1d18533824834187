"""The launchers' input checks: a good input passes on the fast path, and each bad one
still gets the error that names it, in the order the checks were always made."""

import re

import numpy as np
import pytest
import torch
from kernel_inputs import DEVICE, OTHER_DEVICE, randn

from kernels.triton_helpers.checks import (
    check_normalisation,
    check_parameter,
    check_rows,
    check_tensor,
    needs_grad,
)
from kernels.triton_helpers.launch import ROW_DTYPES
from kernels.triton_helpers.runtime import interpreted, kernel_device

FLOATS = (torch.float16, torch.bfloat16, torch.float32)
WHERE = "Triton's interpreter runs on the CPU" if interpreted() else "kernels run on the GPU"


def raises(error: type[Exception], message: str):
    """``pytest.raises`` for exactly ``message``."""
    return pytest.raises(error, match=f"^{re.escape(message)}$")


def test_the_kernel_device_follows_the_mode() -> None:
    assert kernel_device() == torch.device("cpu" if interpreted() else "cuda")


@pytest.mark.parametrize(
    "good",
    [
        randn(8),
        randn(2, 3, 4, dtype=torch.float16),
        torch.nn.Parameter(randn(8)),
        # Contiguous, with a size-one dimension whose stride is not the usual one.
        randn(3, 1, 8).transpose(0, 1),
        randn(0, 4),
    ],
    ids=["vector", "half 3-d", "parameter", "odd stride of a size-one dim", "empty"],
)
def test_check_tensor_passes_a_good_tensor_through(good: torch.Tensor) -> None:
    assert good.is_contiguous()
    assert check_tensor("x", good, FLOATS) is good


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ([1.0, 2.0], TypeError, "x must be a torch.Tensor, got list"),
        (None, TypeError, "x must be a torch.Tensor, got NoneType"),
        (np.ones(3), TypeError, "x must be a torch.Tensor, got ndarray"),
        (
            torch.ones(3, dtype=torch.int32, device=DEVICE),
            TypeError,
            "x has dtype int32; this kernel takes float16, bfloat16, float32",
        ),
        (
            torch.ones(3, dtype=torch.float64, device=DEVICE),
            TypeError,
            "x has dtype float64; this kernel takes float16, bfloat16, float32",
        ),
        (
            torch.ones(3, device=OTHER_DEVICE),
            ValueError,
            f"x is on {OTHER_DEVICE}, but {WHERE}: move it with .to('{DEVICE.type}')",
        ),
        (
            randn(8, 4).t(),
            ValueError,
            "x is not contiguous (strides (1, 4)); this kernel reads memory in order: "
            "pass .contiguous()",
        ),
        (
            randn(8)[::2],
            ValueError,
            "x is not contiguous (strides (2,)); this kernel reads memory in order: "
            "pass .contiguous()",
        ),
        # Several things wrong: the first check in the order type, dtype, device,
        # layout names it.
        (
            torch.ones(4, 2, dtype=torch.int64, device=OTHER_DEVICE).t(),
            TypeError,
            "x has dtype int64; this kernel takes float16, bfloat16, float32",
        ),
        (
            torch.ones(4, 2, device=OTHER_DEVICE).t(),
            ValueError,
            f"x is on {OTHER_DEVICE}, but {WHERE}: move it with .to('{DEVICE.type}')",
        ),
    ],
    ids=[
        "list",
        "None",
        "numpy",
        "int32",
        "float64",
        "other device",
        "transposed",
        "strided",
        "dtype before device",
        "device before layout",
    ],
)
def test_check_tensor_names_what_is_wrong(value: object, error: type, message: str) -> None:
    with raises(error, message):
        check_tensor("x", value, FLOATS)


def test_check_tensor_takes_any_collection_of_dtypes() -> None:
    x = randn(4)
    assert check_tensor("x", x, [torch.float32]) is x
    assert check_tensor("x", x, {torch.float32, torch.float16}) is x
    with raises(TypeError, "x has dtype float32; this kernel takes float16"):
        check_tensor("x", x, [torch.float16])


@pytest.mark.parametrize(
    ("shape", "message"),
    [((), "x has shape (); it needs rows of at least one value"),
     ((3, 0), "x has shape (3, 0); it needs rows of at least one value")],
)  # fmt: skip
def test_check_rows_refuses_tensors_without_values_in_a_row(shape: tuple, message: str) -> None:
    with raises(ValueError, message):
        check_rows("x", torch.ones(shape, device=DEVICE), ROW_DTYPES)


def test_check_rows_passes_rows_through() -> None:
    x = randn(3, 5)
    assert check_rows("x", x, ROW_DTYPES) is x


def test_check_parameter_passes_a_good_weight_through() -> None:
    x = randn(4, 8)
    for weight in (randn(8), torch.nn.Parameter(randn(8))):
        assert check_parameter("weight", weight, x) is weight


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (None, TypeError, "weight must be a torch.Tensor, got NoneType"),
        (
            randn(8, dtype=torch.float16),
            TypeError,
            "weight is float16 but the input is float32: cast one of them",
        ),
        (
            torch.ones(8, device=OTHER_DEVICE),
            ValueError,
            f"weight is on {OTHER_DEVICE}, but {WHERE}: move it with .to('{DEVICE.type}')",
        ),
        (
            randn(16)[::2],
            ValueError,
            "weight is not contiguous (strides (2,)); this kernel reads memory in order: "
            "pass .contiguous()",
        ),
        (randn(7), ValueError, "weight has shape (7,); it must be (8,), one per column"),
        (randn(1, 8), ValueError, "weight has shape (1, 8); it must be (8,), one per column"),
        (randn(), ValueError, "weight has shape (); it must be (8,), one per column"),
    ],
    ids=["None", "dtype", "device", "strided", "length", "a matrix", "a scalar"],
)
def test_check_parameter_names_what_is_wrong(value: object, error: type, message: str) -> None:
    with raises(error, message):
        check_parameter("weight", value, randn(4, 8))


def test_check_normalisation_returns_eps_as_a_float() -> None:
    x = randn(4, 8)
    eps = check_normalisation(x, {"weight": randn(8)}, np.float32(1e-5), 16, ROW_DTYPES)
    assert type(eps) is float and eps == pytest.approx(1e-5)


@pytest.mark.parametrize(
    ("eps", "error", "message"),
    [
        (0.0, ValueError, "eps must be positive, got 0.0"),
        (-1, ValueError, "eps must be positive, got -1.0"),
        (float("nan"), ValueError, "eps must be positive, got nan"),
        ("1e-5", TypeError, "eps must be a number (int or float), got str '1e-5'"),
        (None, TypeError, "eps must be a number (int or float), got NoneType None"),
    ],
)
def test_check_normalisation_refuses_a_bad_eps(eps: object, error: type, message: str) -> None:
    with raises(error, message):
        check_normalisation(randn(4, 8), {"weight": randn(8)}, eps, 16, ROW_DTYPES)


def test_check_normalisation_checks_x_then_parameters_then_length() -> None:
    with raises(TypeError, "x must be a torch.Tensor, got NoneType"):
        check_normalisation(None, {"weight": None}, 0.0, 16, ROW_DTYPES)
    with raises(ValueError, "bias has shape (7,); it must be (8,), one per column"):
        check_normalisation(randn(4, 8), {"weight": randn(8), "bias": randn(7)}, 0.0, 4, ROW_DTYPES)
    with raises(ValueError, "x has rows of 8 values; this kernel takes at most 4"):
        check_normalisation(randn(4, 8), {"weight": randn(8)}, 0.0, 4, ROW_DTYPES)


def test_needs_grad_asks_grad_mode_and_every_tensor() -> None:
    plain, wanted = randn(3), randn(3).requires_grad_()
    assert not needs_grad()
    assert not needs_grad(plain, plain)
    assert needs_grad(plain, wanted)
    assert needs_grad(wanted, plain)
    with torch.no_grad():
        assert not needs_grad(plain, wanted)
    with torch.inference_mode():
        assert not needs_grad(wanted)


def test_a_lazily_negated_view_is_refused_by_every_launcher_not_read_with_the_wrong_sign() -> None:
    # Before: its memory holds -x, and add, matmul and swiglu returned the wrong sign.
    from kernels.operations import matmul, swiglu, vector_add

    x = randn(8, 8)
    negated = torch._neg_view(x)
    assert negated.is_neg() and negated.is_contiguous()
    message = r"is a lazily negated view .* pass \w+\.resolve_neg\(\)"
    with pytest.raises(ValueError, match=message):
        check_tensor("x", negated, {torch.float32})
    with pytest.raises(ValueError, match="^y " + message):
        vector_add.add(x, negated)
    with pytest.raises(ValueError, match=message):
        half = x.to(torch.bfloat16)
        matmul.matmul(torch._neg_view(half), half)
    with pytest.raises(ValueError, match=message):
        swiglu.swiglu(negated, x)


@pytest.mark.parametrize("to_sparse", ["to_sparse", "to_sparse_csr"])
def test_a_sparse_tensor_is_refused_by_name_not_read_as_dense_memory(to_sparse: str) -> None:
    # Before: matmul, which takes strides, let it through to Triton, which failed inside
    # ("Cannot access storage of SparseTensorImpl"); the others asked for .contiguous().
    import warnings

    from kernels.operations import matmul, vector_add

    half = randn(8, 8).to(torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
        sparse = getattr(half, to_sparse)()
    message = r"\w* tensor; this kernel reads a dense tensor's memory: pass b\.to_dense\(\)"
    with pytest.raises(TypeError, match=r"^b is a sparse" + message):
        matmul.matmul(half, sparse)
    with pytest.raises(TypeError, match=r"^a is a sparse"):
        matmul.matmul(sparse, half)
    with pytest.raises(TypeError, match=r"^x is a sparse"):
        vector_add.add(sparse, half)


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_a_lazily_negated_weight_or_bias_is_refused(norm: str) -> None:
    # Found by tests/test_sweep.py: check_parameter's quick path let a negated view
    # through, and the kernels read its memory, the opposite sign.
    from kernels.operations import layer_norm, rms_norm

    x, weight = randn(4, 16), randn(16, seed=1)
    negated = torch._neg_view(weight)
    with pytest.raises(ValueError, match=r"^weight is a lazily negated view"):
        if norm == "rms":
            rms_norm.rms_norm(x, negated)
        else:
            layer_norm.layer_norm(x, negated, weight)
    if norm == "layer":
        with pytest.raises(ValueError, match=r"^bias is a lazily negated view"):
            layer_norm.layer_norm(x, weight, negated)

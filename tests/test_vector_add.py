"""The vector-add kernel against float64 references, its gradients, and every bad input it
must reject (an ``out`` that overlaps an input among them)."""

import re

import pytest
import torch

from kernels.harness.bench import RELATIVE_TOLERANCE, relative_error
from kernels.operations import vector_add
from kernels.triton_helpers.compiler_output import compile_for_gpu
from kernels.triton_helpers.runtime import interpreted, kernel_device

SIZES = [1, 127, 1024, 1025, 98432]
DEVICE = kernel_device()
# A device the kernels do not run on: "meta" tensors have a shape and no data.
OTHER_DEVICE = torch.device("meta") if interpreted() else torch.device("cpu")


def random_pair(n: int, dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator(device=DEVICE).manual_seed(seed)
    return vector_add.make_inputs(n, dtype, DEVICE, generator)


@pytest.mark.parametrize("dtype", vector_add.SUPPORTED_DTYPES, ids=str)
@pytest.mark.parametrize("n", SIZES)
def test_matches_float64_reference(n: int, dtype: torch.dtype) -> None:
    x, y = random_pair(n, dtype, seed=n)
    out = vector_add.add(x, y)
    reference = x.double() + y.double()
    assert out.dtype == dtype and out.shape == x.shape
    assert relative_error(out, reference) <= RELATIVE_TOLERANCE[dtype]
    # The sum of two values is exact in float64, so the result is that sum rounded once
    # to the dtype: within one unit in the last place (the interpreter truncates bf16).
    ulp = torch.finfo(dtype).eps * reference.abs().clamp_min(torch.finfo(dtype).tiny)
    assert torch.all((out.double() - reference).abs() <= ulp)


def test_writes_into_out_and_every_element() -> None:
    x, y = random_pair(3000, torch.float32)
    out = torch.full_like(x, float("nan"))
    result = vector_add.add(x, y, out=out)
    assert result is out
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, x + y)


def test_keeps_the_shape_of_a_contiguous_matrix() -> None:
    x, y = (t.reshape(37, 29) for t in random_pair(37 * 29, torch.float32))
    torch.testing.assert_close(vector_add.add(x, y), x + y)


def test_empty_tensors_give_an_empty_result() -> None:
    x = torch.empty(0, device=DEVICE)
    out = vector_add.add(x, x.clone())
    assert out.shape == (0,) and out.device.type == DEVICE.type


def test_rejects_tensors_on_another_device() -> None:
    x, y = random_pair(16, torch.float32)
    with pytest.raises(ValueError, match=r"^y is on meta|^y is on cpu"):
        vector_add.add(x, y.to(OTHER_DEVICE))
    with pytest.raises(ValueError, match=r"^x is on"):
        vector_add.add(x.to(OTHER_DEVICE), y.to(OTHER_DEVICE))


def test_rejects_dtypes_that_differ() -> None:
    x, y = random_pair(16, torch.float32)
    with pytest.raises(TypeError, match=r"x is float32 but y is float16"):
        vector_add.add(x, y.half())


def test_rejects_unsupported_dtype() -> None:
    x = torch.arange(16, device=DEVICE)
    with pytest.raises(
        TypeError, match=r"x has dtype int64; this kernel takes float16, bfloat16, float32"
    ):
        vector_add.add(x, x)


def test_rejects_shapes_that_differ() -> None:
    x, _ = random_pair(16, torch.float32)
    with pytest.raises(ValueError, match=r"x has shape \(16,\) but y has shape \(4, 4\)"):
        vector_add.add(x, x.reshape(4, 4))


def test_rejects_a_non_contiguous_input() -> None:
    x, y = random_pair(64, torch.float32)
    with pytest.raises(ValueError, match=r"x is not contiguous"):
        vector_add.add(x[::2], y[::2])
    with pytest.raises(ValueError, match=r"y is not contiguous"):
        vector_add.add(x[:32], y[::2])


def test_rejects_a_mismatched_out() -> None:
    x, y = random_pair(16, torch.float32)
    with pytest.raises(ValueError, match=r"x has shape \(16,\) but out has shape \(8,\)"):
        vector_add.add(x, y, out=torch.empty(8, device=DEVICE))
    with pytest.raises(TypeError, match=r"x is float32 but out is bfloat16"):
        vector_add.add(x, y, out=torch.empty(16, device=DEVICE, dtype=torch.bfloat16))


def test_rejects_something_that_is_not_a_tensor() -> None:
    x, _ = random_pair(4, torch.float32)
    with pytest.raises(TypeError, match=r"y must be a torch.Tensor, got list"):
        vector_add.add(x, [1.0, 2.0, 3.0, 4.0])


def test_gradient_of_both_inputs_is_the_output_gradient() -> None:
    x, y = (t.requires_grad_() for t in random_pair(1000, torch.float32))
    out = vector_add.add(x, y)
    assert out.grad_fn is not None
    dout = random_pair(1000, torch.float32, seed=1)[0]
    out.backward(dout)
    assert torch.equal(x.grad, dout) and torch.equal(y.grad, dout)


def test_gradient_of_one_input() -> None:
    x, y = random_pair(50, torch.float32)
    x.requires_grad_()
    vector_add.add(x, y).sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x)) and y.grad is None


def test_out_may_be_an_input_itself() -> None:
    x, y = random_pair(3000, torch.float32)
    expected = x + y
    assert vector_add.add(x, y, out=x) is x
    torch.testing.assert_close(x, expected)


@pytest.mark.parametrize(("start", "name"), [(1, "x"), (-1, "x"), (4097, "y")])
def test_rejects_an_out_that_partly_overlaps_an_input(start: int, name: str) -> None:
    buffer = torch.zeros(3 * 4096, device=DEVICE)
    x, y = buffer[4096:8192], torch.ones(4096, device=DEVICE)
    if name == "y":
        x, y = y, buffer[:4096]
    out = buffer[4096 + start : 8192 + start] if name == "x" else buffer[start - 4096 : start]
    with pytest.raises(ValueError, match=rf"^out overlaps {name} in memory"):
        vector_add.add(x, y, out=out)


def test_an_out_beside_an_input_in_one_buffer_is_fine() -> None:
    buffer = torch.ones(2048, device=DEVICE)
    x, out = buffer[:1024], buffer[1024:]
    vector_add.add(x, x.clone(), out=out)
    assert torch.equal(out, torch.full_like(out, 2.0)) and torch.equal(x, torch.ones_like(x))


@pytest.mark.parametrize("name", ["x", "y", "out"])
def test_out_refuses_tensors_that_need_a_gradient(name: str) -> None:
    tensors = dict(zip(("x", "y"), random_pair(16, torch.float32), strict=True))
    tensors["out"] = torch.empty(16, device=DEVICE)
    tensors[name].requires_grad_()
    with pytest.raises(RuntimeError, match=rf"^{name} requires grad, but add with out= records"):
        vector_add.add(**tensors)
    with torch.no_grad():
        vector_add.add(**tensors)


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_full_tiles_load_vectors_whatever_the_length(dtype: str) -> None:
    # Compiled for an H200 as a launch with an odd length is: the pointers aligned, the
    # length not a multiple of 16. add_kernel then loads one element at a time; the
    # launcher's kernel loads its full tiles 16 bytes at a time and only the tail singly.
    signature = {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}",
                 "n_elements": "i32", "BLOCK_SIZE": "constexpr"}  # fmt: skip
    aligned = ("x_ptr", "y_ptr", "out_ptr")

    def loads(kernel: str) -> set[str]:
        ptx = compile_for_gpu(f"kernels.operations.vector_add:{kernel}", signature,
                              {"BLOCK_SIZE": 1024}, divisible_by_16=aligned)["ptx"]  # fmt: skip
        return set(re.findall(r"ld\.global[.\w]*", ptx))

    assert "ld.global.v4.b32" not in loads("add_kernel")
    assert "ld.global.v4.b32" in loads("add_tail_apart_kernel")


def test_writing_into_out_counts_as_an_in_place_write_for_autograd() -> None:
    # Before: the kernel's store left x's version counter as it was, and the backward
    # of a graph that had saved x computed with the new values, silently.
    weight = torch.randn(16, device=kernel_device(), requires_grad=True)
    x = torch.randn(16, device=kernel_device())
    product = weight * x  # saves x for the backward
    version = x._version
    vector_add.add(x, x, out=x)
    assert x._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        product.sum().backward()

"""Input checks shared by the launchers: every bad input gets an error that names it.

A Triton kernel trusts its pointers: a CPU tensor handed to a GPU kernel, a strided view
or a tensor of another dtype gives a crash or a silently wrong answer. Launchers call
these checks first so that the mistake is reported in the caller's terms.
"""

import numbers
from collections.abc import Collection
from operator import attrgetter

import torch

from .runtime import interpreted, kernel_device

# Whether a tensor is on the kernel device, in one attribute read. Kernels are compiled or
# interpreted when their modules load, after kernels.triton_helpers.runtime has set
# TRITON_INTERPRET, so
# the answer is taken once, here.
_on_kernel_device = attrgetter("is_cpu" if interpreted() else "is_cuda")


def _dtype_names(dtypes: Collection[torch.dtype]) -> str:
    return ", ".join(str(dtype).removeprefix("torch.") for dtype in dtypes)


def check_tensor(
    name: str,
    value: object,
    dtypes: Collection[torch.dtype],
    *,
    contiguous: bool = True,
) -> torch.Tensor:
    """Check that argument ``name`` is a contiguous tensor of an allowed dtype on the kernel device.

    Raises ``TypeError`` for a non-tensor, a sparse one or a dtype outside ``dtypes``, and
    ``ValueError`` for a tensor on the wrong device, a lazily negated view, or, unless
    ``contiguous`` is False (for a kernel that takes strides), a non-contiguous one.
    """
    # A launcher runs this on every call: a good tensor costs five attribute reads, and
    # only a bad one goes on to the checks below, which find what is wrong.
    if (
        isinstance(value, torch.Tensor)
        and value.layout is torch.strided
        and value.dtype in dtypes
        and _on_kernel_device(value)
        and (not contiguous or value.is_contiguous())
        and not value.is_neg()
    ):
        return value
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.layout is not torch.strided:
        # A sparse tensor's memory holds its indices and values, not its elements.
        layout = str(value.layout).removeprefix("torch.")
        raise TypeError(
            f"{name} is a {layout} tensor; this kernel reads a dense tensor's memory: "
            f"pass {name}.to_dense()"
        )
    if value.dtype not in dtypes:
        raise TypeError(
            f"{name} has dtype {str(value.dtype).removeprefix('torch.')}; "
            f"this kernel takes {_dtype_names(dtypes)}"
        )
    expected = kernel_device()
    if value.device.type != expected.type:
        where = (
            "Triton's interpreter runs on the CPU"
            if interpreted()
            else "kernels run on the GPU"
        )
        raise ValueError(
            f"{name} is on {value.device}, but {where}: move it with .to('{expected.type}')"
        )
    if value.is_neg():
        # Its values are the negatives of what its memory holds, and a kernel reads the
        # memory: it would return the wrong sign.
        raise ValueError(
            f"{name} is a lazily negated view (its negative bit is set, as z.conj().imag "
            f"gives): pass {name}.resolve_neg()"
        )
    if contiguous and not value.is_contiguous():
        raise ValueError(
            f"{name} is not contiguous (strides {tuple(value.stride())}); "
            "this kernel reads memory in order: pass .contiguous()"
        )
    return value


def check_same_layout(
    names: tuple[str, str], first: torch.Tensor, second: torch.Tensor
) -> None:
    """Check that two checked tensors share device, dtype and shape, naming both on failure."""
    a, b = names
    if first.device != second.device:
        raise ValueError(f"{a} is on {first.device} but {b} is on {second.device}")
    if first.dtype != second.dtype:
        raise TypeError(
            f"{a} is {str(first.dtype).removeprefix('torch.')} but "
            f"{b} is {str(second.dtype).removeprefix('torch.')}: cast one of them"
        )
    if first.shape != second.shape:
        raise ValueError(
            f"{a} has shape {tuple(first.shape)} but {b} has shape {tuple(second.shape)}"
        )


def check_rows(
    name: str, value: object, dtypes: Collection[torch.dtype]
) -> torch.Tensor:
    """Check a tensor that a row-wise kernel reads: as :func:`check_tensor`, with at least
    one dimension and a non-empty last dimension (the row)."""
    tensor = check_tensor(name, value, dtypes)
    if tensor.dim() == 0 or tensor.shape[-1] == 0:
        raise ValueError(
            f"{name} has shape {tuple(tensor.shape)}; it needs rows of at least one value"
        )
    return tensor


def check_parameter(name: str, value: object, like: torch.Tensor) -> torch.Tensor:
    """Check a per-column parameter (a weight or a bias) of a row-wise kernel on ``like``."""
    if (
        isinstance(value, torch.Tensor)
        and value.layout is torch.strided
        and value.dtype == like.dtype
        and _on_kernel_device(value)
        and value.is_contiguous()
        and not value.is_neg()
        and value.dim() == 1
        and value.shape[0] == like.shape[-1]
    ):
        return value
    if isinstance(value, torch.Tensor) and value.dtype != like.dtype:
        raise TypeError(
            f"{name} is {str(value.dtype).removeprefix('torch.')} but the input is "
            f"{str(like.dtype).removeprefix('torch.')}: cast one of them"
        )
    tensor = check_tensor(name, value, (like.dtype,))
    n_cols = like.shape[-1]
    if tuple(tensor.shape) != (n_cols,):
        raise ValueError(
            f"{name} has shape {tuple(tensor.shape)}; it must be ({n_cols},), one per column"
        )
    return tensor


def check_normalisation(
    x: object,
    parameters: dict[str, object],
    eps: float,
    max_cols: int,
    dtypes: Collection[torch.dtype],
) -> float:
    """Check the inputs of a normalisation over the last dimension: ``x`` as
    :func:`check_rows`, each per-column parameter as :func:`check_parameter`, rows no
    longer than ``max_cols`` (what fits in registers) and a positive number ``eps``,
    which is returned as a Python float."""
    tensor = check_rows("x", x, dtypes)
    for name, value in parameters.items():
        check_parameter(name, value, tensor)
    if tensor.shape[-1] > max_cols:
        raise ValueError(
            f"x has rows of {tensor.shape[-1]} values; this kernel takes at most {max_cols}"
        )
    eps = check_real("eps", eps)
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps!r}")
    return eps


def _what(value: object) -> str:
    """A short description of a value for an error message: its type, and its value
    unless it is a tensor (whose repr can run to pages)."""
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    return f"{type(value).__name__} {value!r}"


def check_real(name: str, value: object) -> float:
    """Check that scalar argument ``name`` is a real number (a Python or NumPy int or
    float, not a bool, a string, None or a tensor) and return it as a Python float."""
    if type(value) is float:  # the common case, with no further work
        return value
    if isinstance(value, bool | torch.Tensor) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number (int or float), got {_what(value)}")
    return float(value)


def check_integer(name: str, value: object) -> int:
    """Check that scalar argument ``name`` is an integer (a Python or NumPy int, not a
    bool, a float or a tensor) and return it as a Python int."""
    if type(value) is int:
        return value
    if isinstance(value, bool | torch.Tensor) or not isinstance(
        value, numbers.Integral
    ):
        raise TypeError(f"{name} must be an integer, got {_what(value)}")
    return int(value)


def check_bool(name: str, value: object) -> bool:
    """Check that flag ``name`` is a bool (Python's or NumPy's): a string such as
    ``"false"`` is true to Python, so it is refused rather than read."""
    if type(value) is bool:
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {_what(value)}")


def check_no_partial_overlap(
    names: tuple[str, str], out: torch.Tensor, other: torch.Tensor
) -> None:
    """Check that output ``out`` and input ``other`` (both contiguous) are the same memory
    or share none: where they partly overlap, a kernel would read values that another
    program has already overwritten, as PyTorch refuses too."""
    out_start, other_start = out.data_ptr(), other.data_ptr()
    out_bytes = out.numel() * out.element_size()
    other_bytes = other.numel() * other.element_size()
    if out_start == other_start and out_bytes == other_bytes:
        return
    if out_start < other_start + other_bytes and other_start < out_start + out_bytes:
        a, b = names
        raise ValueError(
            f"{a} overlaps {b} in memory without being the same elements: the kernel would "
            f"read values of {b} it has already overwritten. Pass a separate {a}, or {b} itself"
        )


def needs_grad(*tensors: torch.Tensor) -> bool:
    """Whether a call on ``tensors`` must record a gradient: grad mode is on and one of
    them requires one."""
    if torch.is_grad_enabled():
        for tensor in tensors:
            if tensor.requires_grad:
                return True
    return False


def check_no_grad(name: str, value: torch.Tensor, why: str) -> None:
    """Refuse input ``name`` when it needs a gradient that the launcher cannot give
    (``why`` says why): a result cut off from autograd would train silently wrong."""
    if value.requires_grad and torch.is_grad_enabled():
        raise RuntimeError(f"{name} requires grad, but {why}")

"""Liger-Kernel's softmax, LayerNorm, RMSNorm and cross-entropy, as a baseline.

Liger-Kernel (``pip install liger-kernel``, https://github.com/linkedin/Liger-Kernel) is
a library of Triton kernels for training language models. Each function here takes
the inputs of one of our benchmarks, calls the library's functional API
(``liger_kernel.transformers.functional``) with the arguments that make it compute what
our PyTorch reference computes, and returns its output: the benchmarks time it as the
series named :data:`SERIES`.

Where ``liger_kernel`` cannot be imported, or the library does not take an input, a
function raises :class:`~kernels.declarations.spec.ProviderUnavailable` with the reason, and the
harness records the series as unavailable there.
"""

import functools
import importlib
import importlib.metadata
from types import ModuleType

import torch

from ..declarations.spec import ProviderUnavailable

SERIES = "Liger"
DISTRIBUTION = "liger-kernel"
# The key a record keeps the installed release under.
VERSION_KEY = "liger_kernel"
# Liger-Kernel holds a row in one tile of a power-of-two size and refuses tiles of more
# than this many values (``calculate_settings`` in ``liger_kernel/ops/utils.py``).
MAX_ROW = 65536


@functools.cache
def _functional() -> ModuleType:
    # Cached once imported: a call does not pay for the import machinery. A failed
    # import is not cached, and is tried again at the next call.
    return importlib.import_module("liger_kernel.transformers.functional")


def functional_api() -> ModuleType:
    """``liger_kernel.transformers.functional``; :class:`ProviderUnavailable` if it
    cannot be imported here."""
    try:
        return _functional()
    except ImportError as error:
        raise ProviderUnavailable(
            f"{DISTRIBUTION} cannot be imported here ({error})"
        ) from None


def installed_version() -> str | None:
    """The release of liger-kernel that the wrappers call, or None if it cannot be
    imported ("unknown" if it imports but has no package metadata)."""
    try:
        _functional()
    except ImportError:
        return None
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _check_row(x: torch.Tensor, op: str) -> None:
    if x.shape[-1] > MAX_ROW:
        raise ProviderUnavailable(
            f"Liger-Kernel's {op} takes rows of at most {MAX_ROW:,} values"
        )


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Liger-Kernel's softmax over the last dimension (``liger_softmax``)."""
    api = functional_api()
    _check_row(x, "softmax")
    return api.liger_softmax(x)


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    """Liger-Kernel's LayerNorm over the last dimension (``liger_layer_norm``), with the
    ``eps`` of ``torch.nn.functional.layer_norm``."""
    api = functional_api()
    _check_row(x, "LayerNorm")
    return api.liger_layer_norm(x, weight, bias, eps)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Liger-Kernel's RMSNorm over the last dimension (``liger_rms_norm``), with the
    library's defaults: no offset added to the weight, the mean square and its inverse
    root in float32 and the product with the weight in the input's type
    (``casting_mode="llama"``, as Hugging Face's LLaMA computes it), and a backward pass
    that writes ``dx`` over the incoming gradient ``dy`` (``in_place=True``)."""
    api = functional_api()
    _check_row(x, "RMSNorm")
    return api.liger_rms_norm(x, weight, eps)


def cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100
) -> torch.Tensor:
    """Liger-Kernel's cross-entropy (``liger_cross_entropy``), the mean over the rows
    whose target is not ``ignore_index``. When the logits require a gradient, the
    forward pass computes it too and writes it over the logits."""
    api = functional_api()
    return api.liger_cross_entropy(logits, targets, ignore_index=ignore_index)


def cross_entropy_backward_alone(
    logits: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """Stands for Liger-Kernel in a benchmark that times the backward pass alone, which
    has no counterpart there: raises :class:`ProviderUnavailable` saying why."""
    raise ProviderUnavailable(
        "Liger-Kernel computes the gradient of the logits in its forward pass; its "
        "backward pass only scales that gradient, so it has no backward pass to compare"
    )

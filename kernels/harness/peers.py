"""Peer libraries' kernels as baselines: a benchmark names them, the harness runs them.

A kernel module declares a peer's series by name (``peer_baselines={"Liger":
"softmax"}`` in its :class:`~kernels.declarations.spec.BenchmarkSpec`) and imports no
peer library's code: the operations never run another library, and a family can be
added or changed without touching the adapters. Each adapter is a module of the harness
(:mod:`kernels.harness.liger`) whose functions take a benchmark's inputs; :data:`ADAPTERS`
says which series each one times. A record of a benchmark with a peer series covers the
adapter's code in its fingerprint (:func:`adapter_modules`).
"""

from collections.abc import Callable, Sequence
from types import ModuleType

from ..declarations.spec import BenchmarkSpec, Output
from . import liger

# Each peer series, and the adapter that times it.
ADAPTERS: dict[str, ModuleType] = {liger.SERIES: liger}


def _adapter(spec: BenchmarkSpec, series: str) -> ModuleType:
    if series not in ADAPTERS:
        raise ValueError(
            f"{spec.name}: no adapter times the peer series {series!r}; the harness has "
            f"{', '.join(map(repr, ADAPTERS))} (kernels/harness/peers.py)"
        )
    return ADAPTERS[series]


def resolve(spec: BenchmarkSpec) -> dict[str, Callable[..., Output]]:
    """The peer series of ``spec`` by name, each the adapter's function for the
    operation it names; ``ValueError`` naming the benchmark for an unknown series or
    operation."""
    found = {}
    for series, operation in spec.peer_baselines.items():
        adapter = _adapter(spec, series)
        function = getattr(adapter, operation, None)
        if operation.startswith("_") or not callable(function):
            raise ValueError(
                f"{spec.name}: the {series} adapter ({adapter.__name__}) has no operation "
                f"{operation!r}"
            )
        found[series] = function
    return found


def adapter_modules(spec: BenchmarkSpec) -> list[str]:
    """The modules of the adapters that ``spec``'s peer series run: code its record
    measures."""
    return [_adapter(spec, series).__name__ for series in spec.peer_baselines]


def library_versions(series_names: Sequence[str]) -> dict[str, str]:
    """The release of each peer library that one of ``series_names`` times, by the key a
    record keeps it under (``"cannot be imported"`` where it cannot)."""
    return {
        adapter.VERSION_KEY: adapter.installed_version() or "cannot be imported"
        for series, adapter in ADAPTERS.items()
        if series in series_names
    }

"""Put your own version of a course function in place of the course's, for a download.

A downloaded gallery page defines the kernels and launchers its page shows as code
(``docs/_ext/downloads.py`` writes them out), so that a reader can edit them. For an
edit to change what the page runs, the course's own code (the launchers, the benchmark
specs that the harness reads, the ``triton.autotune`` wrappers made when a module was
imported) must call the reader's version: :func:`swap_in` arranges that. It is not part
of any kernel: no kernel module imports it, so it is in no record's fingerprint.
"""

import dataclasses
import functools
import types
from typing import Any, TypeVar

from ..declarations.spec import BenchmarkSpec

T = TypeVar("T")


def swap_in(module: types.ModuleType, new: T) -> T:
    """Make ``new`` (a function, a class or a ``@triton.jit`` kernel, named as in
    ``module``) what ``module``'s code calls in place of the module's own object of that
    name, and return it as the module now holds it.

    - A plain function, a ``functools.cache`` of one, or a class's methods are given the
      module's global names, so that they call what the module holds (and what was
      swapped in before) whatever the caller's own names are. A kernel keeps its own.
    - The module's benchmark specs and its Triton wrappers (``triton.autotune``,
      ``triton.heuristics``) that held the old object hold the new one; a wrapper's
      tuning cache is cleared, so it tunes again for the new kernel.

    What other modules imported by name before is not changed, nor a reference held
    elsewhere (in a table built on import, say): there the module's own object stays.
    """
    name = getattr(new, "__name__", None)
    if not isinstance(module, types.ModuleType) or not isinstance(name, str):
        raise TypeError(
            "swap_in(module, new) takes a module and a named function, class or kernel, "
            f"not {type(module).__name__} and {type(new).__name__}"
        )
    namespace = vars(module)
    old = namespace.get(name)
    bound = _with_globals(new, namespace)
    setattr(module, name, bound)
    if old is None:
        return bound
    replaced = {id(old): bound}
    inner_old, inner_new = getattr(old, "fn", None), getattr(bound, "fn", None)
    if _is_jit(old) and inner_old is not None and inner_new is not None:
        replaced[id(inner_old)] = (
            inner_new  # an autotuner's base_fn, the plain function
        )
    for attribute, value in list(namespace.items()):
        if isinstance(value, BenchmarkSpec):
            changes = {
                f.name: replaced[id(getattr(value, f.name))]
                for f in dataclasses.fields(value)
                if id(getattr(value, f.name)) in replaced
            }
            if changes:
                setattr(module, attribute, dataclasses.replace(value, **changes))
        elif _is_triton_wrapper(value):
            held = {k: v for k, v in vars(value).items() if id(v) in replaced}
            for key, previous in held.items():
                setattr(value, key, replaced[id(previous)])
            cache = getattr(value, "cache", None)
            if held and isinstance(cache, dict):
                cache.clear()
    return bound


def _is_jit(value: object) -> bool:
    # A @triton.jit (or Gluon) kernel, compiled or run by the interpreter, without
    # importing Triton here.
    kind = type(value).__name__
    return kind.endswith("JITFunction") or kind == "InterpretedFunction"


def _is_triton_wrapper(value: object) -> bool:
    # triton.autotune and triton.heuristics make a KernelInterface that holds ``fn``.
    # A kernel is a KernelInterface too, but holds only its own Python function.
    interface = any(cls.__name__ == "KernelInterface" for cls in type(value).__mro__)
    return interface and hasattr(value, "fn") and not _is_jit(value)


def _with_globals(new: T, namespace: dict[str, Any]) -> T:
    # A function (or a class's functions) that reads its global names from ``namespace``.
    if isinstance(new, types.FunctionType):
        copy = types.FunctionType(
            new.__code__, namespace, new.__name__, new.__defaults__, new.__closure__
        )
        copy.__kwdefaults__ = new.__kwdefaults__
        copy.__dict__.update(new.__dict__)
        for attribute in ("__qualname__", "__doc__", "__annotations__"):
            setattr(copy, attribute, getattr(new, attribute))
        copy.__module__ = namespace.get("__name__", new.__module__)
        return copy  # type: ignore[return-value]
    wrapped = getattr(new, "__wrapped__", None)
    parameters = getattr(new, "cache_parameters", None)
    if isinstance(wrapped, types.FunctionType) and callable(parameters):
        # functools.cache / lru_cache: the same cache around the rebound function.
        settings = parameters()
        cache = functools.lru_cache(
            maxsize=settings["maxsize"], typed=settings["typed"]
        )
        return cache(_with_globals(wrapped, namespace))  # type: ignore[return-value]
    if isinstance(new, type):
        for attribute, value in list(vars(new).items()):
            if isinstance(value, staticmethod | classmethod):
                rebound = type(value)(_with_globals(value.__func__, namespace))
            elif isinstance(value, types.FunctionType):
                rebound = _with_globals(value, namespace)
            else:
                continue
            setattr(new, attribute, rebound)
        return new
    return new  # a kernel keeps its globals: Triton reads them when it compiles

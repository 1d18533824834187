"""The kernel families, found where they declare themselves.

Each module of the operations room that has public launchers declares a
:class:`~kernels.declarations.family.Family` named ``FAMILY`` (see
:mod:`kernels.declarations.family`). The harness and the tests read them here instead
of keeping lists of kernels, and never import an operation by name.
"""

import importlib
import pkgutil

from ..declarations.family import Family, LaunchCase, Launcher

# The room of the kernel families: kernels.operations, or ninja_gap.kernels.operations
# installed. The harness finds them there and never imports one by name.
OPERATIONS = __package__.rpartition(".")[0] + ".operations"

__all__ = [
    "Family",
    "LaunchCase",
    "Launcher",
    "discover",
    "launch_cost_families",
    "launch_costs",
    "launchers",
]


def discover() -> dict[str, Family]:
    """Every family, by the name of its module (``vector_add``), in order of name."""
    package = importlib.import_module(OPERATIONS)
    found = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{OPERATIONS}.{info.name}")
        family = getattr(module, "FAMILY", None)
        if family is None:
            continue
        if not isinstance(family, Family):
            raise TypeError(
                f"{module.__name__}.FAMILY is a {type(family).__name__}, not a Family "
                "(kernels/declarations/family.py)"
            )
        found[info.name] = family
    return found


def launchers() -> dict[str, Launcher]:
    """Every public launcher of every family, by ``module.function``."""
    found: dict[str, Launcher] = {}
    for family in discover().values():
        for launcher in family.launchers:
            if launcher.name in found:
                raise ValueError(f"two launchers are named {launcher.name!r}")
            found[launcher.name] = launcher
    return found


def launch_costs() -> dict[str, tuple[str, object]]:
    """Every row of the launch-cost record: its name, and the family module that sets it
    up with the function that does (``(module, setup)``)."""
    found: dict[str, tuple[str, object]] = {}
    for name, family in discover().items():
        for row, setup in family.launch_costs.items():
            if row in found:
                raise ValueError(
                    f"two families declare the launch-cost row {row!r}: "
                    f"{found[row][0]} and {name}"
                )
            found[row] = (f"{OPERATIONS}.{name}", setup)
    return found


def launch_cost_families() -> dict[str, str]:
    """The families that declare launch-cost rows, each of which has its own launch-cost
    record: the short name of each one's module (``vector_add``) -> the module's full
    name, in order of name."""
    return {module.rpartition(".")[2]: module for module, _ in launch_costs().values()}

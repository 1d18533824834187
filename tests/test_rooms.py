"""The layers of :mod:`kernels`, as rooms with rules: each subpackage may import only the
rooms below it. Read from the code's own imports (every ``import`` and ``from ... import``
statement, wherever it stands in a module, relative ones resolved).

- ``triton_helpers`` (building blocks of kernels and launchers) and ``declarations``
  (how an operation describes itself to the harness) import no other room;
- ``text`` (the messages and their translations) may use the helpers;
- ``operations`` (the kernel families) never import the harness, a peer library's
  adapter (those live in the harness) or a figure;
- ``harness`` (measuring, recording, records) never imports an operation by name: it
  finds the families in their room;
- ``figures`` (plots, tables, the other GPUs' tabs) read records through the harness and
  never import an operation;
- ``exercises`` (the learner's practice) and ``lessons`` (what a lesson runs on the
  course's own operations, such as the profiles it saves) sit on top and may use every
  room.
"""

import ast
import tomllib
from pathlib import Path

import pytest

import kernels

PACKAGE = Path(kernels.__file__).resolve().parent
ALLOWED = {
    "triton_helpers": set(),
    "declarations": set(),
    "text": {"triton_helpers"},
    "operations": {"triton_helpers", "declarations", "text"},
    "harness": {"triton_helpers", "declarations", "text"},
    "figures": {"harness", "triton_helpers", "declarations", "text"},
    "exercises": {"operations", "harness", "figures", "triton_helpers", "declarations", "text"},
    "lessons": {"operations", "harness", "figures", "triton_helpers", "declarations", "text"},
}


def modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if path != PACKAGE / "__init__.py")


def room_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Each ``kernels`` module (dotted, from the package root) that ``path`` imports, with
    the line of the import."""
    package = ["kernels", *path.relative_to(PACKAGE).parent.parts]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if node.module is None or module.count(".") < 2:  # kernels or a room
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, module))
    return [(line, name) for line, name in found if name.startswith("kernels.")]


def test_every_module_is_in_a_room() -> None:
    assert {room_of(path) for path in modules()} <= set(ALLOWED)
    assert not list(PACKAGE.glob("*.py"))[1:], "only the package's __init__ lies outside a room"


@pytest.mark.parametrize("path", modules(), ids=lambda path: str(path.relative_to(PACKAGE)))
def test_a_module_imports_only_its_own_room_and_the_rooms_below(path: Path) -> None:
    room = room_of(path)
    against = [
        f"line {line}: {name}"
        for line, name in imported_modules(path)
        if (target := name.split(".")[1]) != room and target not in ALLOWED[room]
    ]
    assert not against, f"{path.relative_to(PACKAGE)} ({room}) imports {against}"


def test_the_import_reader_resolves_relative_imports() -> None:
    # A check that would pass every module if it read no import.
    helpers = {name for _, name in imported_modules(PACKAGE / "operations" / "softmax.py")}
    assert "kernels.triton_helpers.direct_launch" in helpers
    assert "kernels.declarations.spec" in helpers


def test_a_room_s_init_holds_its_docstring_and_nothing_else() -> None:
    # The fingerprint skips a room's __init__.py when a module is imported through it.
    for init in PACKAGE.glob("*/__init__.py"):
        if room_of(init) == "exercises":
            continue  # a package of its own, with code: the fingerprint follows it
        body = ast.parse(init.read_text(encoding="utf-8")).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr), init


def test_the_installed_package_ships_every_room() -> None:
    # Before, pyproject.toml listed the package as it was before the rooms: an installed
    # course (the downloads run one) had no kernels.triton_helpers and failed to import.
    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    packages = set(config["tool"]["setuptools"]["packages"])
    rooms = {f"ninja_gap.kernels.{room}" for room in ALLOWED}
    assert rooms | {"ninja_gap.kernels"} <= packages
    assert {p.parent.name for p in PACKAGE.glob("*/__init__.py")} == set(ALLOWED)

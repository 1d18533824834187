"""What a code fingerprint reads: code that runs, not how it is commented or how an
import of the package is spelled."""

import ast
import shutil
from pathlib import Path

import pytest

from kernels.harness import fingerprint
from kernels.harness.provenance import caption


def test_a_relative_import_counts_as_the_absolute_one_it_means() -> None:
    relative = (
        "from ..declarations.spec import BenchmarkSpec\nfrom ..triton_helpers import runtime\n"
    )
    absolute = (
        "from kernels.declarations.spec import BenchmarkSpec\n"
        "from kernels.triton_helpers import runtime\n"
    )
    package = "kernels.operations"
    assert fingerprint.normalised_source(relative, package) == fingerprint.normalised_source(
        absolute, package
    )
    assert fingerprint.imported_modules(relative, package) == {
        "kernels.declarations.spec",
        "kernels.triton_helpers.runtime",
    }


def test_how_imports_are_grouped_and_ordered_does_not_change_the_code() -> None:
    # ruff sorts a moved module's imports again, and splits "from . import a, b" when a
    # and b end up in two rooms: what runs is the same.
    one = "import torch\nfrom ..triton_helpers import launch, runtime\nfrom .spec import X\nY = 1\n"
    other = (
        "from ..declarations.spec import X  # the declaration\n"
        "import torch\n"
        "from ..triton_helpers import (\n    runtime,\n    launch,\n)\nY = 1\n"
    )
    assert fingerprint.normalised_source(one, "kernels.operations") == (
        fingerprint.normalised_source(other, "kernels.declarations")
    )
    # An import inside a function is code where it stands.
    inside = "def f():\n    from ..harness import timing\n    return timing\n"
    assert "from kernels import timing" in fingerprint.normalised_source(
        inside, "kernels.operations"
    )


def test_a_subpackage_s_modules_and_relative_imports_are_followed() -> None:
    # kernels/exercises/ is a subpackage: its modules were looked for as
    # kernels/exercises.checker.py, and its "from .checker import" read as
    # kernels.checker, so a page that imports it did not depend on its code.
    assert (
        fingerprint.module_path("kernels.exercises.speed")
        .as_posix()
        .endswith("kernels/exercises/speed.py")
    )
    assert fingerprint.module_path("kernels.exercises").name == "__init__.py"
    source = (
        "from .checker import run_check\nfrom ..triton_helpers.checks import check_bool\n"
        "from . import speed\n"
    )
    assert fingerprint.imported_modules(source, "kernels.exercises") == {
        "kernels.exercises",  # "from . import" runs the package's __init__.py
        "kernels.exercises.checker",
        "kernels.triton_helpers.checks",
        "kernels.exercises.speed",
    }
    found = fingerprint.closure(fingerprint.imported_modules("from kernels.exercises import check"))
    assert {
        "kernels.exercises",
        "kernels.exercises.checker",
        "kernels.triton_helpers.checks",
    } <= set(found)


def test_another_import_still_changes_the_code() -> None:
    one = fingerprint.normalised_source("from .spec import BenchmarkSpec\n")
    other = fingerprint.normalised_source("from .checks import BenchmarkSpec\n")
    assert one != other


def test_an_installed_module_name_has_the_same_digests() -> None:
    assert fingerprint.code_digests("ninja_gap.kernels.operations.vector_add") == (
        fingerprint.code_digests("kernels.operations.vector_add")
    )
    # A record names a file without its room (kernels/vector_add.py): a move to
    # another room stales nothing.
    assert "kernels/vector_add.py" in fingerprint.code_digests("kernels.operations.vector_add")


def test_a_full_hash_given_for_the_commit_is_written_in_git_s_short_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Records quote the commit in captions: a 40-character hash widened a narrow page.
    full = "5f0b5f1a9f532e9daa2e7b377a8c73524f0c9ffa"
    monkeypatch.setenv(fingerprint.COMMIT_VARIABLE, full)
    assert fingerprint.commit() == full[:12]
    monkeypatch.setenv(fingerprint.COMMIT_VARIABLE, "test")
    assert fingerprint.commit() == "test"


def test_a_caption_quotes_a_record_s_full_hash_in_its_short_form() -> None:
    # A record written with the full hash stays as the GPU run wrote it; its caption
    # quotes the commit as git's short form.
    full = "5f0b5f1a9f532e9daa2e7b377a8c73524f0c9ffa"
    environment = {"gpu": "NVIDIA H200", "driver": "580", "cuda": "13.0", "torch": "2.11",
                   "triton": "3.6.0", "date": "2026-12-03T17:30:00Z",
                   "command": "nox --no-venv -s bench"}  # fmt: skip
    for fresh in (True, False):
        text = caption(environment, full, fresh=fresh)
        assert f"commit {full[:12]}" in text and full not in text


# Modules moved from one room to another: the harness's timing into the Triton helpers,
# a Triton helper into the operations (rms_norm imports it, and the timing closure
# holds both).
MOVES = {"timing": ("harness", "triton_helpers"), "row_tiles": ("triton_helpers", "operations")}


def _moved_copy(root: Path) -> Path:
    """A copy of kernels/ under ``root`` with the MOVES made and every import rewritten
    as a contributor might after a move: absolute, one name per statement, in another
    order; returns its kernels/."""
    package = root / "kernels"
    shutil.copytree(fingerprint.PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    for name, (old, new) in MOVES.items():
        (package / old / f"{name}.py").rename(package / new / f"{name}.py")
    moved = {f"kernels.{old}.{name}": f"kernels.{new}.{name}" for name, (old, new) in MOVES.items()}
    for path in package.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        here = ".".join(parts[:-1])
        # Where the module stood before the move: its relative imports start there.
        for name, (old, new) in MOVES.items():
            if parts == ("kernels", new, name):
                here = f"kernels.{old}"
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        edits = []
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = here.split(".")
            module = ".".join(
                [*base[: len(base) - node.level + 1], *filter(None, [node.module])]
                if node.level
                else [node.module or ""]
            )
            if not module.startswith("kernels"):
                continue  # a move changes no import of another library
            statements = []
            for alias in reversed(node.names):
                full = moved.get(f"{module}.{alias.name}")
                target = full.rpartition(".")[0] if full else moved.get(module, module)
                statements.append(f"from {target} import {alias.name}"
                                  + (f" as {alias.asname}" if alias.asname else ""))  # fmt: skip
            indent = " " * node.col_offset
            edits.append((node.lineno, node.end_lineno, indent + f"\n{indent}".join(statements)))
        for first, last, text in sorted(edits, reverse=True):
            lines[first - 1 : last] = [text]
        source = "\n".join(lines) + "\n"
        path.write_text(source, encoding="utf-8")
        ast.parse(source)  # still Python
    return package


def test_moving_modules_between_rooms_stales_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = fingerprint.code_digests("kernels.operations.rms_norm")
    assert {"kernels/rms_norm.py", "kernels/row_tiles.py", "kernels/timing.py"} <= set(before)
    package = _moved_copy(tmp_path)
    assert (package / "operations" / "row_tiles.py").is_file()
    assert "from kernels.operations.row_tiles import row_tile" in (
        package / "operations" / "rms_norm.py"
    ).read_text(encoding="utf-8")
    monkeypatch.setattr(fingerprint, "PACKAGE_DIR", package)
    monkeypatch.setattr(fingerprint, "REPOSITORY", tmp_path)
    after = fingerprint.code_digests("kernels.operations.rms_norm", "kernels.triton_helpers.timing")
    assert after == before
    assert fingerprint.combine(after) == fingerprint.combine(before)
    # A change of code that runs, in a moved module, still shows.
    moved = package / "operations" / "row_tiles.py"
    moved.write_text(moved.read_text(encoding="utf-8") + "\nEXTRA = 1\n", encoding="utf-8")
    changed = fingerprint.code_digests(
        "kernels.operations.rms_norm", "kernels.triton_helpers.timing"
    )
    assert fingerprint.changed_files(before, changed) == ["kernels/row_tiles.py"]


def test_two_modules_named_alike_once_the_rooms_are_out_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "kernels"
    (package / "harness").mkdir(parents=True)
    (package / "timing.py").write_text("from kernels.harness import timing\n")
    (package / "harness" / "timing.py").write_text("X = 1\n")
    monkeypatch.setattr(fingerprint, "PACKAGE_DIR", package)
    monkeypatch.setattr(fingerprint, "REPOSITORY", tmp_path)
    with pytest.raises(ValueError, match=r"kernels/timing\.py once the rooms"):
        fingerprint.file_digests(["kernels.timing", "kernels.harness.timing"])

"""What a code fingerprint reads: code that runs, not how it is commented or how an
import of the package is spelled."""

import ast
import re
import shutil
from pathlib import Path

import pytest

from kernels.harness import fingerprint
from kernels.harness.provenance import caption


def test_a_relative_import_counts_as_the_absolute_one_it_means() -> None:
    relative = "from .spec import BenchmarkSpec\nfrom . import runtime\n"
    absolute = "from kernels.declarations.spec import BenchmarkSpec\nfrom kernels import runtime\n"
    assert fingerprint.normalised_source(relative) == fingerprint.normalised_source(absolute)
    assert fingerprint.imported_modules(relative) == {
        "kernels.declarations.spec",
        "kernels.triton_helpers.runtime",
    }


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
        "from .checker import run_check\nfrom ..checks import check_bool\nfrom . import speed\n"
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
    assert "kernels/operations/vector_add.py" in fingerprint.code_digests(
        "kernels.operations.vector_add"
    )


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


# Modules moved into rooms, as issue 34's layers would put them: the harness's timing,
# a Triton helper and an operation that imports both kinds (relatively, and the package
# itself with "from . import").
MOVES = {"timing": "harness", "row_tiles": "triton_helpers", "rms_norm": "operations"}


def _moved_copy(root: Path) -> Path:
    """A copy of kernels/ under ``root`` with the MOVES made and every import of a moved
    module rewritten, as a contributor moving them would; returns its kernels/."""
    package = root / "kernels"
    shutil.copytree(fingerprint.PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    for name, room in MOVES.items():
        (package / room).mkdir(exist_ok=True)
        (package / room / "__init__.py").write_text('"""A room."""\n')
        (package / f"{name}.py").rename(package / room / f"{name}.py")
    for path in package.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        moved = path.parent.name in MOVES.values()
        if moved:  # its relative imports now start one package higher
            source = re.sub(r"^(\s*)from \.", r"\1from ..", source, flags=re.M)
        dots = ".." if moved else "."
        for name, room in MOVES.items():
            source = source.replace(f"kernels.{name}", f"kernels.{room}.{name}")
            source = source.replace(f"from {dots}{name} import", f"from {dots}{room}.{name} import")
        source = re.sub(r"^from (\.+) import (.+)$", _split_moved_names, source, flags=re.M)
        path.write_text(source, encoding="utf-8")
        ast.parse(source)  # still Python
    return package


def _split_moved_names(match: re.Match[str]) -> str:
    """``from . import a, timing`` with timing moved: ``from . import a`` and
    ``from .harness import timing``."""
    dots, names = match.group(1), [n.strip() for n in match.group(2).split(",")]
    kept = [n for n in names if n not in MOVES]
    lines = [f"from {dots} import {', '.join(kept)}"] if kept else []
    lines += [f"from {dots}{MOVES[n]} import {n}" for n in names if n in MOVES]
    return "\n".join(lines)


def test_moving_modules_into_rooms_stales_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = fingerprint.code_digests("kernels.operations.rms_norm")
    assert {
        "kernels/operations/rms_norm.py",
        "kernels/triton_helpers/row_tiles.py",
        "kernels/harness/timing.py",
    } <= set(before)
    package = _moved_copy(tmp_path)
    assert (package / "operations" / "rms_norm.py").is_file()
    assert "from ..triton_helpers.row_tiles import row_tile" in (
        package / "operations" / "rms_norm.py"
    ).read_text(encoding="utf-8")
    monkeypatch.setattr(fingerprint, "PACKAGE_DIR", package)
    monkeypatch.setattr(fingerprint, "REPOSITORY", tmp_path)
    after = fingerprint.code_digests("kernels.operations.rms_norm", "kernels.harness.timing")
    assert after == before
    assert fingerprint.combine(after) == fingerprint.combine(before)
    # A change of code that runs, in a moved module, still shows.
    moved = package / "triton_helpers" / "row_tiles.py"
    moved.write_text(moved.read_text(encoding="utf-8") + "\nEXTRA = 1\n", encoding="utf-8")
    changed = fingerprint.code_digests("kernels.operations.rms_norm", "kernels.harness.timing")
    assert fingerprint.changed_files(before, changed) == ["kernels/triton_helpers/row_tiles.py"]


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
        fingerprint.file_digests(["kernels.harness.timing", "kernels.harness.timing"])

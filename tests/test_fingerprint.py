"""What a code fingerprint reads: code that runs, not how it is commented or how an
import of the package is spelled."""

import pytest

from kernels import fingerprint
from kernels.provenance import caption


def test_a_relative_import_counts_as_the_absolute_one_it_means() -> None:
    relative = "from .spec import BenchmarkSpec\nfrom . import runtime\n"
    absolute = "from kernels.spec import BenchmarkSpec\nfrom kernels import runtime\n"
    assert fingerprint.normalised_source(relative) == fingerprint.normalised_source(absolute)
    assert fingerprint.imported_modules(relative) == {"kernels.spec", "kernels.runtime"}


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
        "kernels.checks",
        "kernels.exercises.speed",
    }
    found = fingerprint.closure(fingerprint.imported_modules("from kernels.exercises import check"))
    assert {"kernels.exercises", "kernels.exercises.checker", "kernels.checks"} <= set(found)


def test_another_import_still_changes_the_code() -> None:
    one = fingerprint.normalised_source("from .spec import BenchmarkSpec\n")
    other = fingerprint.normalised_source("from .checks import BenchmarkSpec\n")
    assert one != other


def test_an_installed_module_name_has_the_same_digests() -> None:
    assert fingerprint.code_digests("ninja_gap.kernels.vector_add") == (
        fingerprint.code_digests("kernels.vector_add")
    )
    assert "kernels/vector_add.py" in fingerprint.code_digests("kernels.vector_add")


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

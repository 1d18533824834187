"""The nox sessions' own decisions, without running a session (but one, that builds
nothing)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

import noxfile


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], True),
        (["tests/test_quiz_bank.py"], True),
        (["-m", "browser"], True),
        (["-m", "not browser"], False),
        (["-m", "not browser and not slow", "-x"], False),
        (["-m not browser"], False),
    ],
)
def test_chromium_is_installed_only_when_the_browser_tests_may_run(
    args: list[str], expected: bool
) -> None:
    assert noxfile.runs_browser_tests(args) is expected


def test_catalogs_drop_the_gallerys_running_times() -> None:
    catalog = (
        '#: a.rst:1\nmsgid "Quiz"\nmsgstr "Вопросы"\n\n'
        '#: a.rst:9\nmsgid "**Total running time of the script:** (0 minutes 2.176 seconds)"\n'
        'msgstr ""\n\n'
        '#~ msgid "**Total running time of the script:** (0 minutes 1.169 seconds)"\n'
        '#~ msgstr ""\n'
    )
    assert noxfile.without_running_times(catalog) == '#: a.rst:1\nmsgid "Quiz"\nmsgstr "Вопросы"\n'


def test_a_catalog_without_running_times_is_left_as_it_is() -> None:
    catalog = '#: a.rst:1\nmsgid "Quiz"\nmsgstr "Вопросы"\n\n'
    assert noxfile.without_running_times(catalog) is catalog


@pytest.mark.parametrize(
    ("args", "cores", "expected"),
    [
        ([], 2, ["-n", "2", "--dist", "worksteal"]),
        (["-m", "not site"], 16, ["-n", "4", "--dist", "worksteal"]),
        ([], 1, []),
        ([], None, []),
        (["-n", "3"], 2, []),
        (["-n3"], 2, []),
        (["--numprocesses=8"], 2, []),
        (["-p", "no:xdist"], 8, []),
    ],
)
def test_the_tests_spread_over_the_cores_unless_told(
    args: list[str], cores: int | None, expected: list[str]
) -> None:
    assert noxfile.test_workers(args, cores) == expected


def test_the_docs_session_with_install_only_builds_nothing_and_succeeds(tmp_path: Path) -> None:
    # --install-only skips every run: there is no site to put the root page into (it
    # failed copying docs/_root/index.html into a _build/html that was never made).
    for name in ("noxfile.py", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    result = subprocess.run(
        [sys.executable, "-m", "nox", "--no-venv", "--install-only", "-s", "docs"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert not (tmp_path / "_build").exists()


def test_serve_takes_the_edition_named_first_and_passes_the_rest_on() -> None:
    assert noxfile.serve_edition([]) == ("en", [])
    assert noxfile.serve_edition(["ru", "--port", "9000"]) == ("ru", ["--port", "9000"])
    assert noxfile.serve_edition(["--port", "9000"]) == ("en", ["--port", "9000"])

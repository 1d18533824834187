"""once_per_run: a site build shared by every pytest-xdist worker, done once per run."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

# A suite of four tests that share one session fixture whose work is counted: a line
# appended to a file each time it really runs.
CONFTEST = """
from pathlib import Path
import pytest
from once_per_run import once_per_run

@pytest.fixture(scope="session")
def built(tmp_path_factory):
    def make(folder):
        with open(COUNT, "a") as count:
            count.write(str(folder) + "\\n")
        (folder / "page.html").write_text("built")
        return {"page": str(folder / "page.html")}
    return once_per_run(tmp_path_factory, "site", make)
"""
TESTS = """
from pathlib import Path
import pytest

@pytest.mark.parametrize("n", range(4))
def test_uses_the_build(built, n):
    assert Path(built["page"]).read_text() == "built"
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two xdist workers"])
def test_a_shared_build_runs_once_per_test_run(tmp_path: Path, workers: list[str]) -> None:
    count = tmp_path / "count.txt"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(f"COUNT = {str(count)!r}\n" + CONFTEST)
    (suite / "test_suite.py").write_text(TESTS)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    env.pop("PYTEST_XDIST_WORKER", None)  # this test may itself run in a worker
    for run in range(2):
        result = subprocess.run(
            # Its own base folder: pytest prunes old numbered ones, this run's among them.
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *workers,
             f"--basetemp={tmp_path / f'run{run}'}", "."],
            cwd=suite, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        assert "4 passed" in result.stdout
        # Once per run: the second run builds again, for itself.
        assert len(count.read_text().splitlines()) == run + 1, result.stdout

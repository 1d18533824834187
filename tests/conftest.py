"""Shared fixtures: the repository root, and one real docs build per test session."""

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import kernels  # noqa: F401  (selects the interpreter on machines without a GPU)

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class DocsBuild:
    """The outcome of ``sphinx-build -W`` on the repository."""

    html: Path
    returncode: int
    log: str

    def page(self, name: str) -> str:
        """The HTML of the page at ``name`` (a path under the output folder)."""
        return (self.html / name).read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def docs_build(tmp_path_factory: pytest.TempPathFactory) -> DocsBuild:
    """Build the whole site once, as the README's build line does, into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    html, doctrees = out / "html", out / "doctrees"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-b",
            "html",
            "-d",
            str(doctrees),
            str(ROOT),
            str(html),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=1200,
    )
    return DocsBuild(html, result.returncode, result.stdout + result.stderr)

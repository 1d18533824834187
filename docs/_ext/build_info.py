"""The footer line that says what built a page: the course's version, the day of the
build, the commit and its date, and the Triton and PyTorch that ran its kernels.

The line is put into each page as it is written (``html-page-context``), not through a
configuration value: a value that changed with every commit would make Sphinx read every
page again, and run every lesson.
"""

import html
import subprocess
import tomllib
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from kernels.harness import fingerprint
from kernels.text.messages import _

ROOT = Path(__file__).resolve().parents[2]


def course_version(root: Path = ROOT) -> str:
    """The course's version, as pyproject.toml gives it."""
    with (root / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)["project"]["version"]


def commit_date(root: Path = ROOT) -> str | None:
    """The date (YYYY-MM-DD) of the commit checked out in ``root``, or None outside git."""
    try:
        found = subprocess.run(["git", "log", "-1", "--format=%cs"], cwd=root,
                               capture_output=True, text=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    date = found.stdout.strip()
    return date if found.returncode == 0 and date else None


def build_line() -> str:
    """The footer's words, in the build's language, as plain text."""
    commit = fingerprint.commit()
    date = commit_date()
    if commit == "unknown":  # no git here (a copy of the sources, an installed package)
        source = _("an unknown commit")
    elif date:
        source = _("commit {commit} of {date}").format(commit=commit, date=date)
    else:
        source = _("commit {commit}").format(commit=commit)
    line = _(
        "ninja_gap {version}, built on {built} from {source} with Triton {triton} and "
        "PyTorch {torch}."
    )
    versions = {"triton": metadata.version("triton"), "torch": metadata.version("torch")}
    built = datetime.now(UTC).date().isoformat()
    return line.format(version=course_version(), built=built, source=source, **versions)


def add_build_line(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Give the page's template the footer line, escaped for HTML."""
    if not hasattr(app, "_build_line"):
        app._build_line = html.escape(build_line())
    context["build_line"] = app._build_line


def setup(app: Sphinx) -> dict[str, Any]:
    """Fill the ``build-info`` footer item of every page."""
    app.connect("html-page-context", add_build_line)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The one entry point: ``nox -s docs | tests | bench | serve | lint``.

Each session makes its own virtual environment from pyproject.toml. On a GPU runner
whose image already holds CUDA builds of torch and Triton, and which may be offline,
run ``nox --no-venv -s docs`` in that image's Python instead: the sessions then use the
running environment as it is and install nothing (see docs/guides/contributing.md).
"""

import os
import shlex
import shutil
import sys
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests"]
# A session's environment is made once and reused; install() skips pip when what the
# session needs has not changed, so a rebuild with nothing new takes seconds.
nox.options.reuse_venv = "yes"

PYPROJECT = nox.project.load_toml("pyproject.toml")
BUILD_DIR = "_build/html"
SPHINX_ARGS = ["-W", "--keep-going", "-b", "html", ".", BUILD_DIR]
# Written into each measurement file, so that it says how it was made.
COMMAND = {"NINJA_GAP_COMMAND": shlex.join(["nox", *sys.argv[1:]])}
# Machines without a GPU get torch's CPU build: our machines keep it on local disk, and a
# plain "torch" from PyPI would be a multi-gigabyte CUDA build that could never run here.
CPU_TORCH = "torch==2.13.0"


def install(session: nox.Session, *groups: str, project: bool = True) -> None:
    """Install the project's runtime dependencies and the named dependency groups."""
    if session.venv_backend == "none":
        session.log("No virtual environment: using the running Python's packages as they are.")
        return
    requirements = list(nox.project.dependency_groups(PYPROJECT, *groups))
    if project:
        requirements += PYPROJECT["project"]["dependencies"]
        if shutil.which("nvidia-smi") is None:
            requirements.append(CPU_TORCH)
    marker = Path(session.virtualenv.location) / "ninja-gap-requirements.txt"
    wanted = "\n".join(requirements)
    if marker.exists() and marker.read_text(encoding="utf-8") == wanted:
        session.log("Requirements unchanged since this environment was made: not installing.")
        return
    session.install(*requirements)
    marker.write_text(wanted, encoding="utf-8")


def python(session: nox.Session) -> str:
    """The session's interpreter: the venv's, or with --no-venv the one running nox."""
    return sys.executable if session.venv_backend == "none" else "python"


@nox.session
def docs(session: nox.Session) -> None:
    """Build the site into _build/html with warnings as errors (measures on a GPU).

    ``nox -s docs -- --draft``: a benchmark with no record, or a stale one, is drawn as a
    labelled "not measured yet" placeholder instead of failing the build. Other
    arguments go to sphinx-build.
    """
    install(session, "docs")
    args = [arg for arg in session.posargs if arg != "--draft"]
    env = {**COMMAND, "NINJA_GAP_DRAFT": "1" if "--draft" in session.posargs else "0"}
    session.run(python(session), "-m", "sphinx", *SPHINX_ARGS, *args, env=env)
    session.log(f"Open {BUILD_DIR}/docs/index.html")


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite: kernels in the interpreter, quiz banks, measurement files, a
    build, and the built site in headless Chromium (installed here if it can be)."""
    install(session, "test")
    install_chromium(session)
    session.run(python(session), "-m", "pytest", *session.posargs)


def install_chromium(session: nox.Session) -> None:
    """Install Debian's chromium for the browser tests, where it is missing and apt can."""
    if shutil.which("chromium") or not shutil.which("apt-get") or os.geteuid() != 0:
        return
    session.log("The browser tests need Chromium: installing Debian's package.")
    # apt exits 100 when it cannot (an offline runner): the browser tests then say so.
    session.run("apt-get", "update", "-q", external=True, success_codes=[0, 100])
    session.run("apt-get", "install", "-y", "-q", "chromium", external=True, success_codes=[0, 100])


@nox.session
def bench(session: nox.Session) -> None:
    """Re-measure the benchmarks on this GPU and rewrite gallery/measurements/ (GPU only).

    ``nox -s bench -- --stale`` lists the records that no longer match the code, on any
    machine, and fails if there are any.
    """
    install(session)
    session.run(python(session), "-m", "kernels.bench", *session.posargs, env=COMMAND)


@nox.session
def serve(session: nox.Session) -> None:
    """Rebuild the site on every change and serve it at http://127.0.0.1:8000."""
    install(session, "serve")
    session.run(
        "sphinx-autobuild",
        ".",
        BUILD_DIR,
        "--watch",
        "kernels",
        "--watch",
        "quiz",
        "--watch",
        "gallery",
        "--ignore",
        "docs/examples/*",
        "--ignore",
        "_build/*",
        "--ignore",
        ".nox/*",
        *session.posargs,
    )


@nox.session
def lint(session: nox.Session) -> None:
    """Check the code with ruff."""
    install(session, "lint", project=False)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")

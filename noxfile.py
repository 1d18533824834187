"""The one entry point: ``nox -s docs | tests | bench | serve | lint``.

Each session makes its own virtual environment from pyproject.toml. On a GPU runner
whose image already holds CUDA builds of torch and Triton, and which may be offline,
run ``nox --no-venv -s docs`` in that image's Python instead: the sessions then use the
running environment as it is and install nothing (see docs/guides/contributing.md).
"""

import os
import re
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
# The site's editions, each a whole site in BUILD_DIR/<language>/; the first measures.
# Listed once, in pyproject.toml, which docs/_ext/editions.py reads too.
EDITIONS = tuple(PYPROJECT["tool"]["ninja-gap"]["editions"])
# The catalogs of the translations (docs/_ext/editions.py; docs/guides/contributing.md).
LOCALE_DIR = "docs/locales"
# The site's root page, which leads to the first edition's home page.
SITE_ROOT = "docs/_root/index.html"
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


def sphinx_args(builder: str, language: str, out: str) -> list[str]:
    """sphinx-build's arguments for one edition: warnings are errors, and each edition
    keeps its own doctrees (and so its own record of what changed)."""
    return ["-m", "sphinx", "-W", "--keep-going", "-b", builder,
            "-d", f"_build/doctrees/{language}", ".", out]  # fmt: skip


@nox.session
def docs(session: nox.Session) -> None:
    """Build the site, every edition, into _build/html with warnings as errors.

    The English edition goes to _build/html/en/ (measuring on a GPU), then the Russian
    one to _build/html/ru/ from the records the first build wrote (its examples run
    again, to print in Russian, without measuring). ``nox -s docs -- --draft``: a
    benchmark with no record, or a stale one, is drawn as a labelled "not measured yet"
    placeholder instead of failing the build. Other arguments go to sphinx-build.
    """
    install(session, "docs")
    args = [arg for arg in session.posargs if arg != "--draft"]
    env = {**COMMAND, "NINJA_GAP_DRAFT": "1" if "--draft" in session.posargs else "0"}
    for language in EDITIONS:
        edition = {**env, "NINJA_GAP_LANGUAGE": language}
        if language != EDITIONS[0]:
            # Measured once: the other editions draw the records the first just wrote.
            edition["NINJA_GAP_MEASURE"] = "0"
        out = f"{BUILD_DIR}/{language}"
        session.run(python(session), *sphinx_args("html", language, out), *args, env=edition)
    # --install-only runs nothing above: there is no site to put the root page into.
    if Path(BUILD_DIR).is_dir():
        shutil.copyfile(SITE_ROOT, f"{BUILD_DIR}/index.html")
        session.log(f"Open {BUILD_DIR}/index.html")


@nox.session
def catalogs(session: nox.Session) -> None:
    """Update the translations' catalogs after the English text changed.

    Extracts every translatable message of every page (``sphinx-build -b gettext``, into
    _build/gettext) and merges it into docs/locales/<language>/LC_MESSAGES/ with
    ``sphinx-intl update``: new messages come in empty, changed ones marked fuzzy, for
    a translator to fill in (docs/guides/contributing.md). The lessons are not run.
    """
    install(session, "docs")
    env = {"NINJA_GAP_LANGUAGE": EDITIONS[0], "NINJA_GAP_MEASURE": "0"}
    gettext = sphinx_args("gettext", "gettext", "_build/gettext")
    # Without -W: with the lessons not run, their glued values are missing (a warning).
    gettext.remove("-W")
    session.run(python(session), *gettext, "-D", "nb_execution_mode=off", env=env)
    languages = [arg for language in EDITIONS[1:] for arg in ("-l", language)]
    session.run(python(session), "-m", "sphinx_intl", "update", "-p", "_build/gettext",
                "-d", LOCALE_DIR, *languages)  # fmt: skip
    for catalog in Path(LOCALE_DIR).glob("*/LC_MESSAGES/docs/examples/*.po"):
        text = catalog.read_text(encoding="utf-8")
        kept = without_running_times(text)
        if kept != text:
            catalog.write_text(kept, encoding="utf-8")


# sphinx-gallery's line under each example, with the seconds of the run that extracted it.
RUNNING_TIME = re.compile(r'^(#~ )?msgid "\*\*Total running time of the script:\*\*', re.M)


def without_running_times(catalog: str) -> str:
    """``catalog`` (a ``.po`` file's text) without the entries, current or obsolete, of
    the gallery's "Total running time" line: its seconds change with every run, so each
    ``nox -s catalogs`` would add a new message and keep the old one as obsolete, a
    change to every example's catalog with nothing to translate."""
    entries = catalog.rstrip("\n").split("\n\n")
    kept = [entry for entry in entries if not RUNNING_TIME.search(entry)]
    return catalog if len(kept) == len(entries) else "\n\n".join(kept) + "\n"


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite: kernels in the interpreter, quiz banks, measurement files, a
    build, and the built site in headless Chromium (installed here if it can be)."""
    install(session, "test")
    if runs_browser_tests(session.posargs):
        install_chromium(session)
    workers = test_workers(session.posargs, os.cpu_count())
    session.run(python(session), "-m", "pytest", *workers, *session.posargs)


# Most of the suite runs kernels in Triton's interpreter, one core each: pytest-xdist
# spreads it over the cores (on a 2-core machine 18 minutes instead of 30; the workers
# share one build of the site, tests/once_per_run.py). More than four workers would
# each import PyTorch and build nothing sooner: the site's build is one process.
MAX_TEST_WORKERS = 4


def test_workers(pytest_args: list[str], cores: int | None) -> list[str]:
    """The pytest-xdist arguments the tests session adds: a worker per core, at most
    MAX_TEST_WORKERS, unless the arguments choose (``-n``, ``--numprocesses``, ``-p
    no:xdist``) or there is one core."""
    chosen = any(
        arg.startswith(("-n", "--numprocesses", "--dist")) or "no:xdist" in arg
        for arg in pytest_args
    )
    count = min(cores or 1, MAX_TEST_WORKERS)
    # worksteal: a worker that runs out of tests takes some of another's, so that the
    # one long test (a rebuild of the whole course, started first: tests/conftest.py)
    # does not leave the other worker idle at the end (with plain "load" scheduling, the
    # last seven minutes of a 32-minute run on two cores had one worker idle).
    return [] if chosen or count < 2 else ["-n", str(count), "--dist", "worksteal"]


def runs_browser_tests(pytest_args: list[str]) -> bool:
    """Whether a test run with these pytest arguments may run the browser tests: not when
    a marker expression leaves them out (``-m "not browser"``, as on an offline GPU
    runner, where trying apt would only spend time failing)."""
    return not any("not browser" in arg for arg in pytest_args)


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
    """Re-measure the benchmarks on this GPU and rewrite gallery/measurements/<gpu>/ (GPU only).

    ``nox -s bench -- --stale`` lists the records that no longer match the code, on any
    machine, and fails if there are any.
    """
    install(session)
    session.run(python(session), "-m", "kernels.harness.recording", *session.posargs, env=COMMAND)


@nox.session
def serve(session: nox.Session) -> None:
    """Rebuild an edition on every change and serve it at http://127.0.0.1:8000: English,
    or the one named first (``nox -s serve -- ru``). Other arguments go to
    sphinx-autobuild."""
    install(session, "serve")
    language, args = serve_edition(session.posargs)
    session.run(
        "sphinx-autobuild",
        ".",
        f"{BUILD_DIR}/{language}",
        "-d",
        f"_build/doctrees/{language}",
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
        *args,
        env={"NINJA_GAP_LANGUAGE": language},
    )


def serve_edition(serve_args: list[str]) -> tuple[str, list[str]]:
    """The edition ``nox -s serve`` serves, the first argument if it names one of
    EDITIONS (else the first edition), and the arguments left for sphinx-autobuild."""
    if serve_args and serve_args[0] in EDITIONS:
        return serve_args[0], serve_args[1:]
    return EDITIONS[0], list(serve_args)


@nox.session
def lint(session: nox.Session) -> None:
    """Check the code with ruff."""
    install(session, "lint", project=False)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")

"""Shared fixtures: the repository root, and one real docs build per test run."""

import ast
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest
from once_per_run import once_per_run

import kernels  # noqa: F401  (selects the interpreter on machines without a GPU)

ROOT = Path(__file__).resolve().parent.parent


def markdown_pages(root: Path = ROOT) -> list[Path]:
    """The site's Markdown pages in the course at ``root``: every ``.md`` file under docs/
    that the build reads, that is, not matched by ``exclude_patterns`` in conf.py (read
    from its source, so that the build and the tests keep one list)."""
    from sphinx.util.matching import Matcher

    if not (root / "docs").is_dir():
        return []
    (excluded,) = [
        ast.literal_eval(node.value)
        for node in ast.parse((root / "conf.py").read_text(encoding="utf-8")).body
        if isinstance(node, ast.Assign)
        and any(getattr(target, "id", None) == "exclude_patterns" for target in node.targets)
    ]
    skip = Matcher(excluded)
    return sorted(
        path
        for path in (root / "docs").rglob("*.md")
        if not skip(path.relative_to(root).as_posix())
    )


@dataclass(frozen=True)
class DocsBuild:
    """The outcome of ``sphinx-build -W`` on a copy of the repository."""

    source: Path
    html: Path
    returncode: int
    log: str
    language: str = "en"

    def page(self, name: str) -> str:
        """The HTML of the page at ``name`` (a path under the output folder)."""
        return (self.html / name).read_text(encoding="utf-8")

    def rebuild(self, *, draft: bool = False) -> "DocsBuild":
        """Build the same copy again, as a second ``nox -s docs`` (``-- --draft``) would."""
        return sphinx_build(self.source, self.html.parent.parent, draft=draft,
                            language=self.language)  # fmt: skip


sys.path.insert(0, str(ROOT / "docs" / "_ext"))
from package_downloads import copy_sources  # noqa: E402


def copy_of_the_course(destination: Path) -> Path:
    """A copy of the repository's sources in ``destination``, to build without touching
    the checkout (a GPU build would write its records there), as the site's package
    copies them: no builds, environments or caches."""
    return copy_sources(ROOT, destination)


def sphinx_build(
    source: Path, out: Path, *, draft: bool = False, language: str = "en"
) -> DocsBuild:
    """``sphinx-build -W --keep-going`` of the ``language`` edition of ``source`` into
    ``out/html/<language>``, as ``nox -s docs`` builds each edition, without measuring:
    on a GPU machine too, the pages are drawn from the records (NINJA_GAP_MEASURE=0)."""
    html, doctrees = out / "html" / language, out / "doctrees" / language
    env = {**os.environ, "NINJA_GAP_MEASURE": "0", "NINJA_GAP_DRAFT": "1" if draft else "0",
           "NINJA_GAP_LANGUAGE": language}  # fmt: skip
    result = subprocess.run(
        # --no-color: a CI that sets FORCE_COLOR would otherwise put escape codes
        # into the log lines that the tests read.
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "--no-color", "-b", "html",
         "-d", str(doctrees), str(source), str(html)],
        capture_output=True, text=True, cwd=source, env=env, timeout=1200,
    )  # fmt: skip
    return DocsBuild(source, html, result.returncode, result.stdout + result.stderr, language)


# Where docs_build keeps the course as its build left it (see built_course).
AS_BUILT = "course-as-built"


def _shared_build(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], DocsBuild]
) -> DocsBuild:
    """``build(folder)``, done once per test run whichever xdist worker asks first."""

    def make(folder: Path) -> dict[str, object]:
        made = build(folder)
        return {**asdict(made), "source": str(made.source), "html": str(made.html)}

    fields = once_per_run(tmp_path_factory, name, make)
    return DocsBuild(**{**fields, "source": Path(fields["source"]), "html": Path(fields["html"])})


@pytest.fixture(scope="session")
def docs_build(tmp_path_factory: pytest.TempPathFactory) -> DocsBuild:
    """Build the whole English edition once, as the README's build line does, from a copy."""

    def build(out: Path) -> DocsBuild:
        made = sphinx_build(copy_of_the_course(out / "course"), out)
        # Before the Russian edition runs the examples again in the same copy, keep what
        # the English build left there (the gallery's pages, figures and run stamps).
        shutil.copytree(made.source, out / AS_BUILT, symlinks=True)
        return made

    return _shared_build(tmp_path_factory, "site", build)


@pytest.fixture
def built_course(docs_build: DocsBuild, tmp_path: Path) -> Path:
    """A copy of the course as the English build left it, for a test that changes it and
    builds again: its examples do not run again until what they depend on changes, so
    such a test does not pay for a whole build of its own (minutes on a GPU runner,
    where every example compiles and autotunes its kernels)."""
    return shutil.copytree(docs_build.html.parent.parent / AS_BUILT, tmp_path / "course",
                           symlinks=True)  # fmt: skip


@pytest.fixture(scope="session")
def russian_build(docs_build: DocsBuild, tmp_path_factory: pytest.TempPathFactory) -> DocsBuild:
    """The Russian edition of the same copy, beside the English one, as ``nox -s docs``
    builds it second (its examples run again, to print in Russian)."""

    def build(_: Path) -> DocsBuild:
        return sphinx_build(docs_build.source, docs_build.html.parent.parent, language="ru")

    return _shared_build(tmp_path_factory, "russian-site", build)


@pytest.fixture(scope="session")
def installed_course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course installed as a reader installs it (``pip install`` of a copy of the
    clone, without its dependencies, which this environment has) into a folder of its
    own, once per test run: put it on ``PYTHONPATH`` to run a download outside the clone.
    (From a copy: building writes build/ and *.egg-info beside the sources.)"""

    def make(folder: Path) -> dict[str, object]:
        site, source = folder / "site", copy_of_the_course(folder / "source")
        install = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
             "--no-build-isolation", "--target", str(site), str(source)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        return {"site": str(site), "returncode": install.returncode, "log": install.stderr}

    made = once_per_run(tmp_path_factory, "installed-course", make)
    assert made["returncode"] == 0, made["log"][-3000:]
    site = Path(made["site"])
    assert not (site / "kernels").exists() and not (site / "quiz").exists()
    return site


def ids_that_change_between_runs(node_ids: list[str]) -> list[str]:
    """The test ids that hold a memory address (a parameter shown by its ``repr``, such
    as ``<function softmax at 0x7f...>``): they differ from one process to the next, and
    pytest-xdist's workers, which each collect the suite, then refuse to start."""
    return [n for n in node_ids if re.search(r" at 0x[0-9a-f]+", n)]


# The fixtures that build the whole site (or copy a build): a test that asks for one is
# marked ``site``, so that ``-m "not site and not browser"`` runs the fast tier alone.
SITE_FIXTURES = frozenset({"docs_build", "built_course", "russian_build", "edition"})
# The fixture of the tests that rebuild the course several times over (minutes each).
LONGEST_FIXTURE = "built_course"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that need a site build ``site``. A test id that would differ
    between pytest-xdist's workers stops the run here, named (how a GPU runner spreads
    the suite: docs/guides/contributing.md)."""
    for item in items:
        if SITE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.site)
    # The longest tests first (several builds of the whole course each), so that the
    # rest of the suite runs beside them instead of after them (see noxfile.py,
    # test_workers). A stable sort: the others keep their order.
    items.sort(key=lambda item: LONGEST_FIXTURE not in getattr(item, "fixturenames", ()))
    unstable = ids_that_change_between_runs([item.nodeid for item in items])
    if unstable:
        raise pytest.UsageError(
            "test ids that change between runs (give the parameters ids): " + ", ".join(unstable)
        )

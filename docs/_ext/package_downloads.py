"""The course itself on the site: its wheel and source archive, built with every HTML
build into ``_downloads/package/``, and the ``{package}`` role that links a page to them
(``{package}`wheel``` or ``{package}`sdist```, the file's name as the link's text).

The package is built by setuptools (the project's build backend) from a copy of the
build's sources, so that the sources get no ``build/`` or ``*.egg-info`` beside them, and
without build isolation: a GPU runner is offline, so setuptools must be installed (the
``docs`` dependency group has it).
"""

import posixpath
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from build_info import course_version
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

# Where the files are in the built site.
PACKAGE_FOLDER = "_downloads/package"
# What a copy of the sources leaves out: builds, environments, caches.
NOT_SOURCES = ("_build", "build", ".nox", ".git", ".venv", ".whl", "scratch", "__pycache__",
               "docs/examples")  # fmt: skip
# Builds the wheel (argv[1] "wheel") or the source archive ("sdist") into the folder
# argv[2]. One process each: in one process, the sdist after the wheel landed in a
# folder of the wheel's build instead of argv[2].
_BUILD = (
    "import sys\n"
    "from setuptools import build_meta\n"
    "build = {'wheel': build_meta.build_wheel, 'sdist': build_meta.build_sdist}[sys.argv[1]]\n"
    "print('built:', build(sys.argv[2]))\n"
)


def package_file(kind: str, version: str) -> str:
    """The name of the course's ``wheel`` or ``sdist`` file at ``version``."""
    names = {
        "wheel": f"ninja_gap-{version}-py3-none-any.whl",
        "sdist": f"ninja_gap-{version}.tar.gz",
    }
    if kind not in names:
        raise ValueError(f"{kind!r}: the package files are 'wheel' and 'sdist'")
    return names[kind]


def copy_sources(sources: Path, destination: Path) -> Path:
    """Copy the course in ``sources`` to ``destination`` without what is not a source
    (``NOT_SOURCES``) and without a symbolic link that leads out of ``sources``: a link
    to an environment elsewhere (``.nox_link -> ~/venvs``) would otherwise be copied
    whole, gigabytes, into every copy and the package built from it. A link inside the
    sources stays a link."""
    root = sources.resolve()

    def ignore(folder: str, names: list[str]) -> set[str]:
        relative = Path(folder).relative_to(sources)
        return {
            n
            for n in names
            if n in NOT_SOURCES
            or (relative / n).as_posix() in NOT_SOURCES
            or _leads_out(Path(folder) / n, root)
        }

    shutil.copytree(sources, destination, ignore=ignore, symlinks=True)
    return destination


def _leads_out(path: Path, root: Path) -> bool:
    """Whether ``path`` is a symbolic link whose target is not inside ``root``."""
    return path.is_symlink() and not path.resolve().is_relative_to(root)


def build_package(sources: Path, out: Path) -> list[str]:
    """Build the wheel and the source archive of the course in ``sources`` into ``out``;
    return the files' names. Raises RuntimeError with setuptools' message on failure."""
    shutil.rmtree(out, ignore_errors=True)  # an earlier build's files, of another version
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        copy = copy_sources(sources, Path(scratch) / "course")
        return [_build(kind, copy, out) for kind in ("wheel", "sdist")]


def _build(kind: str, copy: Path, out: Path) -> str:
    built = subprocess.run([sys.executable, "-c", _BUILD, kind, str(out.resolve())], cwd=copy,
                           capture_output=True, text=True, timeout=600)  # fmt: skip
    if built.returncode != 0:
        raise RuntimeError(built.stderr.strip().splitlines()[-1] if built.stderr else "failed")
    # setuptools logs to stdout too: the name is on the line the script printed.
    lines = [line for line in built.stdout.splitlines() if line.startswith("built: ")]
    if not lines or not (out / lines[-1].split()[1]).is_file():
        raise RuntimeError(f"setuptools built no {kind} in {out}")
    return lines[-1].split()[1]


def publish_package(app: Sphinx, exception: Exception | None) -> None:
    """After a successful HTML build, put the course's package files into the site."""
    if exception is not None or app.builder.format != "html":
        return
    version = course_version(Path(app.srcdir))
    expected = [package_file("wheel", version), package_file("sdist", version)]
    try:
        made = build_package(Path(app.srcdir), Path(app.outdir) / PACKAGE_FOLDER)
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        logger.warning(f"the course's package could not be built for the site: {error}")
        return
    if made != expected:
        logger.warning(f"the package files are {made}, but the pages link to {expected}")


def package_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
                 options: dict | None = None, content: list | None = None):  # fmt: skip
    """``{package}`wheel```: a link to the course's wheel (or ``sdist``) on the site."""
    env = inliner.document.settings.env
    try:
        filename = package_file(text.strip(), course_version(Path(env.srcdir)))
    except ValueError as error:
        message = inliner.reporter.error(f"package: {error}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    uri = posixpath.relpath(f"{PACKAGE_FOLDER}/{filename}", posixpath.dirname(env.docname) or ".")
    return [nodes.reference(rawtext, filename, refuri=uri, classes=["package-file"])], []


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the role; publish the package when the site is written."""
    app.add_role("package", package_role)
    app.connect("build-finished", publish_package)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The site's editions: one per language, built from the same sources by ``nox -s docs``.

Each edition is a whole site in ``_build/html/<language>/``: its text comes from the
catalogs under ``docs/locales/<language>/LC_MESSAGES/`` (English is the source), and
this extension

- sets ``$NINJA_GAP_LANGUAGE`` from the build's ``language``, so that what the gallery
  scripts and the lessons print comes out in that language (:mod:`kernels.text.messages`);
- gives every page a link to the same page in each other edition (the template
  ``language-switcher.html`` in the top bar);
- keeps each edition's gallery output apart. sphinx-gallery writes the pages it
  generates into the source folder (``docs/examples/``), which the editions share; an
  example run for one edition prints in its language. So the output of each edition is
  kept beside its doctrees, put back before sphinx-gallery looks and saved after the
  build, so that building one edition does not make the other run its examples again;
- writes sphinx-gallery's "Total running time of the script" line in the edition's
  language (the catalogs leave it out: its seconds change with every run), with where
  the kernels ran.
"""

import os
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError

from kernels.text.messages import LANGUAGE_VARIABLE, _, number, translated
from kernels.triton_helpers.runtime import describe_device

# Each edition's language code (its folder under _build/html/) and its name in itself,
# as pyproject.toml lists them (the noxfile builds them from the same list).
_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
EDITIONS: dict[str, str] = tomllib.loads(_PYPROJECT.read_text(encoding="utf-8"))["tool"][
    "ninja-gap"
]["editions"]
# Written into the shared gallery folder: the edition whose output it holds now.
_MARKER = ".edition"
# sphinx-gallery's line under each example, as it writes it.
_RUNNING_LABEL = "Total running time of the script:"
_RUNNING_TIME = re.compile(r"\A \((\d+) minutes ([\d.]+) seconds\)\Z")


def set_language(app: Sphinx, config: Config) -> None:
    """Check the build's language and hand it to the code the build runs."""
    if config.language not in EDITIONS:
        raise ConfigError(
            f"language {config.language!r} has no edition; editions: {', '.join(EDITIONS)}"
        )
    # sphinx-gallery runs the examples in this process; myst-nb's Jupyter kernels
    # inherit the environment.
    os.environ[LANGUAGE_VARIABLE] = config.language


def other_editions(pagename: str, language: str) -> list[tuple[str, str, str]]:
    """The same page in each other edition, as (language, name, relative link): up from
    the page to the site's root, then down into the other edition."""
    up = "../" * (pagename.count("/") + 1)
    return [
        (code, name, f"{up}{code}/{pagename}.html")
        for code, name in EDITIONS.items()
        if code != language
    ]


def add_switcher_links(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Give the page's template the links of ``language-switcher.html``."""
    context["other_editions"] = other_editions(pagename, app.config.language)


def _gallery_output(app: Sphinx) -> Path:
    return Path(app.srcdir) / app.config.sphinx_gallery_conf["gallery_dirs"]


def _saved_output(app: Sphinx) -> Path:
    # Beside the edition's doctrees (_build/doctrees/<language>): build state, not site.
    return Path(app.doctreedir).parent / "gallery" / app.config.language


def restore_gallery_output(app: Sphinx) -> None:
    """Before sphinx-gallery looks: put this edition's last gallery output back in the
    source folder, if the folder holds another edition's."""
    out, saved = _gallery_output(app), _saved_output(app)
    marker = out / _MARKER
    if marker.exists() and marker.read_text(encoding="utf-8") == app.config.language:
        return
    if saved.is_dir():
        shutil.rmtree(out, ignore_errors=True)
        # copytree keeps the files' times, so Sphinx sees its pages as they were.
        shutil.copytree(saved, out)
    # Otherwise the examples run again: their stamps name the language they ran in.
    out.mkdir(parents=True, exist_ok=True)
    marker.write_text(app.config.language, encoding="utf-8")


def save_gallery_output(app: Sphinx, exception: Exception | None) -> None:
    """After a successful build: keep this edition's gallery output for its next build."""
    out, saved = _gallery_output(app), _saved_output(app)
    if exception is None and out.is_dir():
        shutil.rmtree(saved, ignore_errors=True)
        shutil.copytree(out, saved)


def qualify_running_time(app: Sphinx, doctree: nodes.document) -> None:
    """Write a gallery page's running-time line in the edition's language, saying where
    the example ran: in Triton's interpreter on the CPU, a script takes many times as
    long as on a GPU, and a reader would otherwise take the one for the other.

    Sphinx reads a gallery page when sphinx-gallery has written it, after running its
    example in this process, so the device named is the one the example ran on.
    """
    for strong in list(doctree.findall(nodes.strong)):
        after = strong.next_node(descend=False, siblings=True)
        if strong.astext() != _RUNNING_LABEL or not isinstance(after, nodes.Text):
            continue
        match = _RUNNING_TIME.match(after.astext())
        if match is None:
            continue
        time = _(" ({minutes} minutes {seconds} seconds; kernels on {device})").format(
            minutes=match.group(1),
            seconds=number(match.group(2)),
            device=translated(describe_device()),
        )
        strong.replace(strong[0], nodes.Text(_("Total running time of the script:")))
        strong.parent.replace(after, nodes.Text(time))


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the handlers; the gallery's output is put back before course_build and
    sphinx-gallery look at it (priorities 400 and 500)."""
    app.connect("config-inited", set_language)
    app.connect("builder-inited", restore_gallery_output, priority=300)
    app.connect("doctree-read", qualify_running_time)
    app.connect("html-page-context", add_switcher_links)
    app.connect("build-finished", save_gallery_output)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

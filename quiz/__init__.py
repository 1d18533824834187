"""The ``quiz`` Sphinx extension: renders a lesson's question bank as dropdowns.

Add ``"quiz"`` to ``extensions`` (it needs ``sphinx_design``) and write, in a page::

    ```{quiz} intro
    ```

to show every question of ``quiz/intro.yaml``. See :mod:`quiz.bank` for the format.
"""

from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.i18n import CatalogInfo

from .directive import QuizDirective, warn_of_shared_anchors


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive, its configuration and its message catalog."""
    app.setup_extension("sphinx_design")
    app.add_config_value("quiz_bank_dir", "quiz", "env", types=[str])
    app.add_directive("quiz", QuizDirective)
    app.connect("doctree-resolved", _check_anchors)
    locales = Path(__file__).parent / "locales"
    _compile_catalogs(locales)
    app.add_message_catalog("quiz", str(locales))
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


def _check_anchors(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    warn_of_shared_anchors(doctree, docname, "quiz-question", "a quiz question")


def _compile_catalogs(locales: Path) -> None:
    """Compile each ``<language>/LC_MESSAGES/quiz.po`` into the ``.mo`` file that
    gettext reads, where the ``.mo`` is missing or older (as Sphinx does for a project's
    own catalogs)."""
    for po in locales.glob("*/LC_MESSAGES/quiz.po"):
        catalog = CatalogInfo(str(po.parent), "quiz", "utf-8")
        if catalog.is_outdated():
            catalog.write_mo(po.parts[-3])

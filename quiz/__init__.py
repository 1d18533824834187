"""The ``quiz`` Sphinx extension: renders a lesson's question bank as dropdowns.

Add ``"quiz"`` to ``extensions`` (it needs ``sphinx_design``) and write, in a page::

    ```{quiz} intro
    ```

to show every question of ``quiz/intro.yaml``. See :mod:`quiz.bank` for the format.
"""

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from .directive import QuizDirective


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive, its configuration and its message catalog."""
    app.setup_extension("sphinx_design")
    app.add_config_value("quiz_bank_dir", "quiz", "env", types=[str])
    app.add_directive("quiz", QuizDirective)
    app.add_message_catalog("quiz", str(Path(__file__).parent / "locales"))
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}

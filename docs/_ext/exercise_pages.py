"""The ``exercises`` directive: a lesson's exercises from :mod:`kernels.exercises`, on its page.

In a page::

    ```{exercises} intro
    ```

shows every exercise of ``kernels/exercises/intro.py``: its title and kind, the
statement, the starter code, then each hint and the solution in collapsed sphinx-design
dropdowns (native ``<details>`` elements: they open without JavaScript).

The texts live once, in the package, and are translated through
``kernels/locales/<language>.po`` like everything the course's code prints. They never go
through a markup parser: as the quiz directive does, a skeleton whose places for text
hold tokens is parsed, then the texts go in as text, inline code and code blocks.
"""

import os
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util.docutils import SphinxDirective

from kernels import messages
from kernels.exercises import PAGES, Exercise, ExerciseDefinitionError, lesson_exercises
from kernels.exercises.model import translated
from kernels.messages import _
from quiz.directive import inline_nodes

# The n-th piece of package text in the skeleton: letters and digits, no markup can form.
_TOKEN = "exercisetext{:06d}x"
_TOKEN_PATTERN = re.compile(r"exercisetext(\d{6})x")


def _kind_label(kind: str) -> str:
    """What an exercise of ``kind`` asks, as the page labels it."""
    labels = {
        "plan": _("Write it from a plan"),
        "fill-in": _("Fill in the missing part"),
        "find-the-bug": _("Find the bug"),
        "predict": _("Predict, then run"),
    }
    return labels[kind]


def _indent(text: str, spaces: int) -> str:
    return "\n".join((" " * spaces + line) if line else line for line in text.splitlines())


def _paragraphs(text: str) -> list[str]:
    return [part.strip() for part in text.split("\n\n") if part.strip()]


class _Skeleton:
    """Collects the texts and code that the tokens of a skeleton stand for."""

    def __init__(self) -> None:
        self.pieces: list[tuple[str, str]] = []

    def text(self, text: str) -> str:
        """A token for inline text (`backticks` become code)."""
        self.pieces.append(("text", text))
        return _TOKEN.format(len(self.pieces) - 1)

    def code(self, code: str) -> str:
        """A token for a paragraph that becomes a Python code block."""
        self.pieces.append(("code", code))
        return _TOKEN.format(len(self.pieces) - 1)


def exercise_rst(exercise: Exercise, number: int, skeleton: _Skeleton) -> str:
    """One exercise as a reStructuredText skeleton (its texts translated, as tokens)."""
    heading = _("Exercise {number}: {title}").format(
        number=number, title=translated(exercise.title)
    )
    body = [
        f".. rubric:: {skeleton.text(heading)}",
        f".. container:: exercise-kind\n\n   {skeleton.text(_kind_label(exercise.kind))}",
        *(skeleton.text(p) for p in _paragraphs(translated(exercise.statement))),
        skeleton.code(exercise.starter),
    ]
    for index, hint in enumerate(exercise.hints, 1):
        label = _("Hint {number}").format(number=index)
        body.append(
            f".. dropdown:: {skeleton.text(label)}\n"
            f"   :class-container: exercise-hint\n\n"
            f"   {skeleton.text(translated(hint))}\n"
        )
    explanation = "\n\n".join(
        f"   {skeleton.text(p)}" for p in _paragraphs(translated(exercise.explanation))
    )
    body.append(
        f".. dropdown:: {skeleton.text(_('Solution'))}\n"
        f"   :class-container: exercise-solution\n\n"
        f"   {skeleton.code(exercise.solution)}\n\n{explanation}\n"
    )
    return (
        f".. container:: exercise\n   :name: {nodes.make_id('exercise-' + exercise.id)}\n\n"
        + _indent("\n\n".join(body), 3)
    )


def lesson_rst(exercises: tuple[Exercise, ...]) -> tuple[str, list[tuple[str, str]]]:
    """A lesson's exercises as a skeleton, with the pieces its tokens stand for."""
    skeleton = _Skeleton()
    intro = skeleton.text(
        _(
            "Each exercise runs in Triton's interpreter, on the CPU, so no GPU is needed. "
            "Copy the starter code into a notebook or a script of your own, work on it, "
            "then check it: `from kernels.exercises import check` in a clone of the course, "
            "`from ninja_gap.kernels.exercises import check` with the course installed. "
            "The checker runs your code on small inputs, including the edge cases of this "
            "page, and says what "
            "is wrong: the first wrong element, the pattern of the wrong ones, a write "
            "outside the output, or the line of your code where an error happened."
        )
    )
    blocks = [exercise_rst(item, n, skeleton) for n, item in enumerate(exercises, 1)]
    return (
        ".. container:: exercises\n\n" + _indent("\n\n".join([intro, *blocks]), 3) + "\n",
        skeleton.pieces,
    )


def fill_in(tree: nodes.Node, pieces: list[tuple[str, str]]) -> None:
    """Replace every token in ``tree`` by its text, or its paragraph by a code block."""
    for text_node in list(tree.findall(nodes.Text)):
        parts = _TOKEN_PATTERN.split(str(text_node))
        if len(parts) == 1:
            continue
        parent = text_node.parent
        if len(parts) == 3 and not parts[0] and not parts[2]:
            kind, value = pieces[int(parts[1])]
            if kind == "code" and isinstance(parent, nodes.paragraph):
                block = nodes.literal_block(value, value, language="python")
                parent.parent.replace(parent, block)
                continue
        replacement: list[nodes.Node] = []
        for index, part in enumerate(parts):
            if index % 2:
                replacement += inline_nodes(pieces[int(part)][1])
            elif part:
                replacement.append(nodes.Text(part))
        parent.replace(text_node, replacement)


class ExercisesDirective(SphinxDirective):
    """``exercises LESSON``: render the exercises of ``kernels/exercises/LESSON.py``."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        lesson = self.arguments[0]
        where = f"{self.env.docname}: exercises {lesson!r}"
        if lesson not in PAGES:
            raise self.error(f"{where}: no such lesson; lessons with exercises: {', '.join(PAGES)}")
        package = Path(messages.__file__).parent
        self.env.note_dependency(str(package / "exercises" / f"{lesson}.py"))
        catalog = messages.LOCALES / f"{self.config.language}.po"
        if catalog.exists():  # a missing file would make the page outdated forever
            self.env.note_dependency(str(catalog))
        try:
            exercises = lesson_exercises(lesson)
        except ExerciseDefinitionError as error:
            raise self.error(f"{error} (used by {self.env.docname})") from None
        rst, pieces = lesson_rst(exercises)
        # Parsed as reStructuredText whatever the page is written in, in a scratch
        # document sharing this build's settings and reporter (so -W sees its messages).
        scratch = new_document(self.get_source_info()[0], self.state.document.settings)
        scratch.reporter = self.state.document.reporter
        Parser().parse(rst, scratch)
        fill_in(scratch, pieces)
        for node in scratch.children:
            node["support_smartquotes"] = False  # code in the texts is shown as written
        for node in scratch.findall(nodes.TextElement):
            # Translated from kernels/locales/, not from the page's catalog.
            node["translatable"] = False
        return list(scratch.children)


def set_language(app: Sphinx, config: Config) -> None:
    """Let :func:`kernels.messages._` translate into the build's language, also in a
    project without the ``editions`` extension (which does the same)."""
    os.environ[messages.LANGUAGE_VARIABLE] = config.language or messages.ENGLISH


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive (it needs ``sphinx_design`` for its dropdowns)."""
    app.setup_extension("sphinx_design")
    app.add_directive("exercises", ExercisesDirective)
    app.connect("config-inited", set_language)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}

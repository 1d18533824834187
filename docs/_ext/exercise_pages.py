"""The ``exercises`` directive: a lesson's exercises from :mod:`kernels.exercises`, on its page.

In a page::

    ```{exercises} intro
    ```

shows every exercise of ``kernels/exercises/intro.py``: its title and kind, the
statement, the starter code, then each hint and the solution in collapsed sphinx-design
dropdowns (native ``<details>`` elements: they open without JavaScript).

The texts live once, in the package, and are translated through
``kernels/text/locales/<language>.po`` like everything the course's code prints. They never go
through a markup parser: as the quiz directive does, a skeleton whose places for text
hold tokens is parsed, then the texts go in as text, inline code and code blocks.
"""

import os
import posixpath
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.environment import BuildEnvironment
from sphinx.util.docutils import SphinxDirective

from kernels.exercises import PAGES, Exercise, ExerciseDefinitionError, lesson_exercises
from kernels.text import messages
from kernels.text.messages import _, number, translated
from quiz.directive import indent, inline_nodes, parse_skeleton, warn_of_shared_anchors

# The folder of the built site that holds each page's exercises as a notebook
# (written by ``exercise_notebooks``).
NOTEBOOK_FOLDER = "exercises"

# The n-th piece of package text in the skeleton: letters and digits, no markup can form.
_TOKEN = "exercisetext{:06d}x"
_TOKEN_PATTERN = re.compile(r"exercisetext(\d{6})x")


def kind_label(kind: str) -> str:
    """What an exercise of ``kind`` asks, as the page labels it."""
    labels = {
        "plan": _("Write it from a plan"),
        "fill-in": _("Fill in the missing part"),
        "find-the-bug": _("Find the bug"),
        "predict": _("Predict, then run"),
        "faster": _("Make it faster"),
    }
    return labels[kind]


def speed_note(exercise: Exercise) -> str:
    """How a "faster" exercise is passed, for its page and its notebook."""
    assert exercise.speed is not None and exercise.speed_goal is not None
    return _(
        "Passed by speed, which only a GPU can grade: there the check times a right answer "
        "on {case} against the course's own code, and passes it at {goal} of the course's "
        "rate or more. Without a GPU it says whether the answer is right, and that its "
        "speed is not graded."
    ).format(case=translated(exercise.speed.name), goal=number(f"{exercise.speed_goal:.2f}x"))


def _paragraphs(text: str) -> list[str]:
    return [part.strip() for part in text.split("\n\n") if part.strip()]


def notebook_path(lesson: str) -> str:
    """Where the notebook of ``lesson``'s exercises is, relative to the site's root."""
    return f"{NOTEBOOK_FOLDER}/{lesson}.ipynb"


class _Skeleton:
    """Collects the texts and code that the tokens of a skeleton stand for."""

    def __init__(self) -> None:
        self.pieces: list[tuple[str, str]] = []

    def link(self, text: str, uri: str) -> str:
        """A token for a link (``text`` shown, pointing at ``uri``)."""
        self.pieces.append(("link", f"{uri}\n{text}"))
        return _TOKEN.format(len(self.pieces) - 1)

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
        f".. container:: exercise-kind\n\n   {skeleton.text(kind_label(exercise.kind))}",
        *(skeleton.text(p) for p in _paragraphs(translated(exercise.statement))),
        *([skeleton.text(speed_note(exercise))] if exercise.speed_goal is not None else []),
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
        + indent("\n\n".join(body), 3)
    )


def lesson_rst(
    exercises: tuple[Exercise, ...], notebook_uri: str
) -> tuple[str, list[tuple[str, str]]]:
    """A lesson's exercises as a skeleton, with the pieces its tokens stand for;
    ``notebook_uri`` is the link, from the page, to their notebook."""
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
    timing = skeleton.text(
        _(
            "On a machine with a GPU, outside the interpreter, "
            "`check(..., measure=True)` also times a right answer on a large case against "
            "the course's kernel and PyTorch, where the exercise has one."
        )
    )
    # Tokens apart: a text piece is shown with its outer spaces trimmed.
    download = " ".join([
        skeleton.text(_("All of them in a notebook, with a cell that checks each:")),
        skeleton.link(_("download the notebook"), notebook_uri),
        skeleton.text(_("(it needs Jupyter and the course installed).")),
    ])  # fmt: skip
    blocks = [exercise_rst(item, n, skeleton) for n, item in enumerate(exercises, 1)]
    return (
        ".. container:: exercises\n\n"
        + indent("\n\n".join([intro, timing, download, *blocks]), 3)
        + "\n",
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
                kind, value = pieces[int(part)]
                replacement += _link(value) if kind == "link" else inline_nodes(value)
            elif part:
                replacement.append(nodes.Text(part))
        parent.replace(text_node, replacement)


def _link(value: str) -> list[nodes.Node]:
    uri, text = value.split("\n", 1)
    return [nodes.reference(text, text, refuri=uri, classes=["exercise-notebook"])]


class ExercisesDirective(SphinxDirective):
    """``exercises LESSON``: render the exercises of ``kernels/exercises/LESSON.py``."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        lesson = self.arguments[0]
        where = f"{self.env.docname}: exercises {lesson!r}"
        if lesson not in PAGES:
            raise self.error(f"{where}: no such lesson; lessons with exercises: {', '.join(PAGES)}")
        package = Path(messages.__file__).parents[1]
        self.env.note_dependency(str(package / "exercises" / f"{lesson}.py"))
        catalog = messages.LOCALES / f"{self.config.language}.po"
        if catalog.exists():  # a missing file would make the page outdated forever
            self.env.note_dependency(str(catalog))
        try:
            exercises = lesson_exercises(lesson)
        except ExerciseDefinitionError as error:
            raise self.error(f"{error} (used by {self.env.docname})") from None
        pages_with_exercises(self.env)[lesson] = self.env.docname
        uri = posixpath.relpath(notebook_path(lesson), posixpath.dirname(self.env.docname) or ".")
        rst, pieces = lesson_rst(exercises, uri)
        # Translated from kernels/text/locales/, not from the page's catalog.
        return parse_skeleton(self, rst, lambda tree: fill_in(tree, pieces))


def pages_with_exercises(env: BuildEnvironment) -> dict[str, str]:
    """The page (docname) that shows each lesson's exercises, as the directive noted it."""
    if not hasattr(env, "exercise_pages"):
        env.exercise_pages = {}
    return env.exercise_pages


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    pages = pages_with_exercises(env)
    for lesson in [lesson for lesson, page in pages.items() if page == docname]:
        del pages[lesson]


def _merge(app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment) -> None:
    pages_with_exercises(env).update(pages_with_exercises(other))


def _check_anchors(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    warn_of_shared_anchors(doctree, docname, "exercise", "an exercise")


def set_language(app: Sphinx, config: Config) -> None:
    """Let :func:`kernels.text.messages._` translate into the build's language, also in a
    project without the ``editions`` extension (which does the same)."""
    os.environ[messages.LANGUAGE_VARIABLE] = config.language or messages.ENGLISH


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive (it needs ``sphinx_design`` for its dropdowns)."""
    app.setup_extension("sphinx_design")
    app.add_directive("exercises", ExercisesDirective)
    app.connect("config-inited", set_language)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("doctree-resolved", _check_anchors)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}

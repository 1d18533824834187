"""Each page's exercises as a notebook to download: ``exercises/<lesson>.ipynb`` in the
built site, linked from the page's exercises section (``exercise_pages``).

A notebook holds what the page shows, in the build's language: each exercise's
statement, its starter code in a cell of its own, a cell that checks the answer with the
installed course (``ninja_gap.kernels.exercises.check``), and the hints and the solution
folded in ``<details>`` below. Its first cell has Triton run kernels in its interpreter,
as the page's checks do, so that it needs no GPU. The texts come from
:mod:`kernels.exercises` and are escaped for Markdown: a notebook shows them as written.
"""

import json
import re
import textwrap
from pathlib import Path
from typing import Any

from downloads import installed_imports
from exercise_pages import (
    NOTEBOOK_FOLDER,
    kind_label,
    notebook_path,
    pages_with_exercises,
    speed_note,
)
from sphinx.application import Sphinx

from kernels.exercises import Exercise, lesson_exercises
from kernels.text.messages import _, translated

# Characters that Markdown or the HTML inside it would read as markup.
_ESCAPED = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MARKUP = re.compile(r"([\\`*_\[\]{}#|~!])")
# What starts a list, a quote or a heading at the start of a paragraph.
_BLOCK_START = re.compile(r"^(\d+)([.)])|^([-+>=])")


def _plain(text: str) -> str:
    text = "".join(_ESCAPED.get(char, char) for char in text)
    return _MARKUP.sub(r"\\\1", text)


def markdown_text(text: str) -> str:
    """``text`` (paragraphs; `spans` in backticks are code) as Markdown that shows it as
    written: code spans stay code, everything else is escaped."""
    paragraphs = []
    for paragraph in text.split("\n\n"):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        parts = paragraph.split("`")
        if len(parts) % 2 == 0:  # an unmatched backtick is a character
            parts = [paragraph]
        out = []
        for index, part in enumerate(parts):
            if index % 2:
                out.append(f"`{part}`" if part.strip() else _plain(f"`{part}`"))
            else:
                out.append(_plain(part))
        joined = "".join(out)
        paragraphs.append(_BLOCK_START.sub(lambda m: _escape_block_start(m), joined))
    return "\n\n".join(paragraphs)


def _escape_block_start(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return f"{match.group(1)}\\{match.group(2)}"
    return f"\\{match.group(3)}"


def _lines(text: str) -> list[str]:
    # A notebook stores a cell's source as lines, each with its newline but the last.
    return text.splitlines(keepends=True)


def _markdown(text: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": _lines(text)}


def _code(code: str) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": _lines(code.rstrip("\n")),
    }


def name_imports(exercise: Exercise) -> list[str]:
    """Import lines for the names an exercise's code uses without defining them (a kernel
    of the course), as the installed course names their modules (as the gallery's
    downloads do: :func:`downloads.installed_imports`)."""
    lines = []
    for name, value in sorted(exercise.names.items()):
        module = getattr(getattr(value, "fn", value), "__module__", "")  # a kernel's is fn's
        own = getattr(value, "__name__", name)
        alias = "" if own == name else f" as {name}"
        lines.append(installed_imports(f"from {module} import {own}{alias}"))
    return lines


def setup_code() -> str:
    """The notebook's first cell: the interpreter chosen, what every exercise uses."""
    comment = _(
        "Triton's interpreter runs the kernels on the CPU, as the page's checks do; it is "
        "chosen before Triton is imported. On a machine with a GPU, leave out the line "
        "that sets TRITON_INTERPRET to run them on the GPU: check(..., measure=True) then "
        "also times a right answer against the course's kernel and PyTorch."
    )
    return "\n".join(
        [
            *(f"# {line}" for line in textwrap.wrap(comment, 86)),
            "import os",
            "",
            'os.environ["TRITON_INTERPRET"] = "1"',
            "",
            "import torch",
            "import triton",
            "import triton.language as tl",
            "",
            "from ninja_gap.kernels.exercises import check",
        ]
    )


def _folded(summary: str, body: str) -> str:
    # Jupyter renders Markdown inside an HTML block when blank lines set it apart.
    return f"<details>\n<summary>{_plain(summary)}</summary>\n\n{body}\n\n</details>"


def exercise_cells(exercise: Exercise, number: int) -> list[dict[str, Any]]:
    """One exercise: its statement, the starter, the check, the hints and the solution."""
    heading = _("Exercise {number}: {title}").format(
        number=number, title=translated(exercise.title)
    )
    statement = "\n\n".join(
        [f"## {_plain(heading)}", f"*{_plain(kind_label(exercise.kind))}*",
         markdown_text(translated(exercise.statement)),
         *([markdown_text(speed_note(exercise))] if exercise.speed_goal is not None else [])]
    )  # fmt: skip
    folded = [
        _folded(_("Hint {number}").format(number=index), markdown_text(translated(hint)))
        for index, hint in enumerate(exercise.hints, 1)
    ]
    solution = f"```python\n{exercise.solution.rstrip()}\n```\n\n" + markdown_text(
        translated(exercise.explanation)
    )
    folded.append(_folded(_("Solution"), solution))
    # The course's code that this exercise uses, imported in its own cell: a name that an
    # earlier exercise's cell defined anew (the learner's kernel) must not stand in for it.
    imports = name_imports(exercise)
    starter = "\n".join([*imports, "", "", exercise.starter]) if imports else exercise.starter
    return [
        _markdown(statement),
        _code(starter),
        _code(f'check("{exercise.id}", {exercise.entry})'),
        _markdown("\n\n".join(folded)),
    ]


def notebook(lesson: str, page_title: str) -> dict[str, Any]:
    """The notebook of ``lesson``'s exercises, from the page called ``page_title``."""
    exercises = lesson_exercises(lesson)
    intro = _(
        "The exercises of the page \u201c{page}\u201d. Each runs in Triton's interpreter, on "
        "the CPU, so no GPU is needed. Run the first cell, write your code in an "
        "exercise's cell, run it, then run the cell below it: the checker runs your code "
        "on small inputs, including the edge cases of the page, and says what is wrong. "
        "The notebook needs Jupyter and the course installed (its package, ninja_gap)."
    ).format(page=page_title)
    cells = [_markdown(f"# {_plain(page_title)}\n\n{markdown_text(intro)}"),
             _code(setup_code())]  # fmt: skip
    for number, item in enumerate(exercises, 1):
        cells += exercise_cells(item, number)
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 4,
    }


def write_notebooks(app: Sphinx, exception: Exception | None) -> None:
    """After a successful HTML build, write the notebook of every page's exercises."""
    if exception is not None or app.builder.format != "html":
        return
    folder = Path(app.outdir) / NOTEBOOK_FOLDER
    folder.mkdir(exist_ok=True)
    for lesson, docname in sorted(pages_with_exercises(app.env).items()):
        title = app.env.titles[docname].astext()
        text = json.dumps(notebook(lesson, title), indent=1, ensure_ascii=False) + "\n"
        (Path(app.outdir) / notebook_path(lesson)).write_text(text, encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    """Write the notebooks once the site is written (the pages link to them)."""
    app.setup_extension("exercise_pages")
    app.connect("build-finished", write_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

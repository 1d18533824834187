"""The code that pages show fits the text column: at most 88 columns, so that a reader at
1280 px sees each line whole (the gallery's scripts and the kernels are formatted so by
gallery/ruff.toml and kernels/ruff.toml; the lessons' code cells are written so)."""

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from conftest import ROOT, markdown_pages
from sphinx.config import Config
from sphinx.directives.code import LiteralIncludeReader

COLUMNS = 88


def assert_fits(what: str, lines: Iterable[tuple[str, str]]) -> None:
    """Fail, listing each, if any of ``lines`` (where, line) is longer than COLUMNS."""
    long = [f"{where}: {line}" for where, line in lines if len(line) > COLUMNS]
    assert not long, f"{what} longer than {COLUMNS} columns:\n" + "\n".join(long)


LESSONS = sorted((ROOT / "docs" / "lessons").glob("*.md"))
GALLERY = sorted((ROOT / "gallery").glob("plot_*.py"))
PAGES = markdown_pages() + GALLERY
# A literalinclude in a MyST page (```{literalinclude} path) or in a gallery script's
# reStructuredText (# .. literalinclude:: path), with the options that follow it.
INCLUDE = re.compile(
    r"(?:\{literalinclude\}|literalinclude::)[ \t]+(\S+)[ \t]*\n((?:[ \t#]*:[a-z-]+:.*\n)*)"
)
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
# Cells that the page does not show as code: glue and setup cells.
HIDDEN = ("remove-cell", "remove-input")


def shown_cells(markdown: str) -> list[tuple[int, list[str]]]:
    """The code cells of a MyST page that show their code: (first line number, lines),
    without their options (``:tags:``, ``:mystnb:`` and the like)."""
    cells = []
    for match in CELL.finditer(markdown):
        lines = match.group(1).splitlines()
        first = markdown[: match.start(1)].count("\n") + 1
        options = 0
        while options < len(lines) and lines[options].startswith(":"):
            options += 1
        if any(tag in line for line in lines[:options] for tag in HIDDEN):
            continue
        cells.append((first + options, lines[options:]))
    return cells


def code_lines(script: str) -> list[tuple[int, str]]:
    """The lines of a gallery script that a page shows as code: all but its comments,
    which sphinx-gallery turns into the page's text, and its module docstring."""
    docstring = ast.get_docstring(ast.parse(script), clean=False)
    end = script.count("\n", 0, script.index(docstring) + len(docstring)) + 1 if docstring else 0
    return [(number, line) for number, line in enumerate(script.splitlines(), 1)
            if number > end and not line.lstrip().startswith("#")]  # fmt: skip


def includes(page: str) -> list[tuple[str, dict[str, str]]]:
    """The files a page literalincludes, each with its options (``pyobject``,
    ``start-at``, ``end-at``, ``end-before``)."""
    found = []
    for match in INCLUDE.finditer(page):
        options = dict(
            re.match(r"[ \t#]*:([a-z-]+):[ \t]*(.*)", line).groups()
            for line in match.group(2).splitlines()
        )
        found.append((match.group(1).lstrip("/"), options))
    return found


def included_lines(path: str, options: dict[str, str]) -> list[str]:
    """The lines that a literalinclude of ``path`` with ``options`` shows, read by
    Sphinx's own reader, as the build and the downloads (docs/_ext/downloads.py) read
    them."""
    code, _ = LiteralIncludeReader(str(ROOT / path), options, Config()).read()
    return code.splitlines()


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.stem)
def test_included_kernel_code_fits_the_column(page: Path) -> None:
    assert_fits("included code", (
        (f"{path} ({options})", line)
        for path, options in includes(page.read_text(encoding="utf-8"))
        for line in included_lines(path, options)
    ))  # fmt: skip


def test_an_include_is_found_in_both_kinds_of_page() -> None:
    page = (
        "# .. literalinclude:: /kernels/triton_helpers/tile_dot.py\n#    :pyobject: tile_dot\n#\n"
        "```{literalinclude} /kernels/operations/matmul.py\n:start-at: PERSISTENT_MIN_OUTPUT =\n"
        ":end-at: PROGRAMS_PER_SM =\n```\n"
    )
    (fn, fn_options), (block, block_options) = includes(page)
    assert (fn, fn_options) == ("kernels/triton_helpers/tile_dot.py", {"pyobject": "tile_dot"})
    assert included_lines(fn, fn_options)[:2] == ["@triton.jit", "def tile_dot(a, b, acc):"]
    assert block == "kernels/operations/matmul.py"
    assert included_lines(block, block_options) == [
        "PERSISTENT_MIN_OUTPUT = 2048 * 2048",
        "PROGRAMS_PER_SM = 2",
    ]


@pytest.mark.parametrize("page", LESSONS, ids=lambda path: path.stem)
def test_lesson_code_cells_fit_the_column(page: Path) -> None:
    assert_fits("shown code", (
        (f"{page.name}:{first + index}", line)
        for first, lines in shown_cells(page.read_text(encoding="utf-8"))
        for index, line in enumerate(lines)
    ))  # fmt: skip


@pytest.mark.parametrize("script", GALLERY, ids=lambda path: path.stem)
def test_gallery_code_fits_the_column(script: Path) -> None:
    assert_fits("shown code", (
        (f"{script.name}:{number}", line)
        for number, line in code_lines(script.read_text(encoding="utf-8"))
    ))  # fmt: skip


def test_a_long_line_in_a_shown_cell_is_found_and_a_hidden_one_is_not() -> None:
    page = ("```{code-cell} ipython3\n:tags: [remove-cell]\n" + "x" * 100 + "\n```\n"
            "```{code-cell} ipython3\n:tags: [hide-output]\n" + "y" * 100 + "\n```\n")  # fmt: skip
    assert shown_cells(page) == [(7, ["y" * 100])]


def fenced_lines(markdown: str) -> list[tuple[int, str]]:
    """The lines of a MyST page's fenced blocks other than code cells and directives
    (```text, ```console, ```python and the like), as (line number, line)."""
    found: list[tuple[int, str]] = []
    fence: str | None = None  # the open fence's backticks, while in a block
    plain = False  # whether the open block is one this looks at
    for number, line in enumerate(markdown.split("\n"), start=1):
        opening = re.match(r"^(`{3,})(.*)$", line)
        if fence is None and opening:
            fence, plain = opening.group(1), not opening.group(2).startswith("{")
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is not None and plain:
            found.append((number, line))
    return found


@pytest.mark.parametrize("page", markdown_pages(), ids=lambda path: path.stem)
def test_fenced_blocks_of_a_page_fit_the_column(page: Path) -> None:
    # Before: three blocks of the contributing guide ran to 96-105 columns.
    assert_fits("fenced lines", (
        (f"{page.name}:{number}", line)
        for number, line in fenced_lines(page.read_text(encoding="utf-8"))
    ))  # fmt: skip


def test_a_long_line_of_a_fenced_block_is_found_and_one_of_a_cell_is_not() -> None:
    wide = "x" * (COLUMNS + 1)
    page = f"```{{code-cell}} python\n{wide}\n```\n\n{wide}\n\n```console\n$ {wide}\n```\n"
    assert fenced_lines(page) == [(8, f"$ {wide}")]


def test_every_exercise_s_code_fits_the_column() -> None:
    # Before: 16 lines of the starters and solutions (cross-entropy, matmul, attention,
    # softmax, tiles) ran to 89-96 columns on the pages that show them.
    from kernels.exercises import PAGES, lesson_exercises

    assert_fits("exercise code", (
        (f"{item.id} ({which})", line)
        for lesson in PAGES for item in lesson_exercises(lesson)
        for which in ("starter", "solution")
        for line in getattr(item, which).split("\n")
    ))  # fmt: skip

"""The code that pages show fits the text column: at most 88 columns, so that a reader at
1280 px sees each line whole (the gallery's scripts and the kernels are formatted so by
gallery/ruff.toml and kernels/ruff.toml; the lessons' code cells are written so)."""

import ast
import re
from pathlib import Path

import pytest
from conftest import ROOT

COLUMNS = 88
LESSONS = sorted((ROOT / "docs" / "lessons").glob("*.md"))
GALLERY = sorted((ROOT / "gallery").glob("plot_*.py"))
PAGES = sorted((ROOT / "docs").rglob("*.md")) + GALLERY
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


def included_lines(source: str, options: dict[str, str]) -> list[tuple[int, str]]:
    """The numbered lines of ``source`` that a literalinclude with ``options`` shows:
    a whole object (``pyobject``, dotted for a method), or the lines from the first
    that holds ``start-at`` to the first after it that holds ``end-at`` (or before the
    one that holds ``end-before``)."""
    lines = list(enumerate(source.splitlines(), 1))
    if "pyobject" in options:
        scope: list[ast.stmt] = ast.parse(source).body
        node: ast.AST | None = None
        for name in options["pyobject"].split("."):
            node = next(
                n
                for n in scope
                if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.Assign) and name in _names(n)
            )
            scope = getattr(node, "body", [])
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        return lines[first - 1 : node.end_lineno]
    start = (
        next(i for i, line in lines if options.get("start-at", "") in line)
        if "start-at" in options
        else 1
    )
    end_at, end_before = options.get("end-at"), options.get("end-before")
    end = len(lines)
    if end_at is not None:
        end = next(i for i, line in lines if i > start and end_at in line)
    elif end_before is not None:
        end = next(i for i, line in lines if i > start and end_before in line) - 1
    return lines[start - 1 : end]


def _names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [node.name]


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.stem)
def test_included_kernel_code_fits_the_column(page: Path) -> None:
    long = []
    for path, options in includes(page.read_text(encoding="utf-8")):
        source = (ROOT / path).read_text(encoding="utf-8")
        long += [
            f"{path}:{number}: {line}"
            for number, line in included_lines(source, options)
            if len(line) > COLUMNS
        ]
    assert not long, f"included code longer than {COLUMNS} columns:\n" + "\n".join(long)


def test_an_include_is_read_as_sphinx_reads_it() -> None:
    source = "import x\n\n\n@jit\ndef f():\n    pass\n\n\nA = 1\nB = (\n    2,\n)\n"
    page = (
        "# .. literalinclude:: /kernels/k.py\n#    :pyobject: f\n#\n"
        "```{literalinclude} /kernels/k.py\n:start-at: B =\n:end-at: )\n```\n"
    )
    (fn, fn_options), (block, block_options) = includes(page)
    assert fn == block == "kernels/k.py"
    assert [n for n, _ in included_lines(source, fn_options)] == [4, 5, 6]
    assert [n for n, _ in included_lines(source, block_options)] == [10, 11, 12]


@pytest.mark.parametrize("page", LESSONS, ids=lambda path: path.stem)
def test_lesson_code_cells_fit_the_column(page: Path) -> None:
    long = [f"{page.name}:{first + index}: {line}"
            for first, lines in shown_cells(page.read_text(encoding="utf-8"))
            for index, line in enumerate(lines) if len(line) > COLUMNS]  # fmt: skip
    assert not long, f"shown code longer than {COLUMNS} columns:\n" + "\n".join(long)


@pytest.mark.parametrize("script", GALLERY, ids=lambda path: path.stem)
def test_gallery_code_fits_the_column(script: Path) -> None:
    long = [f"{script.name}:{number}: {line}"
            for number, line in code_lines(script.read_text(encoding="utf-8"))
            if len(line) > COLUMNS]  # fmt: skip
    assert not long, f"shown code longer than {COLUMNS} columns:\n" + "\n".join(long)


def test_a_long_line_in_a_shown_cell_is_found_and_a_hidden_one_is_not() -> None:
    page = ("```{code-cell} ipython3\n:tags: [remove-cell]\n" + "x" * 100 + "\n```\n"
            "```{code-cell} ipython3\n:tags: [hide-output]\n" + "y" * 100 + "\n```\n")  # fmt: skip
    assert shown_cells(page) == [(7, ["y" * 100])]

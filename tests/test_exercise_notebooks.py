"""Each page's exercises as a notebook: what a notebook holds, its texts shown as written,
the built site's notebooks and the pages' links to them, and a learner's session with a
downloaded notebook, run outside the clone with the course installed."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, DocsBuild

from kernels.exercises import PAGES, lesson_exercises

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import exercise_notebooks
import exercise_pages


def code_cells(notebook: dict) -> list[str]:
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def markdown(notebook: dict) -> str:
    return "\n".join(
        "".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown"
    )


@pytest.mark.parametrize("lesson", PAGES)
def test_a_notebook_holds_each_exercise_its_starter_and_its_check(lesson: str) -> None:
    notebook = exercise_notebooks.notebook(lesson, "The page")
    json.dumps(notebook)  # it is stored as JSON
    assert notebook["nbformat"] == 4
    cells = code_cells(notebook)
    assert 'os.environ["TRITON_INTERPRET"] = "1"' in cells[0]
    assert "from ninja_gap.kernels.exercises import check" in cells[0]
    for item in lesson_exercises(lesson):
        starters = [cell for cell in cells if cell.endswith(item.starter.rstrip("\n"))]
        assert len(starters) == 1, item.id
        check = cells.index(starters[0]) + 1
        assert cells[check] == f'check("{item.id}", {item.entry})'
        # The solution is there too, folded away.
        assert item.solution.rstrip() in markdown(notebook)


def test_the_course_s_kernels_an_exercise_uses_are_imported_in_its_own_cell() -> None:
    # intro-add-launcher uses the course's add_kernel; an earlier exercise's cell defines
    # the learner's own add_kernel, which must not stand in for it.
    cells = code_cells(exercise_notebooks.notebook("intro", "The page"))
    launcher = next(cell for cell in cells if "def add(x, y)" in cell)
    assert launcher.startswith("from ninja_gap.kernels.operations.vector_add import add_kernel\n")
    assert "import add_kernel" not in cells[0]


def test_texts_are_shown_as_written_not_as_markup() -> None:
    text = "1. <img src=x onerror=alert(1)> *not bold* [a](b) `x < y * 2`\n\n# not a heading"
    shown = exercise_notebooks.markdown_text(text)
    assert "<img" not in shown and "&lt;img src=x onerror=alert(1)&gt;" in shown
    assert r"\*not bold\*" in shown and r"\[a\](b)" in shown
    assert "`x < y * 2`" in shown  # a code span is code, as on the page
    assert shown.startswith(r"1\.") and "\n\n\\# not a heading" in shown


def test_every_page_with_exercises_links_to_its_notebook(docs_build: DocsBuild) -> None:
    assert docs_build.returncode == 0, docs_build.log[-3000:]
    linked = set()
    for page in docs_build.html.rglob("*.html"):
        for href in re.findall(r'href="([^"]*\.ipynb)"', page.read_text(encoding="utf-8")):
            if "/exercises/" in f"/{href}":
                target = (page.parent / href).resolve()
                assert target.is_file(), f"{page}: {href}"
                linked.add(target.stem)
    assert linked == set(PAGES)
    for lesson in PAGES:
        notebook = json.loads((docs_build.html / exercise_pages.notebook_path(lesson)).read_text())
        assert len(code_cells(notebook)) == 1 + 2 * len(lesson_exercises(lesson))


def test_the_russian_notebooks_are_in_russian(russian_build: DocsBuild) -> None:
    assert russian_build.returncode == 0, russian_build.log[-3000:]
    notebook = json.loads((russian_build.html / "exercises" / "intro.ipynb").read_text())
    text = markdown(notebook) + code_cells(notebook)[0]
    assert "Упражнение 1" in text and "Подсказка 1" in text and "Решение" in text
    assert "Exercise 1" not in text and "Hint 1" not in text


def test_a_learner_solves_one_exercise_of_a_downloaded_notebook(
    docs_build: DocsBuild, installed_course: Path, tmp_path: Path
) -> None:
    # The session the exercises section describes: download the notebook, write an
    # answer into the first exercise's cell, run the notebook's cells in order (as
    # Jupyter would, here as one script) outside the clone, with the course installed.
    notebook = json.loads((docs_build.html / "exercises" / "intro.ipynb").read_text())
    first, *others = lesson_exercises("intro")
    cells = code_cells(notebook)
    cells[cells.index(first.starter.rstrip("\n"))] = first.solution
    script = tmp_path / "intro_exercises.py"
    script.write_text("\n\n".join(cells) + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(installed_course)}
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    verdicts = [line for line in run.stdout.splitlines() if line.startswith(("Passed", "Not yet"))]
    assert len(verdicts) == 1 + len(others), run.stdout
    assert verdicts[0].startswith("Passed")
    assert all(verdict.startswith("Not yet") for verdict in verdicts[1:])

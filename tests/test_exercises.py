"""The exercises of lessons 1-4 and of the gallery's pages (kernels.exercises): every
starter fails with the diagnosis it was written for, every solution passes, a plausible
wrong answer to each exercise is caught with the right diagnosis, the directive renders
them, and bad definitions fail with an error that names them."""

import dataclasses
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
import triton
import triton.language as tl
from conftest import ROOT

from kernels.exercises import (
    GALLERY,
    LESSONS,
    PAGES,
    Exercise,
    ExerciseDefinitionError,
    check,
    exercise,
    lesson_exercises,
    speed,
)
from kernels.exercises.constexpr import scale_rows_kernel
from kernels.exercises.intro import ADD_MASK
from kernels.exercises.model import KINDS, PRELUDE, _run_source
from kernels.operations.vector_add import add_kernel
from kernels.text import messages

ALL = [item for lesson in PAGES for item in lesson_exercises(lesson)]
IDS = [item.id for item in ALL]
# What a beginner's check may take in the interpreter: seconds of this process's CPU time,
# which other jobs on a loaded machine do not inflate as they do the wall clock (a check
# took 5.4 s of wall time beside two Sphinx builds on two cores).
SECONDS_PER_CHECK = 5.0


def test_at_least_two_exercises_per_lesson_of_several_kinds() -> None:
    for lesson in PAGES:
        assert len(lesson_exercises(lesson)) >= 2, lesson
    assert {item.kind for item in ALL} == set(KINDS)
    gallery = [item for lesson in GALLERY for item in lesson_exercises(lesson)]
    assert {item.kind for item in gallery} == set(KINDS)


def test_every_gallery_page_has_a_module_of_exercises() -> None:
    # Found by their modules (kernels/exercises/<page>.py): a new page needs no list.
    scripts = sorted((ROOT / "gallery").glob("plot_*.py"))
    assert sorted(script.stem.split("_", 2)[2] for script in scripts) == list(GALLERY)
    assert GALLERY[:2] == ("cross_entropy", "dropout") and "vector_add" in GALLERY


def graded_here(item: Exercise) -> bool:
    """Whether this run can grade ``item``: a "faster" exercise needs a GPU to time it."""
    return item.speed_goal is None or speed.timing_unavailable(item) is None


@pytest.mark.parametrize("item", ALL, ids=IDS)
def test_the_starter_fails_with_its_diagnosis(item: Exercise) -> None:
    result = check(item.id, item.code("starter"), quiet=True)
    assert not result.passed
    expected = item.starter_diagnosis if graded_here(item) else "not_timed"
    assert result.kind == expected, result.message


@pytest.mark.parametrize("item", ALL, ids=IDS)
def test_the_solution_passes_quickly(item: Exercise) -> None:
    start = time.process_time()
    result = check(item.id, item.code("solution"), quiet=True)
    if graded_here(item):
        assert result.passed, result.message
    else:  # right, and not graded: this run cannot time it
        assert (result.passed, result.kind) == (False, "not_timed"), result.message
        assert result.message.startswith("Right on every case.")
    if item.speed_goal is None or not graded_here(item):
        # The bound is for the interpreter's check; a GPU's timing of a "faster"
        # exercise (profiler runs, a copy ceiling) is another matter.
        assert time.process_time() - start < SECONDS_PER_CHECK


def test_check_prints_its_diagnosis_and_returns_it(capsys: pytest.CaptureFixture[str]) -> None:
    result = check("intro-add-mask", ADD_MASK.code("starter"))
    printed = capsys.readouterr().out
    assert printed.strip() == result.message
    assert result.case == "1000 elements: the last tile is partial"
    assert "wrote outside the output, first past its last element" in printed


# ----- plausible wrong answers ---------------------------------------------------------


@triton.jit
def add_mask_short(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements - 1
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def add_mask_long(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets <= n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def add_ignoring_strides(x_ptr, y_ptr, out_ptr, n_elements, x_stride, y_stride,
                         BLOCK_SIZE: tl.constexpr):  # fmt: skip
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add_float32_output(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape, device=x.device)
    add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK_SIZE=256)
    return out


def add_grid_rounded_down(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    add_kernel[(x.numel() // 256,)](x, y, out, x.numel(), BLOCK_SIZE=256)
    return out


def add_flat_output(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.numel(), dtype=x.dtype, device=x.device)
    add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK_SIZE=256)
    return out


@triton.jit
def scale_always_relu(x_ptr, out_ptr, n_elements, scale,
                      BLOCK_SIZE: tl.constexpr, RELU: tl.constexpr):  # fmt: skip
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    out = tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale, 0.0)
    tl.store(out_ptr + offsets, out, mask=mask)


def scale_rows_fixed_tile(x: torch.Tensor, scale: float) -> torch.Tensor:
    out = torch.empty_like(x)
    scale_rows_kernel[(x.shape[0],)](x, out, x.shape[1], scale, BLOCK_SIZE=64)
    return out


@triton.jit
def row_sum_contiguous_only(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


@triton.jit
def relu_2d_column_mask_only(x_ptr, out_ptr, n_rows, n_cols,
                             x_row_stride, x_col_stride, out_row_stride, out_col_stride,
                             BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.program_id(1) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    mask = (rows[:, None] >= 0) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :] * x_col_stride, mask=mask)
    tl.store(out_ptr + rows[:, None] * out_row_stride + cols[None, :] * out_col_stride,
             tl.maximum(x, 0.0), mask=mask)  # fmt: skip


@triton.jit
def relu_2d_contiguous_out(x_ptr, out_ptr, n_rows, n_cols,
                           x_row_stride, x_col_stride, out_row_stride, out_col_stride,
                           BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.program_id(1) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :] * x_col_stride, mask=mask)
    tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], tl.maximum(x, 0.0), mask=mask)


@triton.jit
def row_max_without_other(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols)
    tl.store(out_ptr + row, tl.max(x, axis=0))


@triton.jit
def double_one_short(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements - 1
    tl.store(out_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def row_min_other_zero(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.min(x, axis=0))


@triton.jit
def row_start_widened_late(rows_ptr, out_ptr, row_stride, BLOCK_SIZE: tl.constexpr):
    idx = tl.arange(0, BLOCK_SIZE)
    rows = tl.load(rows_ptr + idx)
    tl.store(out_ptr + idx, (rows * row_stride).to(tl.int64))


def variant(exercise_id: str, old: str, new: str) -> Any:
    """The solution of ``exercise_id`` with ``old`` replaced by ``new``: a wrong answer
    that differs from the right one by the mistake it makes, and nothing else."""
    item = exercise(exercise_id)
    assert old in item.solution, (exercise_id, old)
    source = item.solution.replace(old, new)
    name = f"<wrong answer to {exercise_id}: {new}>"
    return _run_source(source, name, item.entry, {**PRELUDE, **item.names}, name)


RMS_NORM_WITHOUT_EPS = variant("rms-norm-inverse-root", "/ n_cols + eps", "/ n_cols")

# (exercise, wrong answer, diagnosis kind, pattern, words the diagnosis must hold)
WRONG_ANSWERS: list[tuple[str, Any, str, str | None, str]] = [
    ("intro-add-mask", add_mask_short, "not_written", "boundary", "index 511"),
    ("intro-add-mask", add_mask_long, "wrote_outside", None, "past its last element"),
    ("intro-add-stride", add_ignoring_strides, "read_outside", None, "stride 2"),
    ("intro-add-launcher", add_float32_output, "wrong_dtype", None, "dtype float32"),
    ("intro-add-launcher", add_grid_rounded_down, "not_written", "tail", "triton.cdiv"),
    ("intro-add-launcher", add_flat_output, "wrong_shape", None, "shape (63,)"),
    ("intro-predict-grid", (3, 24), "wrong_answer", None, "gives (4, 24)"),
    ("constexpr-relu-flag", scale_always_relu, "wrong_values", None, "RELU=False"),
    ("constexpr-block-size", scale_rows_fixed_tile, "not_written", "row_ends",
     "columns 64 to 99"),
    ("tiles-row-sum", row_sum_contiguous_only, "read_outside", "rows_after_first",
     "row stride 64"),
    ("tiles-relu-2d", relu_2d_column_mask_only, "wrote_outside", None, "past its last row"),
    ("tiles-relu-2d", relu_2d_contiguous_out, "wrote_outside", None,
     "right of its last column"),
    ("tiles-row-max", row_max_without_other, "wrong_values", "all", "masked lanes"),
    ("tiles-predict-tile", (12, 9), "wrong_answer", None, "gives (12, 11)"),
    ("debugging-off-by-one", double_one_short, "not_written", "boundary", "expected 7, got -7777"),
    ("debugging-min-other", row_min_other_zero, "wrong_values", "all", "positive"),
    ("debugging-int32-overflow", row_start_widened_late, "overflow", None, "2**32"),
    # The gallery's pages.
    ("vector-add-axpy", variant("vector-add-axpy", "mask = offsets < n_elements",
                                "mask = offsets >= 0"),
     "wrote_outside", None, "past its last element"),
    ("vector-add-predict-bytes", 2 * 2**20 * 2, "wrong_answer", None, "gives 6291456"),
    ("dropout-keep-mask", variant("dropout-keep-mask", "random >= p", "random < p"),
     "wrong_values", "all", "p = 0.5, seed 123"),
    ("dropout-counters", variant("dropout-counters", "tl.rand(seed, offsets)",
                                 "tl.rand(seed + tl.program_id(axis=0), lanes)"),
     "wrong_values", None, "index 260"),
    ("softmax-row-max", variant("softmax-row-max", "tl.max(x, axis=0)",
                                "tl.max(tl.abs(x), axis=0)"),
     "not_finite", "all", "6 rows of 50 small values"),
    ("softmax-padding", variant("softmax-padding",
                                'other=-float("inf"))\n'
                                "    numerator = tl.exp(x - tl.max(x, axis=0))",
                                "other=0.0)\n    numerator = tl.where(mask, "
                                "tl.exp(x - tl.max(x, axis=0)), 0.0)"),
     "not_finite", "all", "the kernel computed it"),
    ("vector-add-faster", variant("vector-add-faster", "triton.cdiv(x.numel(), BLOCK_SIZE)",
                                  "x.numel() // BLOCK_SIZE"),
     "not_written", "nothing_written", "does the grid launch any program"),
    ("softmax-faster", variant("softmax-faster", 'other=-float("inf")', "other=0.0"),
     "wrong_values", "all", "6 rows of 50 small values"),
    ("rms-norm-inverse-root", RMS_NORM_WITHOUT_EPS, "not_finite", None, "a row of zeros"),
    ("rms-norm-inverse-root", variant("rms-norm-inverse-root", "/ n_cols + eps",
                                      "/ BLOCK_SIZE + eps"),
     "wrong_values", None, "6 rows of 50 values"),
    ("rms-norm-predict-row", (0.2, 1.4), "wrong_answer", None, "gives (0.4, 1.4)"),
    ("layer-norm-padding-variance", variant("layer-norm-padding-variance",
                                            "axis=0) / n_cols + eps",
                                            "axis=0) / (n_cols - 1) + eps"),
     "wrong_values", None, "6 rows of 64 values"),
    ("layer-norm-predict-rows", (0.0, 2.5), "wrong_answer", None, "gives (0.5, 2.5)"),
    ("cross-entropy-log-sum-exp", variant(
        "cross-entropy-log-sum-exp",
        "row_max + tl.log(tl.sum(tl.exp(x - row_max), axis=0))",
        "tl.log(tl.sum(tl.exp(x), axis=0))"),
     "wrong_values", "all", "got inf"),
    ("cross-entropy-ignore-index", variant(
        "cross-entropy-ignore-index", "tl.where(valid, log_sum_exp - target_logit, 0.0)",
        "log_sum_exp - target_logit"),
     "wrong_values", None, "expected 0"),
    ("matmul-k-mask", variant("matmul-k-mask", "ks[:, None] < k_left", "ks[:, None] < K"),
     "read_outside", "all", "the last step along K is partial"),
    ("matmul-predict-order", (1, 8), "wrong_answer", None, "gives (2, 8)"),
    ("flash-attention-correction", variant("flash-attention-correction",
                                           "tl.exp(row_max - new_max)",
                                           "tl.exp(new_max - row_max)"),
     "not_finite", "all", "overflowed"),
    ("flash-attention-key-mask", variant("flash-attention-key-mask",
                                         'scores, -float("inf"))', "scores, 0.0)"),
     "wrong_values", None, "40 tokens"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("exercise_id", "answer", "kind", "pattern", "words"),
    WRONG_ANSWERS,
    ids=[f"{row[0]}:{getattr(row[1], '__name__', row[1])}" for row in WRONG_ANSWERS],
)
def test_a_wrong_answer_is_caught_with_the_right_diagnosis(
    exercise_id: str, answer: Any, kind: str, pattern: str | None, words: str
) -> None:
    result = check(exercise_id, answer, quiet=True)
    assert not result.passed
    assert (result.kind, result.pattern) == (kind, pattern), result.message
    assert words in result.message, result.message
    assert result.message.startswith("Not yet.")


def test_every_exercise_has_a_wrong_answer() -> None:
    assert {row[0] for row in WRONG_ANSWERS} == set(IDS)


@triton.jit
def add_with_a_typo(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + yy, mask=mask)  # noqa: F821  (the learner's typo)


def test_an_error_is_shortened_to_the_learners_line() -> None:
    result = check("intro-add-mask", add_with_a_typo, quiet=True)
    assert result.kind == "error"
    lines = result.message.splitlines()
    line = add_with_a_typo.fn.__code__.co_firstlineno + 5
    assert lines[1] == f"Your code stops with an error at line {line}:"
    assert lines[2].strip().startswith("tl.store(out_ptr + offsets, x + yy, mask=mask)")
    assert lines[3] == "NameError: name 'yy' is not defined"
    # Nothing from inside Triton: no traceback, no path of its files.
    assert "Traceback" not in result.message and "triton/" not in result.message


def test_a_launcher_error_points_at_the_launch_line() -> None:
    item = exercise("constexpr-block-size")
    result = check(item.id, item.code("starter"), quiet=True)
    assert "scale_rows_kernel[(n_rows,)](x, out, n_cols, scale" in result.message
    assert result.message.endswith("ValueError: arange's range must be a power of 2")


def test_the_wrong_kind_of_answer_is_named() -> None:
    launcher = check("intro-add-mask", add_grid_rounded_down, quiet=True)
    kernel = check("intro-add-launcher", add_kernel, quiet=True)
    assert (launcher.kind, kernel.kind) == ("wrong_type", "wrong_type")
    assert "`@triton.jit`" in launcher.message and "function" in launcher.message
    assert "launcher" in kernel.message


def test_an_unknown_exercise_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"no exercise is called .intro-nope.*intro-add-mask"):
        check("intro-nope", add_kernel)


def test_diagnoses_follow_the_language(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    result = check("intro-add-mask", add_mask_long, quiet=True)
    assert result.message.startswith("Пока нет.")
    assert "1000 элементов" in result.message
    english = re.compile(r"(?:[A-Za-z][A-Za-z'-]*[ ,;:()]+){5,}[A-Za-z]")
    assert not english.search(result.message), result.message


# ----- bad definitions -----------------------------------------------------------------


def _changed(**changes: Any) -> Exercise:
    return dataclasses.replace(ADD_MASK, **changes)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"id": "Intro_Mask"}, "exercise 'Intro_Mask': the id must be lower-case"),
        ({"id": "tiles-mask"}, "'tiles-mask': the id must start with its lesson's name, 'intro'"),
        ({"kind": "essay"}, "kind 'essay' is not one of plan, fill-in"),
        ({"hints": ("Only one.",)}, "'hints' must be a tuple of 2 to 3 hints"),
        ({"hints": ("a", "b", "c", "d")}, "'hints' must be a tuple of 2 to 3 hints"),
        ({"statement": "  "}, "'statement' must be non-empty text"),
        ({"solution": "def add_kernel(:\n"}, "the solution does not run: SyntaxError"),
        ({"entry": "kernel"}, "the starter defines no 'kernel'"),
        ({"task": None}, "'task' must be a KernelTask, LauncherTask or AnswerTask"),
        ({"kind": "faster"}, "a 'faster' exercise needs a speed_goal, and only it has one"),
        ({"speed_goal": 0.8}, "a 'faster' exercise needs a speed_goal, and only it has one"),
        ({"kind": "faster", "speed_goal": 0.0}, "speed_goal must be a share of the course's"),
        ({"kind": "faster", "speed_goal": True}, "speed_goal must be a share of the course's"),
        ({"kind": "faster", "speed_goal": 0.8, "speed": None},
         "the exercise needs a timed case ('speed')"),
    ],
)  # fmt: skip
def test_a_bad_definition_names_the_exercise_and_the_problem(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ExerciseDefinitionError, match=re.escape(message)):
        _changed(**changes)


def test_a_bad_lesson_names_its_file() -> None:
    from kernels.exercises import validate_lesson

    where = "kernels/exercises/intro.py"
    with pytest.raises(ExerciseDefinitionError, match=r"intro\.py: exercise .intro-add-mask. is "):
        validate_lesson("intro", (ADD_MASK, ADD_MASK), where)
    with pytest.raises(ExerciseDefinitionError, match="belongs to lesson 'intro'"):
        validate_lesson("tiles", (ADD_MASK,), where)
    with pytest.raises(ExerciseDefinitionError, match="EXERCISES #2 is a str"):
        validate_lesson("intro", (ADD_MASK, "text"), where)
    with pytest.raises(ExerciseDefinitionError, match="no exercises for lesson 'nope'"):
        lesson_exercises("nope")


# ----- the directive -------------------------------------------------------------------

CONF = """
extensions = ["myst_parser", "exercise_pages"]
root_doc = "index"
"""


def build(
    project: Path, lesson: str, conf_extra: str = "", before: str = ""
) -> subprocess.CompletedProcess[str]:
    """Build a one-page project that shows ``lesson``'s exercises, after ``before``."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "conf.py").write_text(CONF + conf_extra, encoding="utf-8")
    page = f"# Lesson\n\n{before}## Exercises\n\n```{{exercises}} {lesson}\n```\n"
    (project / "index.md").write_text(page, encoding="utf-8")
    paths = [str(ROOT), str(ROOT / "docs" / "_ext"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "TRITON_INTERPRET": "1"}
    command = [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(project),
               str(project / "_out")]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_the_directive_renders_statement_starter_hints_and_solution(tmp_path: Path) -> None:
    result = build(tmp_path, "tiles")
    assert result.returncode == 0, result.stderr
    html = (tmp_path / "_out" / "index.html").read_text(encoding="utf-8")
    for item in lesson_exercises("tiles"):
        block = html.split(f'id="exercise-{item.id}"')[1].split('id="exercise-')[0]
        assert item.title in block
        # Hints and the solution are closed <details>: no JavaScript needed to open them.
        assert block.count("<details") == len(item.hints) + 1
        assert " open" not in re.findall(r"<details[^>]*>", block)[0]
        assert block.count('class="highlight-python') == 2  # the starter, the solution
    assert "Write it from a plan" in html and "Predict, then run" in html


def test_the_directive_links_the_page_s_notebook_in_a_sentence(tmp_path: Path) -> None:
    result = build(tmp_path, "intro")
    assert result.returncode == 0, result.stderr
    html = " ".join((tmp_path / "_out" / "index.html").read_text(encoding="utf-8").split())
    # The words around the link keep their spaces.
    assert re.search(r'checks each: <a [^>]*href="exercises/intro\.ipynb"[^>]*>download the '
                     r"notebook</a> \(it needs Jupyter", html)  # fmt: skip


def test_the_directive_shows_package_text_as_written(tmp_path: Path) -> None:
    conf = (
        "\nimport dataclasses\nimport kernels.exercises.intro as lesson\n"
        "lesson.EXERCISES = (dataclasses.replace(lesson.ADD_MASK, "
        "statement='*not emphasis* <b>no tag</b> :math:`x` .. note:: `code`'),)\n"
    )
    result = build(tmp_path, "intro", conf)
    assert result.returncode == 0, result.stderr
    html = (tmp_path / "_out" / "index.html").read_text(encoding="utf-8")
    assert "*not emphasis* &lt;b&gt;no tag&lt;/b&gt; :math:" in html
    assert "<em>not emphasis</em>" not in html and "<b>no tag</b>" not in html


def test_a_bad_exercise_stops_the_build_with_its_name(tmp_path: Path) -> None:
    conf = (
        "\nimport kernels.exercises.debugging as lesson\n"
        "lesson.EXERCISES = lesson.EXERCISES + lesson.EXERCISES[:1]\n"
    )
    result = build(tmp_path, "debugging", conf)
    assert result.returncode != 0
    assert "kernels/exercises/debugging.py: exercise 'debugging-off-by-one' is listed twice" in (
        result.stderr
    )
    assert "(used by index)" in result.stderr
    # A located error (the page and the directive's line), not a crash with a traceback.
    assert "Traceback" not in result.stderr and "Please also report" not in result.stderr


def test_an_unknown_lesson_stops_the_build(tmp_path: Path) -> None:
    result = build(tmp_path, "nope")
    assert result.returncode != 0
    assert re.search(r"index\.md:\d+: ERROR: index: exercises 'nope': no such lesson",
                     result.stderr)  # fmt: skip


def test_a_page_id_equal_to_an_exercise_s_anchor_fails_the_build(tmp_path: Path) -> None:
    result = build(tmp_path, "tiles", before="(exercise-tiles-row-sum)=\n## Notes\n\nText.\n\n")
    assert result.returncode != 0
    assert "the anchor 'exercise-tiles-row-sum' of an exercise is also the id of another" in (
        result.stderr
    )


def test_lessons_1_to_4_show_their_exercises_before_the_quiz() -> None:
    pages = sorted((ROOT / "docs" / "lessons").glob("0[1-4]_*.md"))
    for page, lesson in zip(pages, LESSONS, strict=True):
        text = page.read_text(encoding="utf-8")
        assert f"## Exercises\n\n```{{exercises}} {lesson}\n```\n\n## Quiz\n" in text, page.name


def test_the_gallery_pages_show_their_exercises_before_the_quiz() -> None:
    scripts = sorted((ROOT / "gallery").glob("plot_*.py"))
    for script in scripts:
        page = script.stem.split("_", 2)[2]
        text = script.read_text(encoding="utf-8")
        section = f"# Exercises\n# ---------\n#\n# .. exercises:: {page}\n#\n# Quiz\n# ----\n"
        assert section in text, script.name


def test_a_nan_read_from_a_guard_is_told_apart_from_one_computed() -> None:
    # Both put NaN in the output; with 0 in the guards, only the computed one stays.
    read = check("intro-add-stride", add_ignoring_strides, quiet=True)
    computed = check("rms-norm-inverse-root", RMS_NORM_WITHOUT_EPS, quiet=True)
    assert (read.kind, computed.kind) == ("read_outside", "not_finite")
    assert "the kernel computed it" in computed.message

"""Run a learner's answer on an exercise's cases and say, in plain words, what is wrong.

Each case runs on small inputs placed inside *guarded buffers*, as the debugging lesson
shows: around every tensor, and in the gaps of a strided view, the buffer holds a guard
value (NaN around the inputs, :data:`SENTINEL` around the output). Afterwards

- a guard of the output that changed is a write outside the output;
- a NaN in the output where the float64 reference has none is, most likely, a read of a
  guard: a read outside an input; unless the NaN stays when the case runs again with 0
  in the guards, and then the kernel computed it (an overflow, a 0 / 0);
- an output element that still holds :data:`SENTINEL` was never written.

The first failing case is diagnosed, one problem at a time: its first wrong element with
the expected and the actual value, and the pattern of the wrong elements where there is
one (the last, partial tile; every other row; the last element alone). An exception in
the learner's code is shortened to the learner's own line and the error's last words:
no traceback from inside Triton reaches the learner.
"""

import linecache
import math
import traceback
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from triton.runtime.jit import KernelInterface

from ..harness.bench import RELATIVE_TOLERANCE
from ..text.messages import _, number, translated
from ..triton_helpers.runtime import kernel_device
from .model import (
    CONTIGUOUS,
    AnswerTask,
    Case,
    Exercise,
    KernelTask,
    Launch,
    LauncherTask,
    Layout,
)

# The fewest elements of guard before and after every tensor: more than the largest tile
# any case launches, so that a tile that runs past the end stays inside the guard. Farther
# off, the interpreter would read or write memory that is not the checker's (and can
# crash the process).
GUARD = 128
# What the output holds before the kernel runs, in its guards and in itself. Exact in
# float16 and in every integer dtype used, and not a value any case computes.
SENTINEL = -7777
# Relative tolerance for a float dtype that bench.RELATIVE_TOLERANCE does not list.
DEFAULT_TOLERANCE = 1e-5
# Integer results that differ by a multiple of this wrapped around in 32 bits.
WRAP = 2**32


@dataclass(frozen=True)
class CheckResult:
    """The outcome of :func:`check`: ``passed``, the diagnosis ``kind`` (``"passed"``,
    ``"error"``, ``"wrote_outside"``, ``"read_outside"``, ``"not_written"``,
    ``"wrong_values"``, ``"not_finite"``, ``"overflow"``, ``"wrong_type"``, ``"wrong_dtype"``,
    ``"wrong_shape"``, ``"wrong_answer"``, ``"no_answer"``; for a "faster" exercise
    ``"too_slow"`` and ``"not_timed"``), the ``pattern`` of the wrong
    elements where one was found, the ``case`` that failed and the ``message`` printed."""

    exercise_id: str
    passed: bool
    kind: str
    message: str
    pattern: str | None = None
    case: str | None = None
    # GB/s of the answer, the course's kernel, PyTorch and a copy, when it was timed
    # (check(..., measure=True) on a GPU).
    rates: Mapping[str, float] | None = None

    def __str__(self) -> str:
        return self.message


class _Passed(Exception):
    """A pass with a message of its own."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Failure(Exception):
    """A diagnosis, raised from deep in a check to end it."""

    def __init__(self, kind: str, lines: list[str], pattern: str | None = None) -> None:
        super().__init__(kind)
        self.kind, self.lines, self.pattern = kind, lines, pattern
        self.case: Case | None = None


# ----- guarded buffers ---------------------------------------------------------------


def _span(shape: tuple[int, ...], layout: Layout) -> int:
    """How many elements of memory a view of ``shape`` laid out as ``layout`` spans."""
    if len(shape) == 1:
        return shape[0] * layout.step
    rows, cols = shape
    outer, inner = (cols, rows) if layout.transposed else (rows, cols)
    return outer * (inner + layout.pad_cols)


def _guard(shape: tuple[int, ...], layout: Layout) -> int:
    """Elements of guard on each side of a view: ``GUARD``, or twice the view's span if
    larger, so that a whole tile of rows past the last (a missing row mask) still lands
    in the guard."""
    return max(GUARD, 2 * _span(shape, layout))


def _place(
    shape: tuple[int, ...], dtype: torch.dtype, layout: Layout, fill: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """A buffer full of ``fill`` and a view of ``shape`` inside it, laid out as ``layout``
    says, with :func:`_guard` elements of buffer before and after it."""
    size = _span(shape, layout) + 2 * _guard(shape, layout)
    buffer = torch.full((size,), fill, dtype=dtype, device=kernel_device())
    return buffer, _view_in(buffer, shape, layout)


def _view_in(
    buffer: torch.Tensor, shape: tuple[int, ...], layout: Layout
) -> torch.Tensor:
    """The view of ``shape`` laid out as ``layout`` in a buffer made by ``_place``."""
    guard = _guard(shape, layout)
    flat = buffer[guard : guard + _span(shape, layout)]
    if len(shape) == 1:
        return flat[:: layout.step]
    rows, cols = shape
    outer, inner = (cols, rows) if layout.transposed else (rows, cols)
    view = flat.view(outer, inner + layout.pad_cols)[:, :inner]
    return view.t() if layout.transposed else view


def _inputs(case: Case, guard: float = math.nan) -> dict[str, torch.Tensor]:
    """The case's inputs placed in guarded buffers whose float guards hold ``guard``."""
    placed = {}
    for name, values in case.inputs.items():
        dtype = case.dtype if values.is_floating_point() else values.dtype
        fill = guard if dtype.is_floating_point else 0
        _, view = _place(
            tuple(values.shape), dtype, case.layouts.get(name, CONTIGUOUS), fill
        )
        view.copy_(values)
        placed[name] = view
    return placed


def _where_outside(index: int, shape: tuple[int, ...], layout: Layout) -> str:
    """Where the buffer element ``index`` lies relative to the view placed by ``_place``."""
    guard = _guard(shape, layout)
    if index < guard:
        return _("before its first element")
    offset = index - guard
    if len(shape) == 1:
        if offset >= shape[0] * layout.step:
            return _("past its last element")
        return _("between its elements (it is a strided view)")
    rows, cols = shape
    outer, inner = (cols, rows) if layout.transposed else (rows, cols)
    line = offset // (inner + layout.pad_cols)
    if line >= outer:
        return (
            _("past its last row")
            if not layout.transposed
            else _("past its last column")
        )
    if layout.transposed:
        return _("in column {col}, below its last row").format(col=line)
    return _("in row {row}, right of its last column").format(row=line)


# ----- errors ------------------------------------------------------------------------


def _code_files(submission: object) -> set[str]:
    """The source files of the learner's code, whose lines a diagnosis may quote."""
    function = getattr(submission, "fn", submission)
    while isinstance(function, KernelInterface) and hasattr(function, "fn"):
        function = function.fn  # an autotuned or heuristic kernel wraps the kernel
    code = getattr(function, "__code__", None)
    return {code.co_filename} if code is not None else set()


def _short_error(error: BaseException, files: set[str]) -> list[str]:
    """The learner's line where ``error`` happened and the error's own words, without
    the frames inside Triton or PyTorch. Triton's interpreter wraps an error in its own;
    the original is the last one of the chain of causes."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    root = chain[-1]
    words = str(root).strip().splitlines()
    # A compiler's error ends with the source line, a caret and the message.
    text = " ".join(line.strip() for line in words[-3:]) if words else ""
    described = f"{type(root).__name__}: {text}" if text else type(root).__name__
    for exception in reversed(chain):
        for frame, line in reversed(list(traceback.walk_tb(exception.__traceback__))):
            filename = frame.f_code.co_filename
            if filename in files:
                source = linecache.getline(filename, line).strip()
                return [
                    _("Your code stops with an error at line {line}:").format(
                        line=line
                    ),
                    f"    {source}",
                    f"{described}",
                ]
    return [_("Your code stops with an error:"), described]


# ----- comparison --------------------------------------------------------------------


def _format_value(value: float | int) -> str:
    if isinstance(value, float) and not math.isnan(value) and not math.isinf(value):
        return number(f"{value:.6g}")
    return str(value)


def _format_index(index: tuple[int, ...]) -> str:
    return str(index[0]) if len(index) == 1 else str(index)


def _tolerance(dtype: torch.dtype) -> float:
    return RELATIVE_TOLERANCE.get(dtype, DEFAULT_TOLERANCE)


def _wrong(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Where ``actual`` differs from ``expected``: beyond the dtype's tolerance for float
    results (NaN equals NaN, infinity infinity of its sign), exactly for integers."""
    if not actual.is_floating_point():
        return actual.long() != expected.long()
    tolerance = _tolerance(actual.dtype)
    finite = expected[torch.isfinite(expected)]
    scale = max(1.0, finite.abs().max().item()) if finite.numel() else 1.0
    close = torch.isclose(
        actual.double(),
        expected.double(),
        rtol=tolerance,
        atol=tolerance * scale,
        equal_nan=True,
    )
    return ~close


def _run_of(indices: list[int]) -> str:
    shown = ", ".join(str(i) for i in indices[:3])
    return f"{shown}, ..." if len(indices) > 3 else shown


def _pattern(
    wrong: torch.Tensor, tile: tuple[int, ...], unwritten: bool
) -> tuple[str, str] | None:
    """The pattern of the wrong elements, as (name, sentence), where one is plain. A 1-D
    output with a tile of one element has one value per row (a program per row)."""
    if wrong.all():
        if unwritten:
            return "nothing_written", _(
                "No element was written: is there a `tl.store`, with a mask that is true "
                "somewhere, and does the grid launch any program?"
            )
        return "all", _(
            "Every element is wrong, so look at the computation itself first."
        )
    if wrong.dim() == 2 or tile == (1,):
        return _row_pattern(wrong, tile)
    n = wrong.numel()
    bad = wrong.nonzero().flatten().tolist()
    if bad == [n - 1]:
        return "boundary", _(
            "Only the last element is wrong: an off-by-one at the boundary (compare `<` "
            "with `<=`, and `n` with `n - 1`)."
        )
    # Whole tiles at the end left unwritten: their programs never ran.
    if (
        unwritten
        and bad == list(range(bad[0], n))
        and (not tile or bad[0] % tile[0] == 0)
    ):
        return "tail", _(
            "Elements {start} to {end}, up to the end, were never written: the grid "
            "launches too few programs for {n} elements (round the division up, with "
            "`triton.cdiv`)."
        ).format(start=bad[0], end=n - 1, n=n)
    if tile and n % tile[0] and bad[0] >= n - n % tile[0]:
        return "last_partial_tile", _(
            "Only the last, partial tile is wrong (elements {start} to {end}): look at "
            "what the mask does there."
        ).format(start=n - n % tile[0], end=n - 1)
    if len(bad) > 1 and len({i % 2 for i in bad}) == 1 and len(bad) >= (n - 1) // 2:
        return "every_other", _(
            "Every other element is wrong ({which}): look at the stride of the inputs, "
            "which is not 1 in this case."
        ).format(which=_run_of(bad))
    return None


def _row_pattern(wrong: torch.Tensor, tile: tuple[int, ...]) -> tuple[str, str] | None:
    """The pattern of the wrong rows of a 2-D output, or of a 1-D output of one value per
    row; and for 2-D tiles, of the wrong tiles."""
    by_row = wrong.any(dim=1) if wrong.dim() == 2 else wrong
    rows = by_row.nonzero().flatten().tolist()
    n_rows = by_row.numel()
    if n_rows > 2 and rows == list(range(1, n_rows)):
        return "rows_after_first", _(
            "Row 0 is right and every later row is wrong: look at where a row starts (its stride)."
        )
    if (
        len(rows) > 1
        and len({r % 2 for r in rows}) == 1
        and len(rows) >= (n_rows - 1) // 2
    ):
        return "every_other_row", _(
            "Every other row is wrong (rows {which}): look at how a program finds its rows."
        ).format(which=_run_of(rows))
    if wrong.dim() == 1:
        return None
    cols = wrong.any(dim=0).nonzero().flatten().tolist()
    n_cols = wrong.shape[1]
    # From column 0, it is not the ends of the rows but the whole of them.
    if len(rows) == n_rows and cols[0] > 0 and cols == list(range(cols[0], n_cols)):
        return "row_ends", _(
            "In every row, columns {start} to {end} are wrong: the tile does not reach the "
            "end of the row."
        ).format(start=cols[0], end=n_cols - 1)
    if len(tile) == 2:
        block_rows, block_cols = tile
        # Only where there is a whole tile before it: a matrix smaller than one tile
        # is all last tile, and saying so would point at the mask for nothing.
        if (
            n_rows > block_rows
            and n_rows % block_rows
            and rows[0] >= n_rows - n_rows % block_rows
        ):
            return "last_partial_tile", _(
                "Only the last, partial tile of rows is wrong (rows {start} to {end}): "
                "look at the mask of the rows."
            ).format(start=n_rows - n_rows % block_rows, end=n_rows - 1)
        if (
            n_cols > block_cols
            and n_cols % block_cols
            and cols[0] >= n_cols - n_cols % block_cols
        ):
            return "last_partial_tile", _(
                "Only the last, partial tile of columns is wrong (columns {start} to "
                "{end}): look at the mask of the columns."
            ).format(start=n_cols - n_cols % block_cols, end=n_cols - 1)
    return None


def _compare(
    actual: torch.Tensor,
    expected: torch.Tensor,
    case: Case,
    *,
    own_output: bool = False,
) -> None:
    """Raise a :class:`_Failure` where ``actual`` is not ``expected``. ``own_output``: the
    learner's launcher allocated the output, under :func:`_filled_allocations`, so an
    element never written holds NaN (and the course's kernel it launches reads no guard)."""
    actual = actual.cpu()
    wrong = _wrong(actual, expected)
    if not wrong.any():
        return
    first = tuple(int(i) for i in wrong.nonzero()[0])
    got, want = actual[first].item(), expected[first].item()
    if own_output and actual.is_floating_point():
        unwritten_at = torch.isnan(actual) & ~torch.isnan(expected)
    elif actual.is_floating_point():
        sentinel = float(torch.tensor(SENTINEL, dtype=actual.dtype))
        unwritten_at = (actual.double() == sentinel) & (expected != sentinel)
    else:
        unwritten_at = (actual.long() == SENTINEL) & (expected != SENTINEL)
    unwritten = bool((unwritten_at | ~wrong).all())
    lines = [
        _(
            "Wrong values: {count} of {total}. The first is at index {index}: expected "
            "{expected}, got {actual}."
        ).format(
            count=int(wrong.sum()),
            total=wrong.numel(),
            index=_format_index(first),
            expected=_format_value(want),
            actual=_format_value(got),
        )
    ]
    kind = "wrong_values"
    if unwritten:
        kind = "not_written"
        lines.append(
            _(
                "The wrong elements still hold what the output held before the "
                "launch: no program wrote them."
            )
        )
    elif not actual.is_floating_point() and bool(
        ((actual.long() - expected.long())[wrong] % WRAP == 0).all()
    ):
        kind = "overflow"
        lines.append(
            _(
                "Each wrong value differs from the right one by a multiple of 2**32: the "
                "computation wrapped around in 32-bit integers. Widen a factor to int64 "
                "before multiplying."
            )
        )
    elif (
        actual.is_floating_point()
        and not own_output
        and bool((torch.isnan(actual) & ~torch.isnan(expected)).any())
    ):
        kind = "read_outside"
        lines.append(
            _(
                "The output holds NaN where the right answer has none. Around the inputs, and "
                "between the elements of a strided input, the checker put NaN: the kernel "
                "most likely read outside an input."
            )
        )
    # A wrapped integer tells its own story; the indices it happens at tell none.
    found = None if kind == "overflow" else _pattern(wrong, case.tile, unwritten)
    if found:
        lines.append(found[1])
    raise _Failure(kind, lines, found[0] if found else None)


# ----- the three kinds of task -------------------------------------------------------


def _check_kernel(task: KernelTask, kernel: object, files: set[str]) -> None:
    """Run ``kernel`` on every case; raise a :class:`_Failure` at the first that fails."""
    if not (isinstance(kernel, KernelInterface) and hasattr(kernel, "fn")):
        raise _Failure(
            "wrong_type",
            [
                _(
                    "This exercise checks a kernel: pass the function decorated with `@triton.jit` "
                    "itself (not a call of it, nor a launcher). Got: {what}."
                ).format(what=type(kernel).__name__)
            ],
        )
    for case in task.cases:
        with _failing_case(case):
            layout = case.layouts.get("out", CONTIGUOUS)
            buffer, out = _place(case.out_shape, case.result_dtype, layout, SENTINEL)
            try:
                with _quiet_arithmetic():
                    task.launch(kernel, Launch(_inputs(case), out, case.params))
            except Exception as error:
                raise _Failure("error", _short_error(error, files)) from None
            inside = torch.zeros_like(buffer, dtype=torch.bool)
            _view_in(inside, case.out_shape, layout).fill_(True)
            outside = (buffer != SENTINEL) & ~inside
            if outside.any():
                index = int(outside.nonzero()[0])
                raise _Failure(
                    "wrote_outside",
                    [
                        _(
                            "The kernel wrote outside the output, first {where} (elements changed "
                            "outside: {count}). Out there is other memory: check the mask of every "
                            "`tl.store`."
                        ).format(
                            count=int(outside.sum()),
                            where=_where_outside(index, case.out_shape, layout),
                        )
                    ],
                )
            expected = task.reference(case)
            try:
                _compare(out, expected, case)
            except _Failure as failure:
                if failure.kind == "read_outside" and _nan_without_guards(
                    task, kernel, case, expected
                ):
                    failure.kind = "not_finite"
                    failure.lines[1] = _(
                        "The output holds NaN where the right answer has none, and still "
                        "does when the checker puts 0 around the inputs instead of NaN: the "
                        "kernel computed it. An intermediate value most likely overflowed "
                        "(`exp` of a large number is infinity, and infinity minus, times 0 "
                        "or over infinity is NaN), or a division had 0 below."
                    )
                raise


def _nan_without_guards(
    task: KernelTask, kernel: object, case: Case, expected: torch.Tensor
) -> bool:
    """Whether ``kernel`` still writes NaN where ``expected`` has none when the inputs'
    guards hold 0 instead of NaN: then it computed the NaN rather than read it."""
    _, out = _place(
        case.out_shape, case.result_dtype, case.layouts.get("out", CONTIGUOUS), SENTINEL
    )
    try:
        with _quiet_arithmetic():
            task.launch(kernel, Launch(_inputs(case, guard=0.0), out, case.params))
    except Exception:
        return False
    actual = out.cpu()
    return bool((torch.isnan(actual) & ~torch.isnan(expected)).any())


@contextmanager
def _quiet_arithmetic() -> Iterator[None]:
    """Silence NumPy's warnings of an overflow or a 0 / 0 in the interpreter: the
    diagnosis says what they mean, at the learner's level, and they would come first."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@contextmanager
def _failing_case(case: Case) -> Iterator[None]:
    """Name ``case`` in a failure raised inside."""
    try:
        yield
    except _Failure as failure:
        failure.case = case
        raise


def _check_launcher(task: LauncherTask, launcher: object, files: set[str]) -> None:
    """Call ``launcher`` on every case; raise a :class:`_Failure` at the first that fails."""
    if isinstance(launcher, KernelInterface) or not callable(launcher):
        raise _Failure(
            "wrong_type",
            [
                _(
                    "This exercise checks a launcher: pass the Python function that allocates the "
                    "output and launches the kernel. Got: {what}."
                ).format(what=type(launcher).__name__)
            ],
        )
    for case in task.cases:
        with _failing_case(case):
            try:
                with _filled_allocations():
                    out = task.call(launcher, _inputs(case), case.params)
            except Exception as error:
                raise _Failure("error", _short_error(error, files)) from None
            expected = task.reference(case)
            if not isinstance(out, torch.Tensor):
                raise _Failure(
                    "wrong_type",
                    [
                        _(
                            "The launcher returned {what}, not a tensor: return the output tensor."
                        ).format(what=type(out).__name__)
                    ],
                )
            if out.dtype != case.result_dtype:
                raise _Failure(
                    "wrong_dtype",
                    [
                        _(
                            "The launcher returned a tensor of dtype {got}; for inputs of dtype "
                            "{dtype} the result must be {want}: allocate it with the input's dtype."
                        ).format(
                            got=_dtype(out.dtype),
                            dtype=_dtype(case.dtype),
                            want=_dtype(case.result_dtype),
                        )
                    ],
                )
            if tuple(out.shape) != tuple(expected.shape):
                raise _Failure(
                    "wrong_shape",
                    [
                        _(
                            "The launcher returned a tensor of shape {got}; the result must have "
                            "shape {want}."
                        ).format(got=tuple(out.shape), want=tuple(expected.shape))
                    ],
                )
            _compare(out, expected, case, own_output=True)


@contextmanager
def _filled_allocations() -> Iterator[None]:
    """Make ``torch.empty`` fill what it allocates (NaN for floats), as PyTorch does in
    its deterministic mode, so that an output element a launcher never wrote is NaN, not
    whatever the memory held before (which made the diagnosis change from run to run)."""
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = fill


def _dtype(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check_answer(task: AnswerTask, answer: object) -> None:
    if (
        answer is None
        or answer is Ellipsis
        or (isinstance(answer, tuple | list) and Ellipsis in answer)
    ):
        no_answer = _(
            "There is no prediction yet: write your answer in place of `...`, then check it."
        )
        raise _Failure("no_answer", [no_answer])
    actual = task.run()
    if _same(answer, actual):
        raise _Passed(_("Right: that is what the launch gives."))
    raise _Failure(
        "wrong_answer",
        [
            _(
                "You predicted {answer}; running the kernel gives {actual}. Read the solution's "
                "explanation to see why."
            ).format(answer=answer, actual=actual)
        ],
    )


def _same(answer: object, actual: object) -> bool:
    if isinstance(actual, tuple):
        return (
            isinstance(answer, tuple | list)
            and len(answer) == len(actual)
            and all(_same(a, b) for a, b in zip(answer, actual, strict=True))
        )
    if isinstance(answer, bool) or not isinstance(answer, int | float):
        return False
    return math.isclose(answer, actual, rel_tol=1e-9)


# ----- the entry point ---------------------------------------------------------------


def run_check(
    exercise: Exercise, submission: object, *, quiet: bool = False
) -> CheckResult:
    """Check ``submission`` against ``exercise``; print the diagnosis unless ``quiet``."""
    files = _code_files(submission) | {
        exercise.source_name("starter"),
        exercise.source_name("solution"),
    }
    task = exercise.task
    try:
        if isinstance(task, KernelTask):
            _check_kernel(task, submission, files)
        elif isinstance(task, LauncherTask):
            _check_launcher(task, submission, files)
        else:
            _check_answer(task, submission)
    except _Failure as failure:
        case = failure.case
        lines = [_("Not yet.")]
        if case is not None:
            lines[0] += " " + _("In the case \u201c{case}\u201d:").format(
                case=translated(case.name)
            )
        lines += failure.lines
        if (
            case is not None
            and case.note
            and failure.kind not in ("error", "wrong_type")
        ):
            lines.append(translated(case.note))
        result = CheckResult(
            exercise.id,
            False,
            failure.kind,
            "\n".join(lines),
            failure.pattern,
            case.name if case else None,
        )
    except _Passed as passed:
        result = CheckResult(exercise.id, True, "passed", passed.message)
    else:
        result = CheckResult(
            exercise.id, True, "passed", _("Passed: every case is right.")
        )
    if not quiet:
        print(result.message)
    return result

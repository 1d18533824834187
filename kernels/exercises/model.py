"""What an exercise is: its text, its code and how it is checked, validated when defined.

An exercise holds its statement, starter code, hints and reference solution once; the
pages render them (``docs/_ext/exercise_pages.py``) and :func:`kernels.exercises.check`
checks a learner's answer against the same definition. Texts are English, marked with
:func:`N_` and translated where they are shown (``kernels/text/locales/<language>.po``).

The code of a starter and of a solution is Python source text, run once here into a
namespace of its own, so that what the page shows is exactly what the checker runs. The
source is registered with :mod:`linecache` under a name such as
``<exercise intro-add-mask: solution>``, because Triton reads a kernel's source to run
it and because a diagnosis quotes the learner's line from it.
"""

import linecache
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import triton
import triton.language as tl

ID_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# What an exercise asks for, as the page labels it. A "faster" exercise starts from a
# right kernel or launcher and is passed by speed: only a GPU can grade it.
KINDS = ("plan", "fill-in", "find-the-bug", "predict", "faster")
# From a nudge to almost the answer: fewer gives no ladder, more gives the answer away.
MIN_HINTS, MAX_HINTS = 2, 3
# Names a starter or solution may use without importing them, as the lessons' cells do.
PRELUDE: dict[str, Any] = {"torch": torch, "triton": triton, "tl": tl}


def N_(message: str) -> str:
    """Mark ``message`` for translation without translating it now: the language is the
    one of the place that shows it (a page of an edition, a learner's session), which is
    not known when the exercise is defined. ``_()`` translates it there."""
    return message


class ExerciseDefinitionError(ValueError):
    """A malformed exercise; the message names the exercise and what is wrong with it."""


@dataclass(frozen=True)
class Layout:
    """Where a tensor's elements sit in memory, inside a guarded buffer.

    ``step``: a 1-D view of every ``step``-th element; ``pad_cols``: a 2-D view whose rows
    are ``pad_cols`` elements longer in memory than the matrix is wide; ``transposed``: a
    2-D view stored column by column. The gaps hold the guard value too, so a kernel that
    ignores a stride reads or writes a guard.
    """

    step: int = 1
    pad_cols: int = 0
    transposed: bool = False


CONTIGUOUS = Layout()


@dataclass(frozen=True)
class Case:
    """One input on which a submission runs.

    ``name`` says what the case tests (marked :func:`N_`; the diagnosis names it).
    ``inputs`` are the values, on the CPU: floating ones are given the case's ``dtype``,
    the others keep theirs. ``layouts`` places an input or the output (``"out"``) other
    than contiguously. ``params`` are the other arguments of the launch. ``tile`` is the
    tile of the launch along the output's dimensions, for the diagnosis's patterns.
    ``note``, when set, is said if this case fails: the mistake it was built to catch.
    """

    name: str
    inputs: Mapping[str, torch.Tensor]
    out_shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32
    out_dtype: torch.dtype | None = None
    layouts: Mapping[str, Layout] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    tile: tuple[int, ...] = ()
    note: str | None = None

    @property
    def result_dtype(self) -> torch.dtype:
        """The dtype of the output."""
        return self.out_dtype or self.dtype

    def value(self, name: str) -> torch.Tensor:
        """Input ``name`` as the kernel sees it, in float64 (int64 for integers): a
        reference computed from it judges the kernel, not the rounding to ``dtype``."""
        values = self.inputs[name]
        if values.is_floating_point():
            return values.to(self.dtype).double()
        return values.long()


@dataclass(frozen=True)
class Launch:
    """What a task's ``launch`` gets: the inputs and the output as the kernel sees them
    (views inside guarded buffers, on the kernel device) and the case's parameters."""

    inputs: Mapping[str, torch.Tensor]
    out: torch.Tensor
    params: Mapping[str, Any]


@dataclass(frozen=True)
class KernelTask:
    """Check a ``@triton.jit`` kernel: the harness places every case's tensors inside
    guarded buffers, ``launch(kernel, launch)`` runs it (the grid, the arguments), and
    the output is compared with ``reference(case)``, computed in float64 on the CPU."""

    cases: tuple[Case, ...]
    launch: Callable[[Any, Launch], None]
    reference: Callable[[Case], torch.Tensor]


@dataclass(frozen=True)
class LauncherTask:
    """Check a launcher, a Python function that allocates its output and launches a
    kernel: ``call(launcher, inputs, params)`` calls it and returns what it returned,
    compared (type, dtype, shape, values) with ``reference(case)``."""

    cases: tuple[Case, ...]
    call: Callable[
        [Callable[..., Any], Mapping[str, torch.Tensor], Mapping[str, Any]], Any
    ]
    reference: Callable[[Case], torch.Tensor]


@dataclass(frozen=True)
class AnswerTask:
    """Check a prediction: ``run()`` runs the kernel the exercise shows and returns what
    it gives, to which the learner's answer must be equal (a number or a tuple)."""

    run: Callable[[], Any]


Task = KernelTask | LauncherTask | AnswerTask


@dataclass(frozen=True)
class Speed:
    """How ``check(..., measure=True)`` times a right answer on a GPU: on one large case,
    the answer launched as its task launches it, against the course's own launcher and
    PyTorch doing the same work, each in kernel time (see :mod:`kernels.exercises.speed`).

    ``name`` says what the case is (marked :func:`N_`); ``make_inputs(device)`` makes its
    inputs on ``device``; the output is ``out_shape`` of ``out_dtype``; ``params`` are the
    launch's other arguments, as a case's. ``course(inputs)`` and ``pytorch(inputs)``
    compute the same output. The rates count the bytes of the inputs and the output once
    each, the least the work must move; the GPU's copy rate, measured in the same run,
    is the ceiling they are compared with.
    """

    name: str
    make_inputs: Callable[[torch.device], Mapping[str, torch.Tensor]]
    out_shape: tuple[int, ...]
    out_dtype: torch.dtype
    course: Callable[[Mapping[str, torch.Tensor]], Any]
    pytorch: Callable[[Mapping[str, torch.Tensor]], Any]
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Exercise:
    """One exercise of a lesson.

    ``entry`` is the name that the starter and the solution define: the kernel or the
    launcher, or for a prediction the answer (the starter's holds ``...``).
    ``names`` are more names their code may use without importing them (a kernel of the
    course, as the installed package names it differently from a clone). ``starter_diagnosis`` is
    the diagnosis kind (see :mod:`kernels.exercises.checker`) that the unchanged starter
    gets: a test holds every exercise to it, so that a starter teaches what it was meant to.
    ``speed``, for a kernel or a launcher, says how ``check(..., measure=True)`` times it.
    ``speed_goal``, for a "faster" exercise only (and required there), is the share of the
    course's rate on that timed case that a right answer must reach to pass.
    """

    id: str
    lesson: str
    kind: str
    title: str
    statement: str
    starter: str
    hints: tuple[str, ...]
    solution: str
    explanation: str
    entry: str
    task: Task
    starter_diagnosis: str
    names: Mapping[str, Any] = field(default_factory=dict)
    speed: Speed | None = None
    speed_goal: float | None = None

    def __post_init__(self) -> None:
        where = f"exercise {self.id!r}" if isinstance(self.id, str) else "an exercise"
        if not isinstance(self.id, str) or not ID_PATTERN.fullmatch(self.id):
            raise ExerciseDefinitionError(
                f"{where}: the id must be lower-case letters, digits and single hyphens "
                "(such as 'intro-add-mask')"
            )
        prefix = f"{self.lesson}".replace("_", "-")
        if not self.id.startswith(f"{prefix}-"):
            raise ExerciseDefinitionError(
                f"{where}: the id must start with its lesson's name, {prefix!r} (hyphens for "
                "underscores), and a hyphen, so that ids are unique across lessons"
            )
        if self.kind not in KINDS:
            raise ExerciseDefinitionError(
                f"{where}: kind {self.kind!r} is not one of {', '.join(KINDS)}"
            )
        for name in (
            "title",
            "statement",
            "explanation",
            "starter",
            "solution",
            "entry",
        ):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ExerciseDefinitionError(
                    f"{where}: {name!r} must be non-empty text"
                )
        if (
            not isinstance(self.hints, tuple)
            or not MIN_HINTS <= len(self.hints) <= MAX_HINTS
        ):
            raise ExerciseDefinitionError(
                f"{where}: 'hints' must be a tuple of {MIN_HINTS} to {MAX_HINTS} hints, "
                "from a nudge to almost the answer"
            )
        if not all(isinstance(hint, str) and hint.strip() for hint in self.hints):
            raise ExerciseDefinitionError(f"{where}: every hint must be non-empty text")
        if not isinstance(self.task, KernelTask | LauncherTask | AnswerTask):
            raise ExerciseDefinitionError(
                f"{where}: 'task' must be a KernelTask, LauncherTask or AnswerTask, "
                f"got {type(self.task).__name__}"
            )
        if isinstance(self.task, KernelTask | LauncherTask) and not self.task.cases:
            raise ExerciseDefinitionError(f"{where}: the task has no cases to check")
        if self.speed is not None and (
            not isinstance(self.speed, Speed) or isinstance(self.task, AnswerTask)
        ):
            raise ExerciseDefinitionError(
                f"{where}: 'speed' must be a Speed, and only a kernel or a launcher is timed"
            )
        if (self.kind == "faster") != (self.speed_goal is not None):
            raise ExerciseDefinitionError(
                f"{where}: a 'faster' exercise needs a speed_goal, and only it has one"
            )
        if self.speed_goal is not None and (
            self.speed is None
            or isinstance(self.speed_goal, bool)
            or not isinstance(self.speed_goal, int | float)
            or not 0 < self.speed_goal <= 2
        ):
            raise ExerciseDefinitionError(
                f"{where}: speed_goal must be a share of the course's rate, above 0 and at "
                "most 2, and the exercise needs a timed case ('speed') to reach it on"
            )
        # Both run now, so that a broken definition fails on import, not on a page.
        self.code("starter")
        self.code("solution")

    def source_name(self, which: str) -> str:
        """The file name under which the code ``which`` (starter or solution) runs."""
        return f"<exercise {self.id}: {which}>"

    def code(self, which: str) -> Any:
        """What the starter or the solution (``which``) defines as ``entry``: a kernel, a
        launcher, or a predicted value."""
        where = f"exercise {self.id!r}: the {which}"
        value = _run_source(
            getattr(self, which),
            self.source_name(which),
            self.entry,
            {**PRELUDE, **self.names},
            where,
        )
        if not isinstance(self.task, AnswerTask) and not callable(value):
            raise ExerciseDefinitionError(f"{where}: {self.entry!r} is not a function")
        return value


_compiled: dict[tuple[str, str, str], Any] = {}


def _run_source(
    source: str, filename: str, entry: str, names: dict[str, Any], where: str
) -> Any:
    """Run ``source`` under ``filename`` with ``names`` and return what it calls ``entry``."""
    key = (filename, source, entry)
    if key in _compiled:
        return _compiled[key]
    lines = source.splitlines(keepends=True)
    # No modification time: linecache.checkcache() then never drops the entry.
    linecache.cache[filename] = (len(source), None, lines, filename)
    namespace = dict(names)
    try:
        exec(compile(source, filename, "exec"), namespace)  # the package's own code
    except Exception as error:
        raise ExerciseDefinitionError(
            f"{where} does not run: {type(error).__name__}: {error}"
        ) from None
    if entry not in namespace:
        raise ExerciseDefinitionError(f"{where} defines no {entry!r}")
    _compiled[key] = namespace[entry]
    return namespace[entry]

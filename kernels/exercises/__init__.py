"""Exercises for the lessons, checked in Triton's interpreter.

Each lesson, and each page of the gallery, has a module here named as its quiz bank
(``intro`` ... ``debugging`` for the lessons, ``vector_add`` ... ``flash_attention`` for
the gallery) that lists its :class:`~kernels.exercises.model.Exercise` values in
``EXERCISES``. The page shows them (statement, starter code, hints, solution) with the
``{exercises}`` directive; a learner checks an answer with::

    from kernels.exercises import check

    check("intro-add-mask", add_kernel)   # prints a diagnosis, returns a CheckResult

No kernel module imports this package: the exercises' code is no part of any benchmark's
fingerprint.
"""

import dataclasses
import importlib
import pkgutil

from ..text.messages import _, number
from ..triton_helpers.checks import check_bool
from . import speed
from .checker import CheckResult, run_check
from .model import Exercise, ExerciseDefinitionError

__all__ = [
    "GALLERY",
    "LESSONS",
    "PAGES",
    "CheckResult",
    "Exercise",
    "ExerciseDefinitionError",
    "check",
    "exercise",
    "lesson_exercises",
]

# The lessons (docs/lessons/) that have exercises, by the name of their quiz bank, in
# course order.
LESSONS = ("intro", "constexpr", "tiles", "debugging")
# This package's own machinery; every other module here holds a page's exercises.
_MACHINERY = frozenset({"checker", "model", "speed"})
# The gallery's pages (gallery/plot_NN_*.py) that have exercises, found as the modules
# of this package named as their banks, in order of name: a new page's module is found
# here, and no list needs an edit.
GALLERY = tuple(
    sorted(
        info.name
        for info in pkgutil.iter_modules(__path__)
        if info.name not in _MACHINERY and info.name not in LESSONS
    )
)
# Every page with exercises: the one list that lookups and the directive go by.
PAGES = LESSONS + GALLERY


def id_prefix(lesson: str) -> str:
    """What the id of every exercise of ``lesson`` starts with: its name with hyphens for
    underscores (ids are lower-case words joined by hyphens), then a hyphen."""
    return lesson.replace("_", "-") + "-"


def lesson_exercises(lesson: str) -> tuple[Exercise, ...]:
    """The exercises of ``lesson``, in the order its page shows them.

    Raises :class:`ExerciseDefinitionError`, naming the module, for an unknown lesson or
    a module whose exercises are malformed (one that does not run, a repeated id, an
    exercise filed under another lesson).
    """
    if lesson not in PAGES:
        raise ExerciseDefinitionError(
            f"no exercises for lesson {lesson!r}; lessons with exercises: {', '.join(PAGES)}"
        )
    module_name = f"{__name__}.{lesson}"
    where = f"{module_name.replace('.', '/')}.py"
    try:
        module = importlib.import_module(module_name)
    except ExerciseDefinitionError as error:
        raise ExerciseDefinitionError(f"{where}: {error}") from None
    return validate_lesson(lesson, getattr(module, "EXERCISES", None), where)


def validate_lesson(lesson: str, exercises: object, where: str) -> tuple[Exercise, ...]:
    """Check a lesson's ``EXERCISES`` (found in ``where``) and return it."""
    if not isinstance(exercises, tuple) or not exercises:
        raise ExerciseDefinitionError(f"{where}: EXERCISES must be a non-empty tuple")
    seen: set[str] = set()
    for position, item in enumerate(exercises, 1):
        if not isinstance(item, Exercise):
            raise ExerciseDefinitionError(
                f"{where}: EXERCISES #{position} is a {type(item).__name__}, not an Exercise"
            )
        if item.lesson != lesson:
            raise ExerciseDefinitionError(
                f"{where}: exercise {item.id!r} says it belongs to lesson {item.lesson!r}"
            )
        if item.id in seen:
            raise ExerciseDefinitionError(
                f"{where}: exercise {item.id!r} is listed twice"
            )
        seen.add(item.id)
    return exercises


def exercise(exercise_id: str) -> Exercise:
    """The exercise called ``exercise_id`` (its lesson is the one whose name begins it)."""
    for lesson in PAGES:
        if exercise_id.startswith(id_prefix(lesson)):
            for item in lesson_exercises(lesson):
                if item.id == exercise_id:
                    return item
    known = [item.id for name in PAGES for item in lesson_exercises(name)]
    raise ValueError(
        f"no exercise is called {exercise_id!r}; the exercises: {', '.join(known)}"
    )


def check(
    exercise_id: str, submission: object, *, quiet: bool = False, measure: bool = False
) -> CheckResult:
    """Check a learner's answer to exercise ``exercise_id`` and print what is wrong.

    ``submission`` is what the exercise asks for: a ``@triton.jit`` kernel, a launcher
    function, or a predicted value. It runs on small inputs that include the lesson's
    edge cases and is compared with a float64 reference on the CPU; the diagnosis (the
    first wrong element, the pattern of the wrong ones, a write outside the output, an
    error at the learner's line) is printed, unless ``quiet``, and returned in a
    :class:`CheckResult`.

    ``measure=True`` also times a right answer on the GPU, on a large case, against the
    course's kernel and PyTorch's, and prints the rates, the share of the GPU's copy rate
    and the ratios (:mod:`kernels.exercises.speed`); without a GPU, or in Triton's
    interpreter, it says so, and the check stands.

    A "faster" exercise is passed by speed: a right answer is always timed where a GPU
    can time it, and passes at its ``speed_goal`` of the course's rate (else its kind is
    ``"too_slow"``); where none can, its kind is ``"not_timed"`` and it has not passed.
    """
    measure = check_bool("measure", measure)
    item = exercise(exercise_id)
    result = run_check(item, submission, quiet=True)
    if item.speed_goal is not None and result.passed:
        result = _graded_by_speed(item, submission, result)
    elif measure:
        result = _timed(item, submission, result)
    if not quiet:
        print(result.message)
    return result


def _graded_by_speed(
    item: Exercise, submission: object, result: CheckResult
) -> CheckResult:
    # A right answer to a "faster" exercise: timed, and judged by its share of the
    # course's rate; where it cannot be timed, it is right but not (yet) passed.
    why = speed.timing_unavailable(item)
    if why is not None:
        message = _(
            "Right on every case. This exercise is passed by speed, which only a GPU can "
            "grade: run the same check on a machine with one."
        )
        return dataclasses.replace(
            result, passed=False, kind="not_timed", message=f"{message}\n{why}"
        )
    rates = speed.rates(item, submission)
    share = rates["yours"] / rates["course"]
    goal = item.speed_goal
    assert goal is not None  # a "faster" exercise has one (Exercise checks it)
    verdict = (
        _("Passed: {share} of the course's rate; the goal is {goal}.")
        if share >= goal
        else _(
            "Not yet: right on every case, but at {share} of the course's rate; the "
            "goal is {goal}."
        )
    )
    verdict = verdict.format(share=number(f"{share:.2f}x"), goal=number(f"{goal:.2f}x"))
    lines = [speed.report(item, rates), verdict]
    return dataclasses.replace(
        result,
        passed=share >= goal,
        kind="passed" if share >= goal else "too_slow",
        message="\n".join(lines),
        rates=rates,
    )


def _timed(item: Exercise, submission: object, result: CheckResult) -> CheckResult:
    # The check's result with the timing (or why there is none) added to its message.
    if not result.passed:
        why = _("Not timed: only a right answer is timed.")
    else:
        why = speed.timing_unavailable(item)
    if why is not None:
        return dataclasses.replace(result, message=f"{result.message}\n{why}")
    rates = speed.rates(item, submission)
    message = f"{result.message}\n{speed.report(item, rates)}"
    return dataclasses.replace(result, message=message, rates=rates)

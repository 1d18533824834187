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

import importlib

from .checker import CheckResult, run_check
from .model import Exercise, ExerciseDefinitionError

__all__ = ["GALLERY", "LESSONS", "PAGES", "CheckResult", "Exercise", "ExerciseDefinitionError",
           "check", "exercise", "lesson_exercises"]  # fmt: skip

# The lessons (docs/lessons/) that have exercises, by the name of their quiz bank, in
# course order; then the gallery's pages (gallery/plot_NN_*.py), likewise.
LESSONS = ("intro", "constexpr", "tiles", "debugging")
GALLERY = ("vector_add", "dropout", "softmax", "rms_norm", "layer_norm", "cross_entropy",
           "matmul", "flash_attention")  # fmt: skip
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
    for number, item in enumerate(exercises, 1):
        if not isinstance(item, Exercise):
            raise ExerciseDefinitionError(
                f"{where}: EXERCISES #{number} is a {type(item).__name__}, not an Exercise"
            )
        if item.lesson != lesson:
            raise ExerciseDefinitionError(
                f"{where}: exercise {item.id!r} says it belongs to lesson {item.lesson!r}"
            )
        if item.id in seen:
            raise ExerciseDefinitionError(f"{where}: exercise {item.id!r} is listed twice")
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
    raise ValueError(f"no exercise is called {exercise_id!r}; the exercises: {', '.join(known)}")


def check(exercise_id: str, submission: object, *, quiet: bool = False) -> CheckResult:
    """Check a learner's answer to exercise ``exercise_id`` and print what is wrong.

    ``submission`` is what the exercise asks for: a ``@triton.jit`` kernel, a launcher
    function, or a predicted value. It runs on small inputs that include the lesson's
    edge cases and is compared with a float64 reference on the CPU; the diagnosis (the
    first wrong element, the pattern of the wrong ones, a write outside the output, an
    error at the learner's line) is printed, unless ``quiet``, and returned in a
    :class:`CheckResult`.
    """
    return run_check(exercise(exercise_id), submission, quiet=quiet)

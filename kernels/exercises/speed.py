"""``check(..., measure=True)``: a right answer timed on the GPU against the course's own
kernel and PyTorch, on one large case that the exercise defines (its :class:`Speed`).

Each is timed as the course's benchmarks time kernels (:func:`kernels.harness.timing.
kernel_time_ms`: kernel time, L2 flushed before each call), and its rate is the bytes of
the case's inputs and output over that time: the least the work must move. The ceiling
is a device-to-device copy of as many bytes, timed in the same run.
"""

import warnings
from collections.abc import Callable
from typing import Any

import torch

from ..harness.timing import best_of, copy_rate, kernel_time_ms
from ..text.messages import _, number, translated
from ..triton_helpers.runtime import describe_device, interpreted
from .model import N_, Exercise, KernelTask, Launch, Speed

# The timed case of the row-wise exercises: rows of float32 values, 32 MiB in all, far
# more than the L2 holds.
TIMED_ROWS, TIMED_COLS = 8192, 1024
# The start of a spurious warning of older PyTorch profilers (see :func:`rates`).
PROFILER_CYCLE_WARNING = "Warning: Profiler clears events at the end of each cycle"


def rows_speed(
    course: Callable[..., Any],
    pytorch: Callable[..., Any],
    vectors: tuple[str, ...] = (),
    **params: Any,
) -> Speed:
    """The :class:`Speed` of a row-wise exercise: ``x``, TIMED_ROWS x TIMED_COLS random
    float32 values, and a random row of TIMED_COLS values for each name in ``vectors``
    (a weight, a bias); one tile spans a row. ``course`` and ``pytorch`` get the inputs
    as keyword arguments."""

    def make_inputs(device: torch.device) -> dict[str, torch.Tensor]:
        generator = torch.Generator(device=device).manual_seed(0)
        inputs = {
            "x": torch.randn(TIMED_ROWS, TIMED_COLS, device=device, generator=generator)
        }
        for name in vectors:
            inputs[name] = torch.randn(TIMED_COLS, device=device, generator=generator)
        return inputs

    return Speed(
        name=N_("8192 rows of 1024 float32 values"),
        make_inputs=make_inputs,
        out_shape=(TIMED_ROWS, TIMED_COLS),
        out_dtype=torch.float32,
        course=lambda inputs: course(**inputs),
        pytorch=lambda inputs: pytorch(**inputs),
        params={"BLOCK_SIZE": TIMED_COLS, **params},
    )


def timing_unavailable(exercise: Exercise) -> str | None:
    """Why ``exercise`` cannot be timed in this run, or None if it can."""
    if exercise.speed is None:
        return _(
            "This exercise is not timed: measure=True times the kernels of the pages' "
            "memory-bound exercises."
        )
    if interpreted() or not torch.cuda.is_available():
        return _(
            "Timing needs a GPU, with Triton compiling for it: this run has none, or runs "
            "Triton's interpreter (TRITON_INTERPRET=1). The check above ran all the same."
        )
    return None


def _answer_call(exercise: Exercise, answer: object, inputs: dict, out: torch.Tensor):
    task, speed = exercise.task, exercise.speed
    if isinstance(task, KernelTask):
        return lambda: task.launch(answer, Launch(inputs, out, speed.params))
    return lambda: task.call(answer, inputs, speed.params)


def _bytes(inputs: dict[str, torch.Tensor], out: torch.Tensor) -> int:
    return sum(t.numel() * t.element_size() for t in (*inputs.values(), out))


def rates(
    exercise: Exercise, answer: object, device: torch.device | None = None
) -> dict[str, float]:
    """GB/s of the answer (``"yours"``), the course's launcher (``"course"``), PyTorch
    (``"pytorch"``) and a copy of as many bytes (``"copy"``), on the exercise's large case
    (its inputs made on ``device``, by default the GPU)."""
    speed: Speed = exercise.speed
    device = torch.device("cuda") if device is None else device
    inputs = dict(speed.make_inputs(device))
    out = torch.empty(speed.out_shape, dtype=speed.out_dtype, device=device)
    n_bytes = _bytes(inputs, out)
    calls: dict[str, Callable[[], Any]] = {
        "yours": _answer_call(exercise, answer, inputs, out),
        "course": lambda: speed.course(inputs),
        "pytorch": lambda: speed.pytorch(inputs),
    }
    with warnings.catch_warnings():
        # PyTorch 2.11 warns that "Profiler clears events at the end of each cycle"
        # whenever a profiler runs a second time, though no schedule has cycles (fixed
        # upstream, pytorch/pytorch#180387). A learner would read it as their mistake.
        warnings.filterwarnings(
            "ignore", message=PROFILER_CYCLE_WARNING, category=UserWarning
        )
        measured = {
            name: n_bytes / kernel_time_ms(call) / 1e6 for name, call in calls.items()
        }
        measured["copy"] = best_of(lambda: copy_rate(n_bytes))
    return measured


def report(exercise: Exercise, measured: dict[str, float]) -> str:
    """The printed lines of a timing: each rate, its share of the copy's, and the ratios."""

    def gbs(value: float) -> str:
        return number(f"{value:,.0f}")

    yours = measured["yours"]
    lines = [
        _("Timed on {gpu}, {case} (kernel time, L2 flushed before each call):").format(
            gpu=describe_device(), case=translated(exercise.speed.name)
        ),
        _(
            "  your kernel: {rate} GB/s, {share} of a copy of as many bytes ({copy} GB/s)"
        ).format(
            rate=gbs(yours),
            share=number(f"{yours / measured['copy']:.0%}"),
            copy=gbs(measured["copy"]),
        ),
        _("  the course's: {rate} GB/s; yours runs at {ratio} of its rate").format(
            rate=gbs(measured["course"]),
            ratio=number(f"{yours / measured['course']:.2f}x"),
        ),
        _("  PyTorch's: {rate} GB/s; yours runs at {ratio} of its rate").format(
            rate=gbs(measured["pytorch"]),
            ratio=number(f"{yours / measured['pytorch']:.2f}x"),
        ),
    ]
    return "\n".join(lines)

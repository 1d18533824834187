"""``check(..., measure=True)``: a right answer timed against the course's kernel and
PyTorch's on a GPU; without one, the check stands and the learner is told why; a wrong
answer is not timed; the report and its plumbing (with the timer replaced)."""

import dataclasses

import pytest
import torch

from kernels.exercises import check, exercise, lesson_exercises, speed
from kernels.exercises.intro import ADD_MASK, ADD_SPEED
from kernels.exercises.model import ExerciseDefinitionError
from kernels.text import messages
from kernels.triton_helpers.runtime import kernel_device

TIMED = [item for name in ("intro", "softmax", "rms_norm", "layer_norm")
         for item in lesson_exercises(name) if item.speed is not None]  # fmt: skip


def test_the_memory_bound_exercises_are_timed() -> None:
    assert {item.id for item in TIMED} >= {
        "intro-add-mask", "intro-add-launcher", "softmax-row-max", "softmax-padding",
        "rms-norm-inverse-root", "layer-norm-padding-variance",
    }  # fmt: skip


def test_a_right_answer_is_timed_where_a_gpu_can_time_it() -> None:
    result = check("intro-add-mask", ADD_MASK.code("solution"), quiet=True, measure=True)
    assert result.passed and result.kind == "passed"
    why = speed.timing_unavailable(ADD_MASK)
    if why is None:  # a GPU run: the rates are there
        assert set(result.rates) == {"yours", "course", "pytorch", "copy"}
        assert "GB/s" in result.message
    else:  # this machine: the check stands, and the learner is told why it was not timed
        assert result.rates is None
        assert result.message.startswith("Passed")
        assert result.message.endswith(why) and "GPU" in why


def test_a_wrong_answer_is_not_timed() -> None:
    result = check("intro-add-mask", ADD_MASK.code("starter"), quiet=True, measure=True)
    assert not result.passed and result.rates is None
    assert result.message.endswith("Not timed: only a right answer is timed.")


def test_an_exercise_without_a_timed_case_says_so() -> None:
    item = exercise("intro-add-stride")
    result = check(item.id, item.code("solution"), quiet=True, measure=True)
    assert result.passed and "This exercise is not timed" in result.message


def test_measure_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="measure"):
        check("intro-add-mask", ADD_MASK.code("solution"), measure="yes")


def test_only_a_kernel_or_a_launcher_has_a_timed_case() -> None:
    predict = exercise("intro-predict-grid")
    with pytest.raises(ExerciseDefinitionError, match="only a kernel or a launcher is timed"):
        dataclasses.replace(predict, speed=ADD_SPEED)


def test_rates_time_each_provider_and_count_the_bytes_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The timer replaced (1 ms a call, each call run once); a case of 1000 elements.
    called = []

    def one_millisecond(fn: object) -> float:
        called.append(fn())
        return 1.0

    monkeypatch.setattr(speed, "kernel_time_ms", one_millisecond)
    monkeypatch.setattr(speed, "copy_rate", lambda n_bytes: 7.0)
    small = dataclasses.replace(
        ADD_SPEED,
        make_inputs=lambda device: {n: torch.ones(1000, device=device) for n in "xy"},
        out_shape=(1000,),
    )
    item = dataclasses.replace(ADD_MASK, speed=small)
    rates = speed.rates(item, ADD_MASK.code("solution"), kernel_device())
    # 3 x 1000 float32 values moved in 1 ms: 0.012 GB/s for each.
    assert rates == pytest.approx({"yours": 0.012, "course": 0.012, "pytorch": 0.012,
                                   "copy": 7.0})  # fmt: skip
    assert len(called) == 3 and torch.equal(called[1], called[2])


def test_the_profilers_spurious_cycle_warning_does_not_reach_the_learner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # PyTorch 2.11's profiler warns of "cycles" when it runs a second time (it did on
    # the H100): the learner sees the rates, not that warning. Other warnings still pass.
    import warnings

    def warning_timer(fn: object) -> float:
        warnings.warn(speed.PROFILER_CYCLE_WARNING + ". Only events ...", UserWarning, stacklevel=2)
        return 1.0

    monkeypatch.setattr(speed, "kernel_time_ms", warning_timer)
    monkeypatch.setattr(speed, "copy_rate", lambda n_bytes: warning_timer(None))
    small = dataclasses.replace(
        ADD_SPEED,
        make_inputs=lambda device: {n: torch.ones(10, device=device) for n in "xy"},
        out_shape=(10,),
    )
    item = dataclasses.replace(ADD_MASK, speed=small)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        speed.rates(item, ADD_MASK.code("solution"), kernel_device())
    assert [str(w.message) for w in seen] == []
    monkeypatch.setattr(
        speed, "copy_rate", lambda n_bytes: warnings.warn("other", stacklevel=2) or 1.0
    )
    with pytest.warns(UserWarning, match="other"):
        speed.rates(item, ADD_MASK.code("solution"), kernel_device())


def test_the_report_gives_rates_share_and_ratios(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(speed, "describe_device", lambda: "NVIDIA H100 80GB HBM3")
    rates = {"yours": 2900.0, "course": 3000.0, "pytorch": 2500.0, "copy": 3100.0}
    lines = speed.report(ADD_MASK, rates).splitlines()
    assert lines[0] == ("Timed on NVIDIA H100 80GB HBM3, two vectors of 2**24 float32 values "
                        "(kernel time, L2 flushed before each call):")  # fmt: skip
    assert lines[1] == "  your kernel: 2,900 GB/s, 94% of a copy of as many bytes (3,100 GB/s)"
    assert lines[2] == "  the course's: 3,000 GB/s; yours runs at 0.97x of its rate"
    assert lines[3] == "  PyTorch's: 2,500 GB/s; yours runs at 1.16x of its rate"
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    russian = speed.report(ADD_MASK, rates)
    assert "ваше ядро: 2\xa0900" in russian and "94% от копирования" in russian


@pytest.mark.parametrize("item", TIMED, ids=[item.id for item in TIMED])
def test_every_timed_case_s_pytorch_baseline_gives_the_output_it_describes(item) -> None:
    inputs = item.speed.make_inputs(torch.device("cpu"))
    out = item.speed.pytorch(inputs)
    assert tuple(out.shape) == item.speed.out_shape and out.dtype == item.speed.out_dtype


FASTER = [item for name in ("vector_add", "softmax") for item in lesson_exercises(name)
          if item.kind == "faster"]  # fmt: skip


def test_a_faster_exercise_is_passed_by_its_share_of_the_course_s_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    item = exercise("vector-add-faster")
    monkeypatch.setattr(speed, "timing_unavailable", lambda item: None)
    monkeypatch.setattr(speed, "describe_device", lambda: "NVIDIA H100 80GB HBM3")
    rates = {"yours": 2400.0, "course": 3000.0, "pytorch": 2900.0, "copy": 3100.0}
    monkeypatch.setattr(speed, "rates", lambda item, answer: rates)
    result = check(item.id, item.code("solution"), quiet=True)
    assert (result.passed, result.kind, result.rates) == (True, "passed", rates)
    assert result.message.endswith("Passed: 0.80x of the course's rate; the goal is 0.80x.")
    rates["yours"] = 2390.0
    result = check(item.id, item.code("starter"), quiet=True)
    assert (result.passed, result.kind) == (False, "too_slow")
    assert result.message.startswith("Timed on NVIDIA H100 80GB HBM3")
    assert result.message.endswith(
        "Not yet: right on every case, but at 0.80x of the course's rate; the goal is 0.80x."
    )


def test_a_wrong_answer_to_a_faster_exercise_is_not_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(speed, "timing_unavailable", lambda item: None)
    monkeypatch.setattr(speed, "rates", lambda item, answer: pytest.fail("timed a wrong answer"))
    wrong = exercise("intro-add-mask").code("starter")  # the kernel, not a launcher
    result = check("vector-add-faster", wrong, quiet=True)
    assert not result.passed and result.kind not in ("too_slow", "not_timed", "passed")


def test_without_a_gpu_a_faster_exercise_is_right_but_not_graded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(speed, "timing_unavailable", lambda item: "No GPU here.")
    result = check("softmax-faster", exercise("softmax-faster").code("solution"), quiet=True)
    assert (result.passed, result.kind, result.rates) == (False, "not_timed", None)
    assert result.message.startswith("Right on every case.") and result.message.endswith(
        "No GPU here."
    )


@pytest.mark.parametrize("item", FASTER, ids=[item.id for item in FASTER])
def test_on_a_gpu_the_starter_is_too_slow_and_the_solution_fast_enough(item) -> None:
    why = speed.timing_unavailable(item)
    if why is not None:
        pytest.skip(why)
    starter = check(item.id, item.code("starter"), quiet=True)
    assert (starter.passed, starter.kind) == (False, "too_slow"), starter.message
    solution = check(item.id, item.code("solution"), quiet=True)
    assert solution.passed, solution.message

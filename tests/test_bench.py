"""The harness: its checks, its bookkeeping, its CPU path, staleness and draft builds."""

import ast
import io
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest
import torch
from records import committed_doc, records_folder, sample, sample_doc

from kernels.declarations.spec import BenchmarkSpec, ProviderUnavailable
from kernels.figures.plotting import caption_of, plot_measurement, plot_peak_memory
from kernels.figures.report import results_table
from kernels.harness import (
    bench,
    fingerprint,
    launch_record,
    measurements,
    recording,
    shards,
    timing,
)
from kernels.harness.measurements import MeasurementError
from kernels.operations import vector_add
from kernels.text import messages
from kernels.triton_helpers.runtime import interpreted

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
# The folder of the records the pages read.
PRIMARY = measurements.PRIMARY_GPU
cpu_path = pytest.mark.skipif(not interpreted(), reason="covers the path taken without a GPU")


def test_check_passes_the_kernel_and_reports_its_error() -> None:
    result = bench.check(vector_add.BENCHMARK, 1025)
    assert result.relative_error <= result.tolerance == bench.RELATIVE_TOLERANCE[torch.float32]
    assert str(result).startswith("Triton vector_add, N = 1,025, float32: relative error")
    assert str(result).endswith("OK")


def test_check_catches_a_wrong_provider() -> None:
    def off_by_a_bit(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return vector_add.add(x, y) * 1.001

    with pytest.raises(bench.CorrectnessError, match=r"\[wrong\] at N=1,025"):
        bench.check(vector_add.BENCHMARK, 1025, off_by_a_bit, provider_name="wrong")


def test_check_catches_an_output_with_unwritten_elements() -> None:
    def half_written(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.full_like(x, math.nan)
        out[: x.numel() // 2] = x[: x.numel() // 2] + y[: x.numel() // 2]
        return out

    with pytest.raises(bench.CorrectnessError, match="relative error inf"):
        bench.check(vector_add.BENCHMARK, 1000, half_written, provider_name="half")


def test_check_judges_the_call_after_a_tuning_one() -> None:
    # An autotuner runs every candidate into the same output: a candidate that leaves
    # part of it unwritten then shows the values another one wrote, and a first call
    # comes out right. Found on an H200: a persistent matmul that skipped three quarters
    # of its work passed the check. The check judges a later call, into NaN-poisoned
    # memory, after a call that may tune.
    calls = []

    def right_once(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        calls.append(len(calls))
        out = x + y
        if len(calls) > 1:
            out[::2] = math.nan  # what the tuned launch leaves unwritten, poisoned
        return out

    with pytest.raises(bench.CorrectnessError, match="relative error inf"):
        bench.check(vector_add.BENCHMARK, 1000, right_once, provider_name="tuned")
    assert calls == [0, 1]


def test_check_gives_a_provider_that_writes_into_its_inputs_fresh_ones_each_call() -> None:
    # Liger-Kernel's cross-entropy stores the gradient over the logits: the first call
    # must not spoil the inputs of the call that is checked.
    def overwrites_x(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = x + y
        x.zero_()
        return out

    result = bench.check(vector_add.BENCHMARK, 1000, overwrites_x, provider_name="in place")
    assert result.relative_error <= result.tolerance


def test_relative_error_is_zero_for_equal_and_infinite_for_nan() -> None:
    ref = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert bench.relative_error(ref.float(), ref) == 0
    assert bench.relative_error(torch.tensor([1.0, math.nan]), ref) == math.inf


@pytest.fixture
def not_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    """The path of a build that does not measure, on any machine (as the tests build)."""
    monkeypatch.setenv(bench.MEASURE_VARIABLE, "0")
    monkeypatch.setenv(bench.DRAFT_VARIABLE, "0")


@pytest.mark.usefixtures("not_measuring")
def test_without_measuring_the_record_is_loaded_and_nothing_is_timed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    measurement = bench.measure_or_load(vector_add.BENCHMARK)
    assert not measurement.fresh and not measurement.placeholder
    assert measurement == measurements.load("vector_add")
    printed = capsys.readouterr().out
    assert printed.count(": OK") == len(vector_add.BENCHMARK.interpreter_sizes)


@cpu_path
def test_timing_needs_a_gpu() -> None:
    with pytest.raises(RuntimeError, match="timing needs a CUDA GPU"):
        bench.measure(vector_add.BENCHMARK)


@cpu_path
def test_bench_command_refuses_to_run_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        recording.main([])
    assert exit_info.value.code == 2
    assert "no CUDA GPU here" in capsys.readouterr().err


def test_bench_command_names_an_unknown_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        recording.main(["nosuch"])
    error = capsys.readouterr().err
    assert "unknown benchmark nosuch; known: " in error and "vector_add" in error


def test_figure_draws_kernel_time_call_time_the_ceiling_and_a_caption() -> None:
    record = sample()
    figure = plot_measurement(record)
    (axes,) = figure.axes
    lines = axes.get_lines()
    labels = [line.get_label() for line in lines]
    # Per provider a kernel-time line (labelled) and a lighter call-time line.
    assert labels[0::2][:3] == list(record.series)
    kernel, call = lines[0], lines[1]
    assert list(kernel.get_ydata()) == list(record.series["Triton"])
    assert list(call.get_ydata()) == list(record.call_series["Triton"])
    assert call.get_alpha() < 1 and call.get_color() == kernel.get_color()
    # Triton's kernel-time line is drawn above every other line, not hidden by them.
    assert all(kernel.get_zorder() > line.get_zorder() for line in lines[1:])
    ceiling = next(line for line in lines if line.get_linestyle() == "--")
    assert ceiling.get_label().startswith("device copy")
    assert "lighter: call time" in labels
    caption = caption_of(figure)
    for key in ("gpu", "driver", "cuda", "torch", "triton", "command"):
        assert record.environment[key] in caption
    assert record.environment["date"][:10] in caption
    assert f"code at commit {record.code.commit}" in caption
    assert "drawn from that record" in caption


def test_the_ceiling_s_legend_speaks_the_edition_s_language(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = sample()
    value = f"{record.ceiling.value:,.0f}"

    def ceiling_label() -> str:
        lines = plot_measurement(record).axes[0].get_lines()
        return next(line for line in lines if line.get_linestyle() == "--").get_label()

    assert ceiling_label() == f"device copy ({value} GB/s)"
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    russian_value = value.replace(",", "\xa0")
    assert ceiling_label() == f"копирование на устройстве ({russian_value} ГБ/с)"  # noqa: RUF001


def _tick_labels(axis) -> list[str]:
    figure = axis.get_figure()
    figure.canvas.draw()
    return [label.get_text() for label in axis.get_ticklabels() if label.get_text()]


def test_log_axes_label_sizes_at_full_text_size_in_the_edition_s_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Matplotlib's default labels (2^24 as mathtext) print the exponent at 70% of the
    # text size: under 9 px on a phone. The sizes are written out instead.
    record = sample()
    x_labels = _tick_labels(plot_measurement(record).axes[0].xaxis)
    assert x_labels and not any("$" in label or "^" in label for label in x_labels)
    assert {"16M", "64M", "256M"} <= set(x_labels), x_labels
    memory = sample(peak_memory_mb={"Triton": [1.0, 10.0, 100.0, 1000.0, 5000.0]})
    y_labels = _tick_labels(plot_peak_memory(memory).axes[0].yaxis)
    assert "1,000" in y_labels and not any("$" in label for label in y_labels), y_labels
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    assert "256\u041c" in _tick_labels(plot_measurement(record).axes[0].xaxis)  # Cyrillic Em
    assert "1\xa0000" in _tick_labels(plot_peak_memory(memory).axes[0].yaxis)


def test_a_size_label_is_exact_or_written_in_full() -> None:
    from kernels.figures.plotting import plain_label, size_label

    assert [size_label(v) for v in (1, 1000, 1024, 1500, 50257, 2**20, 3 * 2**20)] == [
        "1", "1,000", "1K", "1,500", "50,257", "1M", "3M"]  # fmt: skip
    assert [plain_label(v) for v in (0.01, 0.5, 10, 1e4)] == ["0.01", "0.5", "10", "10,000"]


def test_a_rate_that_is_null_is_a_gap_in_its_line() -> None:
    doc = sample_doc(unavailable={"PyTorch": "at N=268,435,456: out of memory"})
    doc["series"]["PyTorch"][-1] = None
    doc["call_series"]["PyTorch"][-1] = None
    figure = plot_measurement(measurements.from_json(doc, "sample.json"))
    pytorch = figure.axes[0].get_lines()[2]
    assert math.isnan(pytorch.get_ydata()[-1]) and pytorch.get_ydata()[0] == 3500.0


def test_peak_memory_figure_leaves_a_gap_where_a_provider_ran_out_of_memory() -> None:
    record = sample(peak_memory_mb={"Triton": [1.0] * 5, "naive": [2.0] * 4 + [None]})
    naive = plot_peak_memory(record).axes[0].get_lines()[1]
    assert math.isnan(naive.get_ydata()[-1]) and naive.get_ydata()[0] == 2.0


def test_bench_command_line_finds_every_benchmark() -> None:
    # Run as ``python -m``, the module is __main__: discovery must still find the specs.
    result = subprocess.run(
        [sys.executable, "-m", "kernels.harness.recording", "nosuch"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert "known: " + ", ".join(bench.discover()) in result.stderr


def test_default_baselines_are_pytorch_eager_and_torch_compile() -> None:
    assert vector_add.BENCHMARK.series_names == ("Triton", "PyTorch", "torch.compile")


# The harness and the presentation: what kernel modules must never import.
HARNESS = {
    "kernels.harness.bench",
    "kernels.harness.recording",
    "kernels.harness.measurements",
    "kernels.figures.plotting",
    "kernels.figures.report",
    "kernels.harness.provenance",
    "kernels.harness.timing",
    "kernels.harness.fingerprint",
}


@pytest.mark.parametrize("module", sorted({s.module for s in bench.discover().values()}))
def test_kernel_modules_import_no_harness_code(module: str) -> None:
    imported = fingerprint.closure([module]) + [
        node.module or ""
        for node in ast.walk(ast.parse(fingerprint.module_path(module).read_text()))
        if isinstance(node, ast.ImportFrom)
    ]
    assert not HARNESS & set(imported), f"{module} imports {HARNESS & set(imported)}"


def test_each_benchmark_is_defined_in_the_module_it_names() -> None:
    import importlib

    for spec in bench.discover().values():
        module = importlib.import_module(spec.module)
        assert any(value is spec for value in vars(module).values()), spec.name


def _add_spec(baselines: dict) -> BenchmarkSpec:
    return BenchmarkSpec(
        **{**vector_add.BENCHMARK.__dict__, "gpu_sizes": [64, 128], "baselines": baselines}
    )


@pytest.fixture
def measure_without_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bookkeeping of measure() without a GPU: timing, the ceiling and the machine's
    description are stand-ins, so only what is recorded is under test. Kernel time is
    1 ms and call time 2 ms for every provider."""
    monkeypatch.setattr(bench, "interpreted", lambda: False)
    monkeypatch.setattr(bench.timing, "kernel_time_ms", lambda fn, leaves=(): 1.0)
    monkeypatch.setattr(bench.timing, "call_time_ms", lambda fn, leaves=(): 2.0)
    monkeypatch.setattr(
        bench.timing,
        "copy_ceiling",
        lambda: {"name": "device copy", "value": 1.0, "timings": 3},
    )
    monkeypatch.setattr(bench.timing, "copy_rate", lambda n_bytes_moved: n_bytes_moved / 1e6)
    environment = dict.fromkeys(measurements.ENVIRONMENT_KEYS, "stand-in")
    monkeypatch.setattr(
        bench.provenance, "capture", lambda: {**environment, "date": "2026-12-03T10:00:00Z"}
    )


@pytest.mark.usefixtures("measure_without_timing")
def test_measure_records_kernel_time_call_time_work_and_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A committed tree (this checkout may hold uncommitted work).
    monkeypatch.setenv(fingerprint.COMMIT_VARIABLE, "0123456789ab")
    spec = _add_spec({"eager": torch.add})
    record = bench.measure(spec)
    work = [spec.work(size, spec.dtype) for size in (64, 128)]
    assert record.work == tuple(work)
    assert record.series["Triton"] == tuple(w / 1.0 / 1e6 for w in work)
    assert record.call_series["eager"] == tuple(w / 2.0 / 1e6 for w in work)
    assert record.code == bench.code_of(spec)
    assert "kernels/vector_add.py" in record.code.files
    assert "kernels/timing.py" in record.code.files
    assert record.fresh
    # What measure() returns can be saved and loaded back as it is.
    assert measurements.from_json(record.to_json(), "x") == record


@pytest.mark.usefixtures("measure_without_timing")
def test_a_baseline_that_cannot_run_is_null_there_and_its_reason_recorded() -> None:
    def only_small(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if x.numel() > 64:
            raise ProviderUnavailable("too large")
        return x + y

    spec = _add_spec({"eager": torch.add, "small only": only_small})
    assert spec.series_names == ("Triton", "eager", "small only")
    record = bench.measure(spec)
    assert record.series["small only"][1] is None and record.series["small only"][0] > 0
    assert record.call_series["small only"][1] is None
    assert record.unavailable == {"small only": "at N=128: too large"}


@pytest.mark.usefixtures("measure_without_timing")
def test_a_provider_the_profiler_cannot_time_is_null_not_timed_another_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def kernel_time(fn: object, leaves: object = ()) -> float:
        if fn_names.pop(0) == "eager":
            raise timing.KernelTimeUnavailable("no GPU work")
        return 1.0

    fn_names = ["Triton", "eager"] * 2
    monkeypatch.setattr(bench.timing, "kernel_time_ms", kernel_time)
    record = bench.measure(_add_spec({"eager": torch.add}))
    assert record.series["eager"] == (None, None) == record.call_series["eager"]
    assert record.unavailable == {"eager": "at N=64, 128: kernel time: no GPU work"}


@pytest.mark.usefixtures("measure_without_timing")
def test_a_copy_of_each_size_is_recorded_beside_the_series() -> None:
    # The stand-in copy_rate returns the bytes it was asked to move, in MB.
    spec = _add_spec({"eager": torch.add})
    record = bench.measure(spec)
    assert record.same_size_copy == tuple(spec.work(s, spec.dtype) / 1e6 for s in (64, 128))


def test_the_copy_ceiling_is_the_best_of_several_timings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One slow timing among the three (as a build once recorded) must not set the ceiling.
    rates = iter([3805.0, 4250.0, 4245.0])
    moved = []
    monkeypatch.setattr(timing, "copy_rate", lambda n: moved.append(n) or next(rates))
    ceiling = timing.copy_ceiling(n_bytes=1000)
    assert ceiling["value"] == 4250.0
    assert ceiling["timings"] == timing.CEILING_TIMINGS == 3
    assert moved == [2000] * 3


def test_a_profiled_trace_splits_into_calls_at_each_flush() -> None:
    flush, main = 13, 7
    trace = [
        (0, 60_000, flush), (70_000, 1_000, main), (72_000, 500, main),  # call 1: 1.5 us
        (80_000, 60_000, flush), (150_000, 2_000, main),  # call 2: 2 us
    ]  # fmt: skip
    assert timing.per_call_gpu_us(list(reversed(trace)), flush, repeats=2) == [1.5, 2.0]
    with pytest.raises(timing.KernelTimeUnavailable, match="2 L2 flushes for 3 calls"):
        timing.per_call_gpu_us(trace, flush, repeats=3)
    with pytest.raises(timing.KernelTimeUnavailable, match="a call with no GPU work"):
        timing.per_call_gpu_us([*trace, (200_000, 60_000, flush)], flush, repeats=3)


def _copy_of_the_course(tmp_path: Path) -> Path:
    """The kernels and the records, in a folder of their own."""
    copy = tmp_path / "course"
    shutil.copytree(ROOT / "kernels", copy / "kernels", ignore=shutil.ignore_patterns("__py*"))
    shutil.copytree(ROOT / "gallery" / "measurements", copy / "gallery" / "measurements")
    return copy


# One record per benchmark.
N_BENCHMARKS = len(bench.discover())
# Every benchmark's record, and each family's launch-cost record.
N_RECORDS = N_BENCHMARKS + len(launch_record.LAUNCH_RECORDS)
# The records of each GPU: all of them on the primary GPU, some on the others.
RECORDS_BY_GPU = {
    gpu: measurements.recorded_benchmarks(gpu) for gpu in measurements.recorded_gpus()
}


def _stale_command(course: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernels.harness.recording", "--stale"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=course,
        env={"PATH": "", "PYTHONPATH": str(course), "NINJA_GAP_COMMIT": "test"},
    )


def test_stale_lists_a_record_after_a_code_change_but_not_after_a_comment_change(
    tmp_path: Path,
) -> None:
    course = _copy_of_the_course(tmp_path)
    result = _stale_command(course)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"All records of the {N_RECORDS} benchmarks match the code" in result.stdout
    module = course / "kernels" / "operations" / "vector_add.py"
    source = module.read_text(encoding="utf-8")
    # Comments, docstrings and blank lines are not code.
    edited = source.replace("BLOCK_SIZE = 1024\n", "# a new comment\n\nBLOCK_SIZE = 1024  # why\n")
    edited = edited.replace('"""The PyTorch reference: eager ``x + y``."""', '"""Eager."""')
    assert edited != source
    module.write_text(edited, encoding="utf-8")
    assert _stale_command(course).returncode == 0
    # One line of code that runs.
    module.write_text(edited.replace("BLOCK_SIZE = 1024", "BLOCK_SIZE = 16"), encoding="utf-8")
    result = _stale_command(course)
    assert result.returncode == 1
    assert "vector_add.json is stale" in result.stdout
    assert "kernels/vector_add.py changed" in result.stdout
    assert "softmax.json" not in result.stdout
    # The float16 sweep runs the same module, and the family's launch-cost record times
    # its launcher; the other families' launch-cost records do not cover vector_add.py.
    assert "vector_add_fp16.json is stale" in result.stdout
    assert "launch_overhead_vector_add.json is stale" in result.stdout
    assert "launch_overhead_softmax.json" not in result.stdout
    # On every GPU that has them.
    stale = sum(
        len({"vector_add", "vector_add_fp16", "launch_overhead_vector_add"} & set(names))
        for names in RECORDS_BY_GPU.values()
    )
    assert f"Records that cannot be drawn: {stale}\n" in result.stderr


def test_stale_checks_every_gpus_records_but_asks_only_the_primary_for_all(
    tmp_path: Path,
) -> None:
    course = _copy_of_the_course(tmp_path)
    root = course / "gallery" / "measurements"
    other = root / "h200"
    other.mkdir(exist_ok=True)
    for path in other.glob("*.json"):
        path.unlink()
    # Another GPU with one record of the current code and nothing else is complete enough.
    doc = committed_doc(root / PRIMARY / "dropout.json")
    doc["environment"]["gpu"] = "NVIDIA H200"
    (other / "dropout.json").write_text(json.dumps(doc), encoding="utf-8")
    assert _stale_command(course).returncode == 0
    # A stale one, a record loose in the root and one in the wrong GPU's folder are named.
    doc["code"]["fingerprint"] = "0" * len(doc["code"]["fingerprint"])
    (other / "dropout.json").write_text(json.dumps(doc), encoding="utf-8")
    shutil.copy(root / PRIMARY / "softmax.json", root)
    shutil.copy(root / PRIMARY / "softmax.json", other)
    result = _stale_command(course)
    assert result.returncode == 1
    assert "h200/dropout.json is stale" in result.stdout
    assert "measurements/softmax.json: a record belongs in its GPU's folder" in result.stdout
    assert "h200/softmax.json: recorded on the NVIDIA H100" in result.stdout
    assert "Records that cannot be drawn: 3\n" in result.stderr


def test_stale_names_a_missing_record_and_one_of_no_benchmark(tmp_path: Path) -> None:
    course = _copy_of_the_course(tmp_path)
    records = course / "gallery" / "measurements" / PRIMARY
    (records / "dropout.json").rename(records / "dropout_old.json")
    result = _stale_command(course)
    assert result.returncode == 1
    assert "no recorded measurement for 'dropout'" in result.stdout
    assert "dropout_old.json: no benchmark is named 'dropout_old'" in result.stdout
    (records / "launch_overhead_softmax.json").unlink()
    result = _stale_command(course)
    assert "no recorded measurement for 'launch_overhead_softmax'" in result.stdout
    assert "Records that cannot be drawn: 3\n" in result.stderr


def test_a_harness_change_makes_every_record_stale(tmp_path: Path) -> None:
    course = _copy_of_the_course(tmp_path)
    timing_py = course / "kernels" / "harness" / "timing.py"
    timing_py.write_text(
        timing_py.read_text(encoding="utf-8").replace("REP_MS = 100", "REP_MS = 50"),
        encoding="utf-8",
    )
    result = _stale_command(course)
    # All but the launch-cost records, which kernels/harness/launch_cost.py times on its
    # own, on every GPU.
    stale = sum(
        len([name for name in names if not measurements.is_launch_record(name)])
        for names in RECORDS_BY_GPU.values()
    )
    assert result.returncode == 1 and f"drawn: {stale}\n" in result.stderr
    assert "launch_overhead_" not in result.stdout


def test_a_change_to_the_launch_timing_makes_only_its_records_stale(tmp_path: Path) -> None:
    course = _copy_of_the_course(tmp_path)
    module = course / "kernels" / "harness" / "launch_cost.py"
    module.write_text(
        module.read_text(encoding="utf-8").replace("CALLS = 2000", "CALLS = 1000"),
        encoding="utf-8",
    )
    result = _stale_command(course)
    # Every family's launch-cost record, on every GPU that has them, and no other.
    stale = sum(
        len([name for name in names if measurements.is_launch_record(name)])
        for names in RECORDS_BY_GPU.values()
    )
    assert result.returncode == 1 and f"Records that cannot be drawn: {stale}\n" in result.stderr
    assert "launch_overhead_vector_add.json is stale" in result.stdout
    assert "kernels/launch_cost.py changed" in result.stdout
    assert "vector_add.json is stale" not in result.stdout.replace("overhead_vector_add", "")


@pytest.fixture
def records_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty measurements folder, and a build that does not measure."""
    folder = records_folder(monkeypatch, tmp_path)
    monkeypatch.setenv(bench.MEASURE_VARIABLE, "0")
    return folder


def test_unusable_records_are_the_ones_a_normal_build_refuses(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Every committed record matches the code (test_measurements checks it) ...
    names = {"vector_add", "softmax", "launch_overhead_softmax"}
    assert recording.unusable_records(names) == set()
    committed = measurements.gpu_dir()
    tmp_path = records_folder(monkeypatch, tmp_path, measurements.PRIMARY_GPU)
    # ... none is usable in an empty folder, a launch-cost record included ...
    assert recording.unusable_records(names) == names
    # ... and of a good record, a missing one and a stale one, the last two are named.
    shutil.copy(committed / "launch_overhead_softmax.json", tmp_path)
    doc = committed_doc(committed / "vector_add.json")
    doc["code"]["fingerprint"] = "0" * len(doc["code"]["fingerprint"])
    (tmp_path / "vector_add.json").write_text(json.dumps(doc), encoding="utf-8")
    assert recording.unusable_records(names) == {"vector_add", "softmax"}


def test_a_missing_record_fails_unless_the_build_is_a_draft(
    records_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(bench.DRAFT_VARIABLE, "0")
    with pytest.raises(measurements.MeasurementError, match="no recorded measurement"):
        bench.measure_or_load(vector_add.BENCHMARK)
    monkeypatch.setenv(bench.DRAFT_VARIABLE, "1")
    placeholder = bench.measure_or_load(vector_add.BENCHMARK)
    assert placeholder.placeholder
    figure = plot_measurement(placeholder)
    assert "not measured yet" in [text.get_text() for text in figure.axes[0].texts]
    assert caption_of(figure).startswith("Not measured yet: `vector_add`")
    assert results_table(placeholder, min_work=0).rows == []
    assert "not measured yet" in str(results_table(placeholder))


def test_a_stale_record_fails_naming_the_file_and_what_changed(
    records_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(bench.DRAFT_VARIABLE, "0")
    doc = sample_doc()
    doc["code"] = {**doc["code"], "files": {**bench.code_of(vector_add.BENCHMARK).files}}
    doc["code"]["files"]["kernels/vector_add.py"] = "0000000000000000"
    (records_in / "vector_add.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(
        measurements.StaleMeasurementError,
        match=r"vector_add\.json is stale: .*\(kernels/vector_add\.py changed since commit",
    ):
        bench.measure_or_load(vector_add.BENCHMARK)
    monkeypatch.setenv(bench.DRAFT_VARIABLE, "1")
    assert bench.measure_or_load(vector_add.BENCHMARK).placeholder


def test_tolerance_allows_what_rounding_the_exact_answer_to_the_dtype_costs() -> None:
    # A float16 softmax over a vocabulary: values near 1/151,936 are float16 subnormals,
    # where storing the exact answer alone loses more than the float16 tolerance.
    generator = torch.Generator().manual_seed(0)
    reference = torch.softmax(torch.randn(4, 151_936, generator=generator, dtype=torch.float64), -1)
    stored = reference.half()
    assert bench.relative_error(stored, reference) > bench.RELATIVE_TOLERANCE[torch.float16]
    allowed = bench.tolerance(stored, reference, torch.float16)
    assert bench.relative_error(stored, reference) <= allowed
    # ... and no more than twice that: an output off by three roundings still fails.
    off = (reference + 3 * (stored.double() - reference)).half()
    assert bench.relative_error(off, reference) > allowed
    # Where the dtype represents the answer well, the table's tolerance stands.
    normal = torch.rand(1000, generator=generator, dtype=torch.float64) + 1
    assert bench.tolerance(normal.half(), normal, torch.float16) == 1e-3


def test_call_time_asks_do_bench_for_the_median_which_is_not_its_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Lesson 5 says so: do_bench returns the mean unless told otherwise, and the course
    # passes return_mode="median".
    import inspect

    import triton.testing

    assert inspect.signature(triton.testing.do_bench).parameters["return_mode"].default == "mean"
    asked = {}

    def do_bench(fn: object, **kwargs: object) -> float:
        asked.update(kwargs)
        return 1.5

    monkeypatch.setattr(triton.testing, "do_bench", do_bench)
    assert bench.timing.call_time_ms(lambda: None) == 1.5
    assert asked["return_mode"] == "median"


def test_recording_from_uncommitted_kernels_is_refused_before_measuring(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fingerprint, "commit", lambda: "0123456789ab-dirty")
    monkeypatch.setattr(bench, "measure", lambda spec: pytest.fail("measured a dirty tree"))
    with pytest.raises(SystemExit, match="kernels/ has uncommitted changes"):
        recording._measure_and_save(["vector_add"], None)


def test_a_record_from_uncommitted_kernels_is_refused(tmp_path: Path) -> None:
    doc = committed_doc(measurements.path_for("vector_add"))
    doc["code"]["commit"] += "-dirty"
    with pytest.raises(MeasurementError, match="recorded from uncommitted changes"):
        measurements.from_json(doc, "vector_add.json")


def _git(repository: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          cwd=repository, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def _repository_with_a_side_branch(repository: Path) -> tuple[str, str, str]:
    """A git repository at ``repository``: two commits on its checked-out branch (``old``,
    then ``head``) and ``side``, a commit on a branch from ``old`` that never merged.
    Returns the three short hashes."""
    repository.mkdir()
    _git(repository, "init", "-q", "-b", "main")

    def commit(text: str) -> str:
        (repository / "f").write_text(text, encoding="utf-8")
        _git(repository, "add", "f")
        _git(repository, "commit", "-q", "-m", text)
        return _git(repository, "rev-parse", "--short=12", "HEAD")

    old = commit("old")
    _git(repository, "checkout", "-q", "-b", "side")
    side = commit("side")
    _git(repository, "checkout", "-q", "main")
    head = commit("head")
    return old, head, side


def test_in_history_asks_whether_a_commit_is_head_or_one_of_its_ancestors(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(fingerprint.COMMIT_VARIABLE, raising=False)
    repository = tmp_path / "repository"
    old, head, side = _repository_with_a_side_branch(repository)
    assert fingerprint.in_history(head, repository) is True
    assert fingerprint.in_history(old, repository) is True
    # Before, a commit the repository holds passed, though no branch of HEAD's has it.
    assert fingerprint.in_history(side, repository) is False
    assert fingerprint.in_history("0123456789ab", repository) is False
    # What is no hash never reaches git (where it would be read as an option).
    assert fingerprint.in_history("--all", repository) is False
    assert fingerprint.in_history("test", repository) is False
    # Where there is no repository, or the folder is not the top of one (an installed
    # package in a clone's virtual environment), the question cannot be answered.
    (repository / "inside").mkdir()
    for nowhere in (repository / "f", repository / "inside", tmp_path):
        assert fingerprint.in_history(side, nowhere) is None, nowhere
    # A shallow clone (CI checks out one commit) holds HEAD, not its ancestors: a commit
    # it lacks may be one of them.
    shallow = tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", "--depth", "1", repository.as_uri(), str(shallow))
    assert fingerprint.in_history(head, shallow) is True
    assert fingerprint.in_history(old, shallow) is None
    # A runner without history names its commit in $NINJA_GAP_COMMIT.
    monkeypatch.setenv(fingerprint.COMMIT_VARIABLE, head)
    assert fingerprint.in_history(side, repository) is None


def test_stale_names_a_record_whose_commit_is_not_in_the_history_of_head(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(fingerprint.COMMIT_VARIABLE, raising=False)
    old, head, side = _repository_with_a_side_branch(tmp_path / "repository")
    # The loaders ask that repository instead of this checkout.
    in_history = fingerprint.in_history
    monkeypatch.setattr(fingerprint, "in_history",
                        lambda commit: in_history(commit, tmp_path / "repository"))  # fmt: skip
    doc = committed_doc(measurements.path_for("vector_add"))
    folder = records_folder(monkeypatch, tmp_path / "records", PRIMARY)
    specs = {"vector_add": vector_add.BENCHMARK}
    for commit, refused in ((old, False), (head, False), (side, True), ("0123456789ab", True)):
        doc["code"]["commit"] = commit
        (folder / "vector_add.json").write_text(json.dumps(doc), encoding="utf-8")
        problems = recording.stale_report(specs, launch_overhead=False)
        assert problems == (
            [f"{folder / 'vector_add.json'}: recorded at commit {commit}, which is not in the "
             "history of this checkout's HEAD (a branch that never landed, or no commit at "
             "all); re-measure it from this branch"] if refused else []
        ), commit  # fmt: skip


def test_only_stale_picks_the_benchmarks_whose_records_no_longer_match(tmp_path: Path) -> None:
    course = _copy_of_the_course(tmp_path)
    module = course / "kernels" / "operations" / "vector_add.py"
    module.write_text(
        module.read_text(encoding="utf-8").replace("BLOCK_SIZE = 1024", "BLOCK_SIZE = 16"),
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, "-m", "kernels.harness.recording", "--only-stale", "--list"],
        capture_output=True, text=True, timeout=300, cwd=course,
        env={"PATH": "", "PYTHONPATH": str(course), "NINJA_GAP_COMMIT": "test"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    stale = f"Missing or stale on the {PRIMARY}: vector_add vector_add_fp16"
    assert stale + " launch_overhead_vector_add\n" in result.stdout
    # The shard's estimate counts the records that say how long they took to measure.
    names = ("vector_add", "vector_add_fp16", "launch_overhead_vector_add")
    timed = sum(shards.measured_seconds(name) is not None for name in names)
    # The plan orders a shard's benchmarks by their measured times, which each record
    # brings: compare the names, not their order.
    planned = re.search(rf"\({timed} of 3 timed before\): (.*)", result.stdout)
    assert planned, result.stdout
    assert sorted(planned.group(1).split()) == [
        "launch_overhead_vector_add",
        "vector_add",
        "vector_add_fp16",
    ]


def test_the_legends_name_the_series_in_the_edition_s_language(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before: the legend showed the record's English series names ("plain loop",
    # "Triton, no copy", "naive") on the Russian pages, where the tables translated them.
    values = [3000.0] * 5
    series = {"Triton": values, "Triton, no copy": values, "PyTorch": values}
    record = sample(series=series, call_series=series)
    memory = sample(peak_memory_mb={"Triton": values, "naive": values})
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")

    def labels(figure) -> list[str]:
        return [line.get_label() for line in figure.axes[0].get_lines()]

    # Each provider's kernel-time line is labelled, its call-time line after it is not.
    assert labels(plot_measurement(record))[0:6:2] == ["Triton", "Triton без копии", "PyTorch"]
    assert labels(plot_peak_memory(memory))[:2] == ["Triton", "наивное"]
    # The units too, as the tables write them.
    assert plot_measurement(record).axes[0].get_ylabel() == "ГБ/с"  # noqa: RUF001
    assert plot_peak_memory(memory).axes[0].get_ylabel() == "МБ"


def test_a_legend_too_wide_for_two_columns_takes_one_and_fits_the_figure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before: two columns, centred below the axes, ran past both edges of the image
    # when one label was long: the attention page's Russian figures, whose ceiling is
    # "произведение матриц cuBLAS bf16 (696 TFLOP/s)", lost the start and end of lines.
    values = [500.0] * 5
    series = {"Triton": values, "SDPA flash": values, "SDPA cuDNN": values}
    ceiling = {"name": "cuBLAS bf16 matmul", "value": 696.0, "timings": 3}
    attention = sample(
        metric="TFLOP/s", work=[1e12] * 5, series=series, call_series=series, ceiling=ceiling
    )
    for language, record, columns in (("en", sample(), 2), ("ru", attention, 1)):
        monkeypatch.setenv(messages.LANGUAGE_VARIABLE, language)
        figure = plot_measurement(record)
        (legend,) = figure.legends
        assert legend._ncols == columns
        figure.savefig(io.BytesIO(), format="png")  # lays the figure out, as a page does
        box = legend.get_window_extent(figure.canvas.get_renderer())
        assert box.x0 >= 0 and box.x1 <= figure.bbox.width, (language, box)

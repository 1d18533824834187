"""The harness's checks and its CPU path: checks that can fail, and nothing timed on the CPU."""

import math
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest
import torch

from kernels import bench, measurements, vector_add
from kernels.plotting import caption_of, plot_measurement
from kernels.runtime import interpreted

matplotlib.use("Agg")

cpu_path = pytest.mark.skipif(not interpreted(), reason="covers the path taken without a GPU")


def test_check_passes_the_kernel_and_reports_its_error() -> None:
    result = bench.check(vector_add.BENCHMARK, 1025)
    assert result.relative_error <= result.tolerance == bench.RELATIVE_TOLERANCE[torch.float32]
    assert str(result).startswith("Triton vector_add, N=1,025, float32: relative error")
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


def test_relative_error_is_zero_for_equal_and_infinite_for_nan() -> None:
    ref = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert bench.relative_error(ref.float(), ref) == 0
    assert bench.relative_error(torch.tensor([1.0, math.nan]), ref) == math.inf


@cpu_path
def test_without_a_gpu_the_recording_is_loaded_and_nothing_is_timed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    measurement = bench.measure_or_load(vector_add.BENCHMARK)
    assert not measurement.fresh
    assert measurement.doc == measurements.load("vector_add")
    printed = capsys.readouterr().out
    assert printed.count(": OK") == len(vector_add.BENCHMARK.interpreter_sizes)
    with pytest.raises(RuntimeError, match="timing needs a CUDA GPU"):
        bench.measure(vector_add.BENCHMARK)


@cpu_path
def test_bench_command_refuses_to_run_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        bench.main([])
    assert exit_info.value.code == 2
    assert "no CUDA GPU here" in capsys.readouterr().err


def test_bench_command_names_an_unknown_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.main(["nosuch"])
    error = capsys.readouterr().err
    assert "unknown benchmark nosuch; known: " in error and "vector_add" in error


@cpu_path
def test_figure_has_a_line_per_provider_the_ceiling_and_a_provenance_caption() -> None:
    measurement = bench.measure_or_load(vector_add.BENCHMARK)
    figure = plot_measurement(measurement)
    (axes,) = figure.axes
    labels = [line.get_label() for line in axes.get_lines()]
    doc = measurement.doc
    assert labels[:3] == list(doc["series"])
    assert labels[3].startswith("device copy")
    assert axes.get_lines()[3].get_linestyle() == "--"
    caption = caption_of(figure)
    environment = doc["environment"]
    for key in ("gpu", "driver", "cuda", "torch", "triton", "command"):
        assert environment[key] in caption
    assert environment["date"][:10] in caption
    assert "built without a GPU" in caption


def test_bench_command_line_finds_every_benchmark() -> None:
    # Run as ``python -m``, the module is __main__: discovery must still find the specs.
    result = subprocess.run(
        [sys.executable, "-m", "kernels.bench", "nosuch"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert result.returncode == 2
    assert "known: " + ", ".join(bench.discover()) in result.stderr


def test_default_baselines_are_pytorch_eager_and_torch_compile() -> None:
    assert vector_add.BENCHMARK.series_names == ("Triton", "PyTorch", "torch.compile")


def _add_spec(baselines: dict) -> bench.BenchmarkSpec:
    return bench.BenchmarkSpec(
        **{**vector_add.BENCHMARK.__dict__, "gpu_sizes": [64, 128], "baselines": baselines}
    )


@pytest.fixture
def measure_without_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bookkeeping of measure() without a GPU: timing, the ceiling and the machine's
    description are stand-ins, so only which series are kept and what is recorded is
    under test."""
    monkeypatch.setattr(bench, "interpreted", lambda: False)
    monkeypatch.setattr(bench, "time_ms", lambda fn, leaves=(): 1.0)
    monkeypatch.setattr(bench, "copy_ceiling", lambda: {"name": "device copy", "value": 1.0})
    monkeypatch.setattr(bench, "copy_rate", lambda n_bytes_moved: n_bytes_moved / 1e6)
    monkeypatch.setattr(bench.provenance, "capture", lambda: {"gpu": "stand-in"})


@pytest.mark.usefixtures("measure_without_timing")
def test_a_baseline_that_cannot_run_is_left_out_and_its_reason_recorded() -> None:
    def unavailable(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        raise bench.ProviderUnavailable("no such backend here")

    spec = _add_spec({"eager": torch.add, "missing": unavailable})
    assert spec.series_names == ("Triton", "eager", "missing")
    doc = bench.measure(spec)
    assert list(doc["series"]) == ["Triton", "eager"]
    assert all(len(values) == 2 for values in doc["series"].values())
    assert doc["unavailable"] == {"missing": "at N=64: no such backend here"}
    assert doc["check"]["providers"] == ["Triton", "eager"]


@pytest.mark.usefixtures("measure_without_timing")
def test_a_copy_of_each_size_is_recorded_beside_the_series() -> None:
    # The stand-in copy_rate returns the bytes it was asked to move, in MB.
    spec = _add_spec({"eager": torch.add})
    doc = bench.measure(spec)
    assert doc["same_size_copy"] == [spec.work(size, spec.dtype) / 1e6 for size in (64, 128)]


@pytest.mark.usefixtures("measure_without_timing")
def test_a_baseline_that_stops_running_at_a_larger_size_is_left_out_whole() -> None:
    def only_small(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if x.numel() > 64:
            raise bench.ProviderUnavailable("too large")
        return x + y

    doc = bench.measure(_add_spec({"eager": torch.add, "small only": only_small}))
    assert list(doc["series"]) == ["Triton", "eager"]
    assert doc["unavailable"] == {"small only": "at N=128: too large"}


def test_the_copy_ceiling_is_the_best_of_several_timings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One slow timing among the three (as a build once recorded) must not set the ceiling.
    rates = iter([3805.0, 4250.0, 4245.0])
    moved = []
    monkeypatch.setattr(bench, "copy_rate", lambda n: moved.append(n) or next(rates))
    ceiling = bench.copy_ceiling(n_bytes=1000)
    assert ceiling["value"] == 4250.0
    assert ceiling["timings"] == bench.CEILING_TIMINGS == 3
    assert moved == [2000] * 3


@cpu_path
def test_peak_memory_figure_leaves_a_gap_where_a_provider_ran_out_of_memory() -> None:
    from kernels.plotting import plot_peak_memory

    doc = measurements.load("vector_add")
    doc["peak_memory_mb"] = {"Triton": [1.0] * len(doc["x"]), "naive": [2.0] * len(doc["x"])}
    doc["peak_memory_mb"]["naive"][-1] = None
    figure = plot_peak_memory(bench.Measurement(doc, fresh=False))
    naive = figure.axes[0].get_lines()[1]
    assert math.isnan(naive.get_ydata()[-1]) and naive.get_ydata()[0] == 2.0

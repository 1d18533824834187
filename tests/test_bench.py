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

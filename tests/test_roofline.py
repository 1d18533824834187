"""The roofline and host-cost readings of a record, on small hand-made records."""

import sys

import matplotlib.pyplot as plt
import pytest
from conftest import ROOT
from records import CEILING, X, sample, sample_doc

from kernels.figures import roofline
from kernels.figures.plotting import TEXT_PT
from kernels.harness import bench, measurements
from kernels.operations.vector_add import BENCHMARK as VECTOR_ADD
from kernels.text import messages

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
from course_build import smallest_text_pt

MATMUL_X = [1024, 2048, 4096]
MATMUL_CEILING = 800.0


def matmul_record(triton: list[float | None]) -> measurements.Measurement:
    """A square-matmul record (TFLOP/s, Triton and cuBLAS) with the given Triton rates."""
    reasons = {"Triton": "at M = N = K=4,096: out of memory"} if None in triton else {}
    return sample(
        benchmark="matmul",
        metric="TFLOP/s",
        x_name="M = N = K",
        dtype="bfloat16",
        x=MATMUL_X,
        work=[2.0 * n**3 for n in MATMUL_X],
        series={"Triton": triton, "cuBLAS": [600.0] * 3},
        call_series={"Triton": [t and t / 2 for t in triton], "cuBLAS": [500.0] * 3},
        ceiling={"name": "cuBLAS bf16 matmul", "value": MATMUL_CEILING, "timings": 3},
        unavailable=reasons,
    )


def test_the_roof_meets_at_the_ridge() -> None:
    roof = roofline.roofline(sample(), matmul_record([500.0] * 3))
    # 800 TFLOP/s over 4000 GB/s: 200 FLOPs for every byte.
    assert roof.ridge == pytest.approx(200.0)
    assert roof.attainable_tflops(1.0) == pytest.approx(4.0)
    assert roof.attainable_tflops(roof.ridge) == pytest.approx(MATMUL_CEILING)
    assert roof.attainable_tflops(1e4) == MATMUL_CEILING
    assert (roof.bandwidth_from, roof.compute_from) == ("vector_add", "matmul")


def test_the_roof_needs_a_copy_ceiling_and_a_product_ceiling_that_were_measured() -> None:
    with pytest.raises(measurements.MeasurementError, match="needs GB/s"):
        roofline.roofline(matmul_record([500.0] * 3), sample())
    empty = bench.placeholder(VECTOR_ADD, "not measured")
    with pytest.raises(measurements.MeasurementError, match="placeholder"):
        roofline.roofline(empty, matmul_record([500.0] * 3))


def test_a_memory_bound_point_counts_its_flops_from_the_shape() -> None:
    doc = sample_doc()
    doc["series"]["Triton"][-1] = 3900.0
    point = roofline.point(measurements.from_json(doc, "sample.json"))
    n = X[-1]
    assert (point.x, point.flops, point.bytes) == (n, n, 12 * n)
    assert point.intensity == pytest.approx(1 / 12)
    # 3900 GB/s of 12 bytes per addition: 325 G additions per second.
    assert point.tflops == pytest.approx(0.325)
    assert not point.estimated


def test_a_compute_bound_point_is_taken_at_its_largest_measured_size() -> None:
    point = roofline.point(matmul_record([300.0, 450.0, None]))
    n = MATMUL_X[1]
    assert (point.x, point.flops, point.bytes) == (n, 2 * n**3, 3 * n * n * 2)
    assert point.intensity == pytest.approx(n / 3)
    assert point.tflops == pytest.approx(450.0)
    assert roofline.point(matmul_record([300.0, 450.0, None]), "cuBLAS").x == MATMUL_X[-1]


def test_an_estimated_count_is_labelled_and_reads_the_record_details() -> None:
    record = sample(benchmark="softmax", dtype="bfloat16", rows=8)
    point = roofline.point(record)
    assert point.estimated and "about" in point.note
    assert point.flops == roofline.SOFTMAX_FLOPS_PER_ELEMENT * 8 * X[-1]


def test_a_benchmark_without_a_count_needs_one() -> None:
    record = sample(benchmark="dropout")
    with pytest.raises(measurements.MeasurementError, match="pass one as `other`"):
        roofline.point(record)
    two_per_element = roofline.OtherWork(lambda record, n: 2.0 * n, "FLOPs: two per element")
    assert roofline.point(record, other=two_per_element).intensity == pytest.approx(1 / 6)


def test_times_come_from_the_work_over_the_rate() -> None:
    kernel = roofline.times_us(sample(), "Triton")
    call = roofline.times_us(sample(), "Triton", call=True)
    # 12 bytes per element at 3600 GB/s (kernel time) and 3000 GB/s (call time).
    assert kernel == pytest.approx([12 * x / 3600e9 * 1e6 for x in X])
    assert call == pytest.approx([12 * x / 3000e9 * 1e6 for x in X])
    assert roofline.call_over_kernel(sample(), "Triton") == pytest.approx([1.2] * len(X))


def test_call_time_is_close_to_kernel_time_only_from_a_size_on() -> None:
    doc = sample_doc()
    # Call over kernel time: 10, 1.05 (a lucky size), 3, 1.08, 1.01.
    doc["series"]["Triton"] = [3000.0] * len(X)
    doc["call_series"]["Triton"] = [3000.0 / r for r in (10, 1.05, 3, 1.08, 1.01)]
    record = measurements.from_json(doc, "sample.json")
    assert roofline.first_size_within(record, "Triton", 1.1) == X[3]
    assert roofline.first_size_within(record, "Triton", 1.02) == X[4]
    assert roofline.first_size_within(record, "Triton", 1.001) is None
    assert roofline.first_size_within(record, "Triton", 20) == X[0]


def test_the_widest_gap_is_where_the_host_dominates_most() -> None:
    doc = sample_doc()
    doc["series"]["Triton"] = [3000.0] * len(X)
    doc["call_series"]["Triton"] = [3000.0 / r for r in (3, 10, 2, 1.1, 1.0)]
    assert roofline.widest_gap(measurements.from_json(doc, "sample.json"), "Triton") == (
        X[1],
        pytest.approx(10),
    )


def test_host_overhead_compares_both_providers_at_the_widest_gap() -> None:
    doc = sample_doc()
    doc["series"]["Triton"] = doc["series"]["PyTorch"] = [3000.0] * len(X)
    doc["call_series"]["Triton"] = [3000.0 / r for r in (3, 10, 2, 1.05, 1.01)]
    doc["call_series"]["PyTorch"] = [3000.0 / r for r in (2, 2, 1.05, 1.05, 1.02)]
    overhead = roofline.host_overhead(
        measurements.from_json(doc, "sample.json"), "Triton", "PyTorch", 1.1
    )
    kernel_us = 12 * X[1] / 3000e9 * 1e6
    assert overhead.size == X[1]
    assert overhead.kernel_us == pytest.approx(kernel_us)
    assert overhead.call_us == pytest.approx(10 * kernel_us)
    assert overhead.baseline_call_us == pytest.approx(2 * kernel_us)
    assert (overhead.close_from, overhead.baseline_close_from) == (X[3], X[2])
    # Call less kernel time of both providers, the least and the most over the sizes.
    ratios = [(3, 10, 2, 1.05, 1.01), (2, 2, 1.05, 1.05, 1.02)]
    gaps = [
        (r - 1) * 12 * x / 3000e9 * 1e6
        for provider in ratios
        for r, x in zip(provider, X, strict=True)
    ]
    assert overhead.gap_low_us == pytest.approx(min(gaps))
    assert overhead.gap_high_us == pytest.approx(max(gaps))


def test_a_missing_rate_ends_the_run_of_close_sizes() -> None:
    doc = sample_doc(unavailable={"PyTorch": "at N=2**27: out of memory"})
    doc["series"]["PyTorch"][3] = None
    doc["call_series"]["PyTorch"][3] = None
    record = measurements.from_json(doc, "sample.json")
    assert roofline.call_over_kernel(record, "PyTorch")[3] is None
    assert roofline.first_size_within(record, "PyTorch", 2.0) == X[4]


def test_the_highest_share_finds_a_rate_above_the_ceiling() -> None:
    doc = sample_doc()
    doc["series"]["PyTorch"][2] = 1.05 * CEILING
    provider, x, share = roofline.highest_share(measurements.from_json(doc, "sample.json"))
    assert (provider, x) == ("PyTorch", X[2])
    assert share == pytest.approx(1.05)


def test_the_roofline_figure_reads_on_a_phone() -> None:
    roof = roofline.roofline(sample(), matmul_record([500.0] * 3))
    points = [roofline.point(sample()), roofline.point(matmul_record([500.0] * 3))]
    fig = roofline.plot_roofline(roof, points)
    assert smallest_text_pt(fig) >= TEXT_PT
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert labels == ["measured roof", "ridge point", "vector add", "matmul"]
    plt.close(fig)


def test_the_roofline_figure_speaks_the_edition_s_language(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    roof = roofline.roofline(sample(), matmul_record([500.0] * 3))
    points = [roofline.point(sample()), roofline.point(matmul_record([500.0] * 3))]
    fig = roofline.plot_roofline(roof, points)
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert labels == ["измеренная крыша", "точка перегиба", "сложение векторов",
                      "произведение матриц"]  # fmt: skip
    assert fig.axes[0].get_xlabel() == "FLOP на байт"
    plt.close(fig)


def test_the_russian_roofline_s_legend_fits_the_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    # In three columns, the Russian legend of the lesson's four points ran 145 pixels
    # past the figure: saved "tight", the image grew to 745 pixels, and a phone shrank
    # its text to 7.7 pixels.
    import dataclasses

    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    roof = roofline.roofline(sample(), matmul_record([500.0] * 3))
    point = roofline.point(sample())
    points = [
        point,
        dataclasses.replace(point, benchmark="softmax", estimated=True),
        roofline.point(matmul_record([500.0] * 3)),
        dataclasses.replace(point, benchmark="flash_attention"),
    ]
    fig = roofline.plot_roofline(roof, points)
    renderer = fig.canvas.get_renderer()
    assert fig.get_tightbbox(renderer).width * fig.dpi <= fig.bbox.width
    plt.close(fig)

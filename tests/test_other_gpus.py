"""The other GPUs' records, shown as tabs under the primary GPU's table."""

import json
import shutil
from pathlib import Path

import pytest
from records import committed_doc, records_folder

from kernels.figures.report import gpu_comparison, results_table
from kernels.harness import bench, measurements
from kernels.operations import vector_add

COMMITTED = measurements.MEASUREMENTS_ROOT


def _with_a_second_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str) -> Path:
    # The committed primary GPU's vector_add record, and the same record as if another
    # GPU (called ``name``) had measured it.
    primary = records_folder(monkeypatch, tmp_path, measurements.PRIMARY_GPU)
    source = COMMITTED / measurements.PRIMARY_GPU / "vector_add.json"
    shutil.copy(source, primary)
    doc = committed_doc(source)
    doc["environment"]["gpu"] = name
    other = tmp_path / measurements.gpu_slug(name)
    other.mkdir()
    (other / "vector_add.json").write_text(json.dumps(doc), encoding="utf-8")
    return other


def test_the_primary_table_carries_a_tab_for_each_other_gpu_with_a_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _with_a_second_gpu(monkeypatch, tmp_path, "NVIDIA Test GPU")
    table = results_table(bench.load_current(vector_add.BENCHMARK), ceiling_goal=0.9)
    assert table.beside == ["NVIDIA Test GPU"]
    page = table._repr_html_()
    assert page.count('class="sd-tab-label"') == 1
    assert '<label class="sd-tab-label" for="gpu-tabs-vector-add-nvidia-test-gpu">' in page
    assert 'src="data:image/png;base64,' in page
    # The tab holds the other GPU's own table, with the same goal.
    assert page.count('<div class="result-table">') == 2
    assert page.count("goal 90%") == 2
    assert "Also recorded on: NVIDIA Test GPU." in str(table)


def test_no_other_gpu_means_no_tabs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    primary = records_folder(monkeypatch, tmp_path, measurements.PRIMARY_GPU)
    shutil.copy(COMMITTED / measurements.PRIMARY_GPU / "vector_add.json", primary)
    table = results_table(bench.load_current(vector_add.BENCHMARK))
    assert table.beside == [] and "sd-tab-set" not in table._repr_html_()


def test_a_stale_record_of_another_gpu_fails_the_build_and_a_draft_leaves_it_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    other = _with_a_second_gpu(monkeypatch, tmp_path, "NVIDIA Test GPU")
    doc = committed_doc(other / "vector_add.json")
    doc["code"]["fingerprint"] = "0" * len(doc["code"]["fingerprint"])
    (other / "vector_add.json").write_text(json.dumps(doc), encoding="utf-8")
    primary = bench.load_current(vector_add.BENCHMARK)
    monkeypatch.setenv(bench.DRAFT_VARIABLE, "0")
    with pytest.raises(measurements.StaleMeasurementError, match=r"test-gpu/vector_add\.json"):
        results_table(primary)
    monkeypatch.setenv(bench.DRAFT_VARIABLE, "1")
    assert results_table(primary).beside == []


def test_two_gpus_are_compared_where_both_have_a_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    other = _with_a_second_gpu(monkeypatch, tmp_path, "NVIDIA H200")
    table = gpu_comparison(measurements.PRIMARY_GPU, "h200")
    assert [row[0] for row in table.rows] == ["vector_add"]
    assert table.rows[0][3:5] == ["1.00x", "1.00x"]  # the same record on both
    assert table.notes == []
    (other / "vector_add.json").unlink()
    table = gpu_comparison(measurements.PRIMARY_GPU, "h200")
    # Nothing to compare: no empty table, a line that says so and how to make one.
    assert (table.header, table.rows, table.notes) == ([], [], [])
    assert "No benchmark has a record" in str(table)
    assert "nox -s bench" in table._repr_html_()

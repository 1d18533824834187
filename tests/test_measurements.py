"""The recorded measurement files against the contract, and the contract's own checks."""

import copy
import json
import re
from pathlib import Path

import pytest

from kernels import measurements
from kernels.bench import discover

FILES = sorted(measurements.MEASUREMENTS_DIR.glob("*.json"))
BENCHMARKS = discover()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_recorded_file_follows_the_contract(path: Path) -> None:
    doc = measurements.validate(json.loads(path.read_text(encoding="utf-8")), str(path))
    assert doc["benchmark"] == path.stem
    assert doc["ceiling"]["name"] in {"device copy", "cuBLAS bf16 matmul"}
    assert "NVIDIA" in doc["environment"]["gpu"], "recorded files come from GPU runs"


@pytest.mark.parametrize("name", BENCHMARKS)
def test_each_benchmark_has_a_recording_of_its_current_spec(name: str) -> None:
    spec = BENCHMARKS[name]
    doc = measurements.load(name)
    assert doc["metric"] == spec.metric
    assert doc["x_name"] == spec.x_name
    assert doc["x"] == list(spec.gpu_sizes)
    # A baseline that could not run on the recording machine is listed with its reason.
    recorded = [*doc["series"], *doc.get("unavailable", {})]
    assert sorted(recorded) == sorted(spec.series_names)
    assert next(iter(doc["series"])) == "Triton"
    expected_ceiling = "device copy" if spec.metric == "GB/s" else "cuBLAS bf16 matmul"
    assert doc["ceiling"]["name"] == expected_ceiling


def test_every_recording_belongs_to_a_benchmark() -> None:
    assert {path.stem for path in FILES} <= set(BENCHMARKS)


def test_worst_fraction_of_ceiling_takes_the_minimum_over_large_sizes() -> None:
    doc = {
        "benchmark": "b",
        "x": [1, 10, 100],
        "series": {"T": [1.0, 8.0, 9.0]},
        "ceiling": {"value": 10.0},
    }
    assert measurements.worst_fraction_of_ceiling(doc, "T", 10) == pytest.approx(0.8)
    with pytest.raises(measurements.MeasurementError, match="no size of at least 1000"):
        measurements.worst_fraction_of_ceiling(doc, "T", 1000)


VALID = {
    "benchmark": "demo",
    "metric": "GB/s",
    "x_name": "N",
    "x": [1, 2],
    "series": {"Triton": [1.0, 2.0]},
    "ceiling": {"name": "device copy", "value": 3.0},
    "environment": {
        "gpu": "g",
        "driver": "d",
        "cuda": "c",
        "torch": "t",
        "triton": "tr",
        "python": "p",
        "date": "2026-12-02T10:00:00Z",
        "command": "nox -s docs",
    },
}


def broken(path: str, value: object) -> dict:
    doc = copy.deepcopy(VALID)
    *parents, key = path.split(".")
    target = doc
    for parent in parents:
        target = target[parent]
    if value is KeyError:
        del target[key]
    else:
        target[key] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (broken("metric", "ms"), "'metric' is 'ms'"),
        (broken("series", KeyError), "missing key 'series'"),
        (broken("series.Triton", [1.0]), "series 'Triton' must have one value per x"),
        (broken("series.Triton", [1.0, float("nan")]), "not a positive number"),
        (broken("series.Triton", [1.0, -2.0]), "not a positive number"),
        (broken("x", [2, 1]), "strictly increasing"),
        (broken("same_size_copy", [1.0]), "'same_size_copy' must have one value per x"),
        (broken("same_size_copy", [1.0, 0.0]), "'same_size_copy' holds a value that is not"),
        (broken("ceiling.value", 0), "'ceiling.value' must be a positive number"),
        (broken("environment.gpu", KeyError), "'environment.gpu' must be a non-empty string"),
        (broken("environment.date", "yesterday"), "not an ISO 8601 date"),
        ([], "the top level must be a JSON object"),
    ],
)
def test_contract_violations_are_named(doc: object, message: str) -> None:
    with pytest.raises(
        measurements.MeasurementError,
        match=r"^somefile\.json: .*" + re.escape(message),
    ):
        measurements.validate(doc, "somefile.json")


def test_missing_recording_says_how_to_make_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(measurements, "MEASUREMENTS_DIR", tmp_path)
    with pytest.raises(measurements.MeasurementError, match="run `nox -s bench` on a GPU"):
        measurements.load("vector_add")


def test_save_refuses_a_broken_document(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(measurements, "MEASUREMENTS_DIR", tmp_path)
    with pytest.raises(measurements.MeasurementError):
        measurements.save(broken("x", []))
    assert measurements.save(VALID) == tmp_path / "demo.json"
    assert measurements.load("demo") == VALID


def test_large_size_report_reads_the_record_and_judges_goals(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kernels.report import print_large_sizes

    spec = BENCHMARKS["vector_add"]
    doc = copy.deepcopy(measurements.load("vector_add"))
    doc["series"]["Triton"] = [doc["ceiling"]["value"] * 0.5] * len(doc["x"])
    rows = print_large_sizes(spec, doc, min_work=1e9, ceiling_goal=0.9, baseline_goal=1.0)
    assert [row["size"] for row in rows] == [x for x in doc["x"] if 12 * x >= 1e9]
    assert all(row["of_ceiling"] == pytest.approx(0.5) for row in rows)
    printed = capsys.readouterr().out
    assert printed.count("MISSED") == 2 * len(rows)


def test_report_shows_the_same_size_copy_where_the_record_has_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kernels.report import print_large_sizes

    spec = BENCHMARKS["vector_add"]
    doc = copy.deepcopy(measurements.load("vector_add"))
    doc.pop("same_size_copy", None)
    assert all(row["copy_of_ceiling"] is None for row in print_large_sizes(spec, doc, 1e9))
    assert "same-size copy" not in capsys.readouterr().out
    doc["same_size_copy"] = [doc["ceiling"]["value"] * 0.75] * len(doc["x"])
    rows = print_large_sizes(spec, doc, min_work=1e9)
    assert rows and all(row["copy_of_ceiling"] == pytest.approx(0.75) for row in rows)
    printed = capsys.readouterr().out
    assert "same-size copy" in printed and printed.count("75.0%") == len(rows)


def test_report_says_when_a_copy_beat_the_ceiling_by_more_than_noise(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kernels.report import print_large_sizes

    spec = BENCHMARKS["vector_add"]
    doc = copy.deepcopy(measurements.load("vector_add"))
    doc["same_size_copy"] = [doc["ceiling"]["value"] * 1.01] * len(doc["x"])
    print_large_sizes(spec, doc, min_work=1e9)
    assert "read low" not in capsys.readouterr().out
    doc["same_size_copy"][-1] = doc["ceiling"]["value"] * 1.1
    print_large_sizes(spec, doc, min_work=1e9)
    assert "a same-size copy ran at 110% of this run's ceiling" in capsys.readouterr().out


def test_report_states_the_verdict_in_words_from_the_record(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kernels.report import LINE_WIDTH, print_large_sizes

    spec = BENCHMARKS["vector_add"]
    doc = copy.deepcopy(measurements.load("vector_add"))
    # From 2**25 elements (403 MB a call) up: 2**25 reaches the ceiling goal, the three
    # larger sizes miss it, and every size is behind the faster baseline.
    ceiling = doc["ceiling"]["value"]
    doc["series"]["Triton"] = [ceiling * (0.95 if x == 2**25 else 0.5) for x in doc["x"]]
    for name in doc["series"]:
        if name != "Triton":
            doc["series"][name] = [2 * ceiling] * len(doc["x"])
    rows = print_large_sizes(spec, doc, min_work=12 * 2**25, ceiling_goal=0.9, baseline_goal=1.0)
    assert [row["size"] for row in rows] == [2**25, 2**26, 2**27, 2**28]
    printed = capsys.readouterr().out
    assert (
        "Ceiling goal (90%): met at N = 33,554,432; "
        "missed at 67,108,864, 134,217,728 and 268,435,456." in printed
    )
    assert all(len(line) <= LINE_WIDTH for line in printed.splitlines())
    assert "Baseline goal (1.00x): missed at every size in the table." in printed
    # Four sizes met and one missed make a line too wide for a page: it breaks in two.
    doc["series"]["Triton"] = [ceiling * (0.5 if x == 2**24 else 0.95) for x in doc["x"]]
    print_large_sizes(spec, doc, min_work=12 * 2**24, ceiling_goal=0.9)
    printed = capsys.readouterr().out
    assert (
        "Ceiling goal (90%): met at N = 33,554,432, 67,108,864, 134,217,728 and 268,435,456;\n"
        "    missed at 16,777,216.\n" in printed
    )
    assert all(len(line) <= LINE_WIDTH for line in printed.splitlines())
    doc["series"]["Triton"] = [3 * ceiling] * len(doc["x"])
    print_large_sizes(spec, doc, min_work=12 * 2**25, ceiling_goal=0.9, baseline_goal=1.0)
    printed = capsys.readouterr().out
    assert "Ceiling goal (90%): met at every size in the table." in printed
    assert "Baseline goal (1.00x): met at every size in the table." in printed


def test_size_list_reads_as_a_phrase() -> None:
    from kernels.report import size_list

    assert size_list([4096]) == "4,096"
    assert size_list([4096, 8192]) == "4,096 and 8,192"
    assert size_list([4096, 8192, 16384]) == "4,096, 8,192 and 16,384"


def test_report_compares_with_a_named_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    from kernels.report import print_large_sizes

    spec = BENCHMARKS["vector_add"]
    doc = copy.deepcopy(measurements.load("vector_add"))
    doc["series"]["PyTorch"] = [v / 2 for v in doc["series"]["Triton"]]
    rows = print_large_sizes(spec, doc, min_work=1e9, baseline_goal=1.5, against="PyTorch")
    assert rows and all(row["best_baseline"] == "PyTorch" for row in rows)
    assert all(row["vs_best"] == pytest.approx(2.0) for row in rows)
    assert "MISSED" not in capsys.readouterr().out

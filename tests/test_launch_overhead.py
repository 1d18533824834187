"""The launch-cost records (one per family, launch_overhead_<family>): their contract,
the figure and table of them all, their placeholder, the timing logic (with a stand-in
clock) and the launch cases (in the interpreter)."""

import gc
import inspect
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import pytest
import torch
from records import (
    COMMIT,
    LAUNCHERS,
    launch_doc,
    launch_doc_of,
    launch_sample,
    records_folder,
    sample_doc,
)
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels.declarations.family import LaunchCase
from kernels.figures.plotting import TEXT_PT, caption_of, plot_launch_overhead
from kernels.figures.report import launch_costs, launch_table, longest_final_wait
from kernels.harness import (
    bench,
    fingerprint,
    launch_cost,
    launch_record,
    measurements,
    provenance,
    recording,
)
from kernels.operations import (
    attention,
    cross_entropy,
    dropout,
    layer_norm,
    matmul,
    rms_norm,
    softmax,
    swiglu,
    vector_add,
)
from kernels.triton_helpers import direct_launch, launch
from kernels.triton_helpers.runtime import interpreted, kernel_device

matplotlib.use("Agg")

cpu_path = pytest.mark.skipif(not interpreted(), reason="covers the path taken without a GPU")


# The record's contract.


def test_a_good_record_is_read_and_round_trips() -> None:
    record = launch_sample()
    assert record.x == tuple(LAUNCHERS) and record.metric == "us"
    assert record.providers == measurements.LAUNCH_SERIES
    assert record.time_us("bare launch", "softmax") == 14.0
    assert record.details == {"timing": {"calls": 2000, "repeats": 7}}
    assert measurements.launch_overhead_from_json(record.to_json(), "x") == record
    # Any reader of a file gets the right type from the file's own keys.
    assert measurements.record_from_json(launch_doc(), "x") == record
    assert isinstance(measurements.record_from_json(sample_doc(), "x"), measurements.Measurement)


def test_pytorch_may_be_null_with_a_reason() -> None:
    series = {**launch_doc()["series"], "PyTorch": [5.0, None, 8.0]}
    waits = {**launch_doc()["final_wait_us"], "PyTorch": [2.0, None, 4.0]}
    record = launch_sample(series=series, final_wait_us=waits,
                           unavailable={"PyTorch": "at softmax: gone"})  # fmt: skip
    assert record.time_us("PyTorch", "softmax") is None
    assert launch_costs(record)[1].torch is None
    assert "PyTorch n/a: at softmax: gone" in str(launch_table(record))


def broken(key: str, value: object) -> dict:
    doc = launch_doc()
    if value is KeyError:
        del doc[key]
    else:
        doc[key] = value
    return doc


SERIES = launch_doc()["series"]
WAITS = launch_doc()["final_wait_us"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (broken("metric", "GB/s"), "a launch-cost record holds microseconds per call"),
        (broken("benchmark", "vector_add"), "'us' (microseconds per call) is for the "
         "launch-cost records (launch_overhead_<family>) only; 'benchmark' is 'vector_add'"),
        (broken("benchmark", "launch_overhead"), "launch-cost records (launch_overhead_<family>) "
         "only; 'benchmark' is 'launch_overhead'"),
        (broken("x", [64, 128, 256]), "launcher names (strings), not sizes"),
        (broken("x", []), "'x' must be a non-empty list of launcher names"),
        (broken("x", ["add", "add", "matmul"]), "'x' names a launcher twice"),
        (broken("ceiling", {"name": "device copy", "value": 1.0, "timings": 3}),
         "'ceiling' belongs to rate records"),
        (broken("ceiling", None), "'ceiling' belongs to rate records"),
        (broken("work", [1.0, 2.0, 3.0]), "'work' belongs to rate records"),
        (broken("call_series", SERIES), "'call_series' belongs to rate records"),
        (broken("dtype", "float32"), "'dtype' belongs to rate records"),
        (broken("series", {"Triton": [1.0] * 3, "PyTorch": [1.0] * 3}),
         "'series' must hold 'Triton', 'bare launch', 'PyTorch', 'CUDA graph', in that order"),
        (broken("series", {**SERIES, "Triton": [1.0, 2.0]}),
         "series['Triton'] must have one time per launcher in x (3)"),
        (broken("series", {**SERIES, "bare launch": [1.0, 0.0, 2.0]}),
         "series['bare launch'] holds 0.0, which is not a positive number"),
        (broken("series", {**SERIES, "Triton": [1.0, math.inf, 2.0]}),
         "series['Triton'] holds inf"),
        (broken("series", {**SERIES, "Triton": [1.0, None, 2.0]}),
         "series['Triton'] holds null; every launcher has a time there"),
        (broken("series", {**SERIES, "PyTorch": [1.0, None, 2.0]}),
         "series['PyTorch'] holds null but 'unavailable' gives no reason"),
        (broken("final_wait_us", KeyError), "missing key 'final_wait_us'"),
        (broken("final_wait_us", {**WAITS, "PyTorch": [1.0]}),
         "final_wait_us['PyTorch'] must have one time per launcher in x (3)"),
        (broken("final_wait_us", {"Triton": [1.0] * 3}), "'final_wait_us' must hold 'Triton'"),
        (dict(broken("series", {**SERIES, "PyTorch": [1.0, None, 2.0]}),
              unavailable={"PyTorch": "at softmax: gone"}),
         "final_wait_us['PyTorch'] must be null where series['PyTorch'] is"),
        (broken("inputs", {"add": "x"}), "'inputs' must describe, in the order of x"),
        (broken("inputs", KeyError), "missing key 'inputs'"),
        (broken("code", KeyError), "missing key 'code'"),
        (broken("environment", {"gpu": "NVIDIA H200"}), "'environment.driver' must be"),
    ],
)  # fmt: skip
def test_a_broken_record_is_refused_naming_the_problem(doc: dict, message: str) -> None:
    with pytest.raises(
        measurements.MeasurementError, match=r"^somefile\.json: .*" + re.escape(message)
    ):
        measurements.record_from_json(doc, "somefile.json")


def test_a_rate_record_may_not_claim_microseconds() -> None:
    with pytest.raises(measurements.MeasurementError, match="'us' is for the launch-cost records"):
        measurements.from_json(sample_doc(metric="us"), "somefile.json")


def test_the_record_is_saved_and_loaded_by_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tmp_path = records_folder(monkeypatch, tmp_path)
    record = launch_sample()
    file = tmp_path / "launch_overhead_vector_add.json"
    assert measurements.save(record) == file
    assert measurements.load_launch_overhead("launch_overhead_vector_add") == record
    assert json.loads(file.read_text())["timing"]["calls"] == 2000
    file.write_text(json.dumps(sample_doc()), encoding="utf-8")
    with pytest.raises(
        measurements.MeasurementError, match="but the file is launch_overhead_vector_add"
    ):
        measurements.load_launch_overhead("launch_overhead_vector_add")


# The figure and the table, from a hand-made record.


def test_the_figure_has_a_bar_per_launcher_and_series_and_its_caption() -> None:
    record = launch_sample()
    figure = plot_launch_overhead(record)
    (ax,) = figure.axes
    widths = sorted(bar.get_width() for bar in ax.patches)
    assert widths == sorted(v for values in record.series.values() for v in values)
    assert [label.get_text() for label in ax.get_yticklabels()] == LAUNCHERS
    assert ax.get_xlabel() == "µs per call"
    assert [t.get_text() for t in figure.legends[0].get_texts()] == list(record.providers)
    # The first launcher is at the top, and within it the first series.
    add_bars = [bar for bar in ax.patches if bar.get_width() in (20.0, 12.0, 5.0, 2.5)]
    assert ax.yaxis_inverted() and [b.get_width() for b in add_bars] == [20.0, 12.0, 5.0, 2.5]
    assert add_bars[0].get_y() < add_bars[1].get_y() < add_bars[2].get_y() < add_bars[3].get_y()
    figure.canvas.draw()
    sizes = [t.get_fontsize() for t in figure.findobj(matplotlib.text.Text) if t.get_text()]
    assert min(sizes) >= TEXT_PT
    assert caption_of(figure).startswith("Recorded by `nox -s docs` on NVIDIA H200")


def test_the_table_gives_each_launcher_minus_its_bare_launch() -> None:
    table = launch_table(launch_sample())
    assert table.header == ["launcher", "Triton", "bare launch", "launcher minus bare", "PyTorch",
                            "CUDA graph"]  # fmt: skip
    assert table.rows == [
        ["add", "20.0", "12.0", "+8.0", "5.0", "2.5"],
        ["softmax", "24.0", "14.0", "+10.0", "6.0", "3.0"],
        ["matmul", "40.0", "30.0", "+10.0", "8.0", "4.5"],
    ]
    assert "<td>+8.0</td>" in table._repr_html_()
    # The longest wait of a loop of calls: matmul's PyTorch loop waited 4 us, half a call
    # of 8 us. A graph's replay waits for all its calls: it is not a loop's wait.
    assert longest_final_wait(launch_sample()) == 0.5
    costs = launch_costs(launch_sample())
    assert [(c.launcher, c.python) for c in costs] == [
        ("add", 8.0),
        ("softmax", 10.0),
        ("matmul", 10.0),
    ]


# Missing, stale and draft: as the other records.


@pytest.fixture
def no_records(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty measurements folder, and a build that does not measure."""
    tmp_path = records_folder(monkeypatch, tmp_path)
    monkeypatch.setenv(bench.MEASURE_VARIABLE, "0")
    monkeypatch.setenv(bench.DRAFT_VARIABLE, "0")
    return tmp_path


def test_a_missing_record_fails_and_a_draft_draws_a_placeholder(
    no_records: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(measurements.MeasurementError, match="no recorded measurement for 'launch"):
        launch_record.launch_overhead_or_load()
    monkeypatch.setenv(bench.DRAFT_VARIABLE, "1")
    placeholder = launch_record.launch_overhead_or_load()
    assert placeholder.placeholder and placeholder.x == tuple(launch_cost.LAUNCHERS)
    figure = plot_launch_overhead(placeholder)
    assert "not measured yet" in [text.get_text() for text in figure.axes[0].texts]
    assert (figure.axes[0].get_xlabel(), figure.axes[0].get_ylabel()) == ("µs per call", "launcher")
    assert figure.axes[0].xaxis.label.get_fontsize() >= TEXT_PT
    assert caption_of(figure).startswith("Not measured yet: `launch_overhead`")
    table = launch_table(placeholder)
    assert table.rows == [] and "not measured yet" in str(table)


def test_a_stale_record_fails_naming_what_changed(
    no_records: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = dict(launch_record.launch_overhead_code("launch_overhead_softmax").files)
    files["kernels/softmax.py"] = "0000000000000000"
    doc = launch_doc_of(["softmax"], benchmark="launch_overhead_softmax",
                        code={"fingerprint": "0", "commit": COMMIT, "files": files})  # fmt: skip
    (no_records / "launch_overhead_softmax.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(
        measurements.StaleMeasurementError,
        match=rf"launch_overhead_softmax\.json is stale: .*\(kernels/softmax\.py changed since "
        rf"commit {COMMIT}",
    ):
        launch_record.load_current_launch_overhead("launch_overhead_softmax")
    monkeypatch.setenv(bench.DRAFT_VARIABLE, "1")
    assert launch_record.recorded_launch_overhead().placeholder


# A course of two families, vector_add (add) and softmax, as the stand-in records have.
TWO_FAMILIES = {"vector_add": ("add",), "softmax": ("softmax",)}


def two_families(monkeypatch: pytest.MonkeyPatch, rows: dict | None = None) -> None:
    """Make the course two families, with ``rows`` (by default :data:`TWO_FAMILIES`)."""
    rows = rows or TWO_FAMILIES
    monkeypatch.setattr(launch_cost, "FAMILY_ROWS", rows)
    monkeypatch.setattr(
        launch_cost, "LAUNCHERS", dict.fromkeys(r for f in rows.values() for r in f)
    )
    names = {measurements.launch_record_name(family): family for family in rows}
    monkeypatch.setattr(launch_record, "LAUNCH_RECORDS", names)


def write_current(folder: Path, family: str, launchers: list[str], commit: str = COMMIT) -> None:
    """Write ``family``'s launch-cost record of ``launchers``, of the code as it is now."""
    name = measurements.launch_record_name(family)
    code = launch_record.launch_overhead_code(name)
    doc = launch_doc_of(launchers, benchmark=name,
                        code={"fingerprint": code.fingerprint, "commit": commit,
                              "files": code.files})  # fmt: skip
    (folder / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")


def test_current_records_are_drawn_as_one(
    no_records: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_families(monkeypatch)
    write_current(no_records, "vector_add", ["add"])
    write_current(no_records, "softmax", ["softmax"])
    record = launch_record.launch_overhead_or_load()
    assert not record.placeholder and not record.fresh and record.x == ("add", "softmax")
    assert record.series["Triton"] == (20.0, 24.0) and record.time_us("PyTorch", "softmax") == 6.0
    assert record.final_wait_us["CUDA graph"] == (5000.0, 6000.0)
    assert set(record.inputs) == {"add", "softmax"} and record.code.commit == COMMIT
    assert {"kernels/vector_add.py", "kernels/softmax.py"} <= set(record.code.files)
    assert launch_table(record).rows[1][:4] == ["softmax", "24.0", "14.0", "+10.0"]


def test_records_of_two_commits_name_both(
    no_records: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_families(monkeypatch)
    # A runner that names its commit: the loader does not ask git about the two commits.
    monkeypatch.setenv(fingerprint.COMMIT_VARIABLE, "0123456789ab")
    write_current(no_records, "vector_add", ["add"])
    write_current(no_records, "softmax", ["softmax"], commit="fedcba987654")
    record = launch_record.recorded_launch_overhead()
    assert record.code.commit == f"{COMMIT}, fedcba987654"


def test_one_missing_family_fails_and_a_draft_draws_a_placeholder(
    no_records: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_families(monkeypatch)
    write_current(no_records, "vector_add", ["add"])
    with pytest.raises(measurements.MeasurementError,
                       match="no recorded measurement for 'launch_overhead_softmax'"):  # fmt: skip
        launch_record.recorded_launch_overhead()
    monkeypatch.setenv(bench.DRAFT_VARIABLE, "1")
    placeholder = launch_record.recorded_launch_overhead()
    assert placeholder.placeholder and placeholder.x == ("add", "softmax")
    assert "launch_overhead_softmax" in placeholder.details["reason"]


def test_a_record_that_misses_a_launcher_of_its_family_is_refused(
    no_records: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, a record without one of the course's launchers was drawn, and the table and
    # the lesson's sentences silently left it out.
    two_families(monkeypatch, {"vector_add": ("add", "matmul"), "softmax": ("softmax",)})
    write_current(no_records, "vector_add", ["add"])
    with pytest.raises(measurements.MeasurementError, match=r"missing \['matmul'\]"):
        launch_record.load_current_launch_overhead("launch_overhead_vector_add")


def test_an_unknown_record_name_is_refused_naming_the_records() -> None:
    with pytest.raises(measurements.MeasurementError, match="launch_overhead_vector_add"):
        launch_record.launch_overhead_code("launch_overhead_nothing")
    with pytest.raises(ValueError, match="no launch-cost row is named 'nothing'"):
        launch_cost.measure(["nothing"], synchronize=lambda: None)


def test_each_family_has_a_record_of_its_rows() -> None:
    assert list(launch_record.LAUNCH_RECORDS) == [
        measurements.launch_record_name(family) for family in launch_cost.FAMILY_ROWS
    ]
    assert [row for rows in launch_cost.FAMILY_ROWS.values() for row in rows] == list(
        launch_cost.LAUNCHERS
    )
    assert launch_cost.FAMILY_ROWS["vector_add"] == ("add",)
    assert launch_cost.FAMILY_MODULES["vector_add"] == vector_add.__name__


def test_a_familys_fingerprint_covers_its_launchers_and_timing_only() -> None:
    # A changed kernel re-measures its own family's row, not every launcher's.
    files = launch_record.launch_overhead_code("launch_overhead_vector_add").files
    for module in ("launch_cost", "vector_add", "launch", "family"):
        assert f"kernels/{module}.py" in files, module
    for module in ("softmax", "attention", "matmul", "timing", "measurements"):
        assert f"kernels/{module}.py" not in files, module
    matmul_files = launch_record.launch_overhead_code("launch_overhead_matmul").files
    assert "kernels/matmul.py" in matmul_files and "kernels/vector_add.py" not in matmul_files


def test_pages_that_import_the_timing_module_depend_on_the_records() -> None:
    names = bench.records_of({launch_cost.__name__, "kernels.triton_helpers.launch"})
    assert set(launch_record.LAUNCH_RECORDS) <= names
    assert bench.records_of({"kernels.operations.vector_add"}) == {"vector_add", "vector_add_fp16"}


def test_the_command_line_takes_launch_overhead_for_every_familys_record(
    capsys: pytest.CaptureFixture[str],
) -> None:
    recording.main(["launch_overhead", "--list"])
    printed = capsys.readouterr().out
    assert all(name in printed for name in launch_record.LAUNCH_RECORDS)


def test_the_harness_imports_no_launcher_and_nothing_that_imports_it_back() -> None:
    # A page that imports kernels.harness.bench reruns when a module it imports changes: were the
    # launch record's timing code among them, a comment in vector_add.py would rerun every
    # page. The launch record is imported by those that draw it, and by the command line.
    # bench once reached launch_record through importlib, out of the import graph, while
    # launch_record imported bench: a cycle that the graph did not show.
    harness = set(fingerprint.closure(["kernels.harness.bench"]))
    assert (
        "kernels.harness.launch_cost" not in harness
        and "kernels.operations.vector_add" not in harness
    )
    assert not harness & {"kernels.harness.launch_record", "kernels.harness.recording"}
    assert "kernels.harness.launch_cost" in fingerprint.closure(["kernels.harness.launch_record"])
    assert "kernels.harness.launch_record" in fingerprint.closure(["kernels.harness.recording"])


# The timing logic, with a stand-in clock and GPU.


class StandInGPU:
    """A clock in nanoseconds that only the calls advance. A call of ``name`` costs
    ``costs[name][repeat]`` ns, where ``repeat`` counts the timed loops of ``name`` so
    far (the warm-up counts as the first); a synchronisation costs ``wait_ns``. ``log``
    lists what ran."""

    def __init__(self, costs: dict[str, list[int]], wait_ns: int) -> None:
        self.costs, self.wait_ns = costs, wait_ns
        self.now, self.log = 0, []

    def clock(self) -> int:
        return self.now

    def call(self, name: str) -> Callable[[], None]:
        def run() -> None:
            # Each repeat times every name once, and ends each loop with a synchronisation.
            repeat = max(0, self.log.count("sync") - 1) // len(self.costs)
            self.now += self.costs[name][repeat]
            self.log.append(name)

        return run

    def synchronize(self) -> None:
        self.now += self.wait_ns
        self.log.append("sync")

    def calls(self) -> dict[str, Callable[[], None]]:
        return {name: self.call(name) for name in self.costs}


def test_host_time_is_the_loop_and_one_wait_over_the_calls() -> None:
    gpu = StandInGPU({"a": [5_000] * 3, "b": [12_000] * 3}, wait_ns=3_000)
    times = launch_cost.host_times_us(gpu.calls(), n_calls=10, repeats=3, warmup_calls=2,
                                      clock=gpu.clock, synchronize=gpu.synchronize)  # fmt: skip
    # (10 calls x 5 us + one 3 us wait) / 10 calls
    assert times["a"] == launch_cost.HostTime(per_call_us=5.3, final_wait_us=3.0)
    assert times["b"] == launch_cost.HostTime(per_call_us=12.3, final_wait_us=3.0)
    # Warm-up of each, one synchronisation, then the ways take turns, one wait each.
    timed = (["a"] * 10 + ["sync"] + ["b"] * 10 + ["sync"]) * 3
    assert gpu.log == ["a", "a", "b", "b", "sync", *timed]


def test_host_time_is_the_median_of_the_repeats() -> None:
    gpu = StandInGPU({"a": [1_000, 100_000, 2_000], "b": [7_000, 3_000, 5_000]}, wait_ns=0)
    times = launch_cost.host_times_us(gpu.calls(), n_calls=4, repeats=3, warmup_calls=0,
                                      clock=gpu.clock, synchronize=gpu.synchronize)  # fmt: skip
    # One slow repeat of a (100 us) does not move its time.
    assert times["a"].per_call_us == 2.0 and times["b"].per_call_us == 5.0


def test_garbage_collection_is_paused_while_timing_and_restored() -> None:
    enabled = []
    gpu = StandInGPU({"a": [1] * 2}, wait_ns=0)
    launch_cost.host_times_us({"a": lambda: enabled.append(gc.isenabled())}, n_calls=2,
                              repeats=1, warmup_calls=1, clock=gpu.clock,
                              synchronize=gpu.synchronize)  # fmt: skip
    assert enabled == [True, False, False] and gc.isenabled()

    def fails() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        launch_cost.host_times_us({"a": fails}, n_calls=1, repeats=1, warmup_calls=0,
                                  clock=gpu.clock, synchronize=gpu.synchronize)  # fmt: skip
    assert gc.isenabled()


def test_a_graph_is_timed_as_one_replay_over_its_calls() -> None:
    gpu = StandInGPU({"a": [5_000] * 3}, wait_ns=30_000)
    captured = []

    def capture(call: Callable[[], object], n_calls: int) -> Callable[[], None]:
        captured.append(n_calls)
        return lambda: [call() for _ in range(n_calls)]

    time = launch_cost.graph_host_time(gpu.call("a"), n_calls=10, repeats=3, clock=gpu.clock,
                                       synchronize=gpu.synchronize, capture=capture)  # fmt: skip
    # (10 calls x 5 us + one 30 us wait) / 10 calls; the wait is the replay's whole.
    assert time == launch_cost.HostTime(per_call_us=8.0, final_wait_us=30.0)
    assert captured == [10]


def test_a_launcher_no_graph_can_hold_has_no_graph_time_and_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def capture(call: Callable[[], object], n_calls: int) -> Callable[[], None]:
        raise RuntimeError("operation not permitted when stream is capturing\nmore")

    ticks = iter(range(1_000, 10**9, 1_000))  # a clock that moves 1 us at each reading
    costs = launch_cost.measure(n_calls=1, repeats=1, warmup_calls=0,
                                clock=lambda: next(ticks), synchronize=lambda: None,
                                capture=capture)  # fmt: skip
    assert all(c.graph is None for c in costs)
    assert costs[0].graph_unavailable == (
        "RuntimeError: operation not permitted when stream is capturing"
    )
    monkeypatch.setattr(launch_record, "interpreted", lambda: False)
    monkeypatch.setattr(launch_record.launch_cost, "measure", lambda rows: costs[:2])
    # A clean commit of HEAD's history, whatever state the working tree is in: the record
    # is saved and loaded back.
    monkeypatch.setattr(launch_record.fingerprint, "commit", lambda: COMMIT)
    environment = dict.fromkeys(measurements.ENVIRONMENT_KEYS, "stand-in")
    monkeypatch.setattr(provenance, "capture", lambda: {**environment, "date": "2026-12-04"})
    record = launch_record.measure_launch_overhead("launch_overhead_vector_add")
    assert record.series["CUDA graph"] == (None, None)
    first, second = (cost.launcher for cost in costs[:2])
    assert record.unavailable == {"CUDA graph": f"{first}: RuntimeError: operation not permitted "
                                  f"when stream is capturing; {second}: RuntimeError: operation "
                                  "not permitted when stream is capturing"}  # fmt: skip
    assert f"CUDA graph n/a: {first}: RuntimeError" in str(launch_table(record))
    records_folder(monkeypatch, tmp_path, measurements.gpu_slug(environment["gpu"]))
    measurements.save(record)
    assert measurements.load_launch_overhead("launch_overhead_vector_add") == record


@cpu_path
def test_timing_refuses_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match="measured on a CUDA GPU only"):
        launch_cost.host_times_us({"a": lambda: None})
    with pytest.raises(RuntimeError, match="measured on a CUDA GPU only"):
        launch_cost.measure()
    with pytest.raises(RuntimeError, match="measured on a CUDA GPU only"):
        launch_record.measure_launch_overhead("launch_overhead_vector_add")
    with pytest.raises(SystemExit) as exit_info:
        recording.main(["launch_overhead"])
    assert exit_info.value.code == 2


def test_measure_checks_and_times_every_launcher_three_ways() -> None:
    # A clock that moves 1 us at each reading: each timed loop reads it three times.
    now = [0]

    def clock() -> int:
        now[0] += 1_000
        return now[0]

    def capture(call: Callable[[], object], n_calls: int) -> Callable[[], None]:
        # A stand-in for the graph: the calls, run again at each replay.
        return lambda: [call() for _ in range(n_calls)]

    costs = launch_cost.measure(n_calls=1, repeats=1, warmup_calls=0, clock=clock,
                                synchronize=lambda: None, capture=capture)  # fmt: skip
    assert [cost.launcher for cost in costs] == list(launch_cost.LAUNCHERS)
    each = launch_cost.HostTime(per_call_us=2.0, final_wait_us=1.0)
    assert all(c.triton == c.bare == c.torch == c.graph == each for c in costs)
    assert all(c.graph_unavailable is None for c in costs)
    (add,) = (cost for cost in costs if cost.launcher == "add")
    assert add.inputs == "x (4096,) float32, y (4096,) float32"


def test_measure_launch_overhead_records_the_three_series(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A committed tree (this checkout may hold uncommitted work).
    monkeypatch.setenv(fingerprint.COMMIT_VARIABLE, "0123456789ab")

    def host_time(us: float) -> launch_cost.HostTime:
        return launch_cost.HostTime(per_call_us=us, final_wait_us=us / 10)

    fake = [
        launch_cost.LauncherCost(name, f"inputs of {name}", host_time(20.0 + i), host_time(10.0),
                                 host_time(5.0), host_time(2.0))
        for i, name in enumerate(launch_cost.FAMILY_ROWS["matmul"])
    ]  # fmt: skip
    asked = []
    monkeypatch.setattr(launch_record, "interpreted", lambda: False)
    monkeypatch.setattr(
        launch_record.launch_cost, "measure", lambda rows: asked.append(rows) or fake
    )
    environment = dict.fromkeys(measurements.ENVIRONMENT_KEYS, "stand-in")
    monkeypatch.setattr(provenance, "capture", lambda: {**environment, "date": "2026-12-03"})
    records_folder(monkeypatch, tmp_path, gpu="stand-in")
    record = launch_record.measure_launch_overhead("launch_overhead_matmul")
    assert asked == [launch_cost.FAMILY_ROWS["matmul"]]
    assert record.fresh and record.x == launch_cost.FAMILY_ROWS["matmul"]
    assert record.benchmark == "launch_overhead_matmul"
    assert record.series["Triton"] == tuple(20.0 + i for i in range(len(fake)))
    assert record.series["bare launch"] == (10.0,) * len(fake)
    assert record.series["PyTorch"] == (5.0,) * len(fake)
    assert record.series["CUDA graph"] == (2.0,) * len(fake) and not record.unavailable
    assert record.inputs["matmul"] == "inputs of matmul"
    assert [record.final_wait_us[name][0] for name in record.providers] == [2.0, 1.0, 0.5, 0.2]
    assert "final_wait_us" not in record.details
    assert record.code == launch_record.launch_overhead_code("launch_overhead_matmul")
    measurements.save(record)
    assert measurements.load_launch_overhead("launch_overhead_matmul") == record


# The launch cases, in the interpreter (on a GPU, on tiny GPU inputs).


@pytest.mark.parametrize("name", launch_cost.LAUNCHERS)
def test_each_case_makes_the_same_call_three_ways(name: str) -> None:
    case = launch_cost.LAUNCHERS[name](kernel_device())
    launch_cost.check_case(name, case)  # the bare launch writes what the launcher returns
    out, reference = case.triton(), case.torch()
    if name == "dropout":  # PyTorch draws other random numbers: compare what is kept
        kept = (out != 0) & (reference != 0)
        assert kept.any() and torch.equal(out[kept], reference[kept])
        return
    tolerance = 1e-2 if out.dtype == torch.float16 else 1e-5
    torch.testing.assert_close(out, reference, atol=tolerance, rtol=tolerance)


def test_a_bare_launch_that_differs_from_its_launcher_is_caught() -> None:
    case = launch_cost.LAUNCHERS["add"](kernel_device())
    wrong = LaunchCase(case.inputs, case.triton, lambda: case.bare_out.zero_(),
                                   case.torch, case.bare_out)  # fmt: skip
    with pytest.raises(AssertionError, match="add: the bare launch does not write"):
        launch_cost.check_case("add", wrong)


# The kernels each launcher launches, by the module attribute it looks them up by.
KERNELS = {
    "add": [(vector_add, "add_tail_apart_kernel")],
    "dropout": [(dropout, "dropout_kernel")],
    "softmax": [(softmax, "softmax_kernel")],
    "rms_norm": [(rms_norm, "rms_norm_kernel")],
    "layer_norm": [(layer_norm, "layer_norm_forward_kernel")],
    "cross_entropy": [(cross_entropy, "cross_entropy_forward_kernel"),
                      (cross_entropy, "mean_loss_kernel")],
    "matmul": [(matmul, "tuned_matmul_tma_kernel"), (matmul, "tuned_matmul_kernel")],
    "attention": [(attention, "attention_forward_kernel")],
    "swiglu": [(swiglu, "swiglu_forward_kernel")],
}  # fmt: skip


class Recorder:
    """Stands in for a kernel: records each ``kernel[grid](*args, **kwargs)``, and each
    ``kernel.run(*args, grid=grid, ...)`` (how :mod:`kernels.triton_helpers.direct_launch`
    launches a specialisation the first time), and runs it."""

    def __init__(self, name: str, kernel: object, launches: list) -> None:
        self.name, self.kernel, self.launches = name, kernel, launches

    def __getitem__(self, grid: object) -> Callable[..., object]:
        def launch(*args: object, **kwargs: object) -> object:
            self.launches.append((self.name, grid, args, kwargs))
            return self.kernel[grid](*args, **kwargs)

        return launch

    def run(self, *args: object, grid: object, warmup: bool, **kwargs: object) -> object:
        self.launches.append((self.name, grid, args, kwargs))
        return self.kernel.run(*args, grid=grid, warmup=warmup, **kwargs)

    def __getattr__(self, attribute: str) -> object:
        # An autotuner's own attributes (its key, its argument names), which
        # kernels.triton_helpers.launch.launch_tuned reads before its first launch goes through
        # here.
        if attribute == "params" and not hasattr(self.kernel, "params"):
            # The interpreter's kernels have no params, whose defaults direct_launch reads.
            signature = inspect.signature(self.kernel.fn).parameters.values()
            return [SimpleNamespace(name=p.name, default=p.default) for p in signature]
        return getattr(self.kernel, attribute)


def _comparable(value: object) -> object:
    # What makes two launches the same: tensors by layout (the launcher allocates its
    # own outputs), descriptors by what they describe, everything else as it is.
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype, value.stride())
    if isinstance(value, TensorDescriptor):
        return ("descriptor", tuple(value.shape), tuple(value.strides), value.base.dtype)
    if callable(value):  # an autotuned kernel's grid
        return value({"BLOCK_M": 16, "BLOCK_N": 32})
    return value


def _launch_of(launch: tuple) -> tuple:
    name, grid, args, kwargs = launch
    return (name, _comparable(grid), [_comparable(a) for a in args],
            {k: _comparable(v) for k, v in kwargs.items()})  # fmt: skip


@pytest.mark.parametrize("direct", [False, True], ids=["kernel-grid", "direct"])
@pytest.mark.parametrize("name", launch_cost.LAUNCHERS)
def test_the_bare_launch_is_the_launchers_own_launch(
    name: str, direct: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    launches: list = []
    # A choice launch_tuned remembers, or a plan matmul made from one, would skip the
    # recorder's launch.
    monkeypatch.setattr(launch, "_chosen", {})
    monkeypatch.setattr(matmul, "_tma_plans", {})
    # The two ways kernels.triton_helpers.direct_launch launches a kernel the first time: through
    # kernel[grid] (the interpreter, or DIRECT off) and through kernel.run (on a GPU).
    # Without a GPU, the direct way runs the interpreter's kernel.run, with a stand-in
    # for the driver (only its current device is asked for, to key the cache).
    monkeypatch.setattr(direct_launch, "DIRECT", direct)
    monkeypatch.setattr(direct_launch, "_INTERPRETED", interpreted() and not direct)
    monkeypatch.setattr(direct_launch, "_compiled", {})
    if direct and interpreted():
        stand_in = SimpleNamespace(active=SimpleNamespace(get_current_device=lambda: 0))
        monkeypatch.setattr(direct_launch, "driver", stand_in)
    for module, attribute in KERNELS[name]:
        recorder = Recorder(attribute, getattr(module, attribute), launches)
        monkeypatch.setattr(module, attribute, recorder)
    case = launch_cost.LAUNCHERS[name](kernel_device())
    case.triton()
    by_launcher = [_launch_of(launch) for launch in launches]
    launches.clear()
    case.bare()
    assert by_launcher and [_launch_of(launch) for launch in launches] == by_launcher

"""The recorded measurement files against the contract, and the contract's own checks."""

import dataclasses
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from records import (
    CEILING,
    X,
    committed_doc,
    launch_doc,
    records_folder,
    sample,
    sample_doc,
    within,
)

from kernels.harness import ceilings, fingerprint, launch_cost, measurements, shards
from kernels.harness.bench import discover, load_current
from kernels.harness.launch_record import LAUNCH_RECORDS, load_current_launch_overhead
from kernels.harness.measurements import MeasurementError
from kernels.harness.recording import stale_report

# Every GPU's records.
FILES = sorted(measurements.MEASUREMENTS_ROOT.glob("*/*.json"))
BENCHMARKS = discover()


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_file_follows_the_contract(path: Path) -> None:
    record = measurements.read(path)
    assert record.benchmark == path.stem
    assert measurements.gpu_slug(record.environment["gpu"]) == path.parent.name
    if isinstance(record, measurements.LaunchOverhead):
        assert record.metric == "us"
    else:
        products = {f"cuBLAS {name} matmul" for name in ceilings.SHORT_NAMES.values()}
        assert record.ceiling.name in {"device copy", *products}
    assert "NVIDIA" in record.environment["gpu"], "recorded files come from GPU runs"


@pytest.mark.parametrize("name", BENCHMARKS)
def test_each_benchmark_has_a_record_of_its_current_code_and_spec(name: str) -> None:
    spec = BENCHMARKS[name]
    record = load_current(spec)  # raises if the code changed since it was recorded
    assert record.x_name == spec.x_name
    assert record.x == tuple(spec.gpu_sizes)
    assert record.work == tuple(spec.work(size, spec.dtype) for size in spec.gpu_sizes)
    assert record.providers == spec.series_names
    expected_ceiling = (
        "device copy"
        if spec.metric == "GB/s"
        else f"cuBLAS {ceilings.SHORT_NAMES[spec.dtype]} matmul"
    )
    assert record.ceiling.name == expected_ceiling


@pytest.mark.parametrize("name", LAUNCH_RECORDS)
def test_each_familys_launch_cost_record_is_of_its_current_code_and_rows(name: str) -> None:
    # raises if the family's code or the timing code changed since it was recorded
    record = load_current_launch_overhead(name)
    assert record.x == launch_cost.FAMILY_ROWS[LAUNCH_RECORDS[name]]
    assert record.details["timing"]["calls"] == launch_cost.CALLS


def test_each_gpus_records_come_from_that_gpu_and_a_committed_tree() -> None:
    assert measurements.PRIMARY_GPU in measurements.recorded_gpus()
    for gpu in measurements.recorded_gpus():
        records = [measurements.read(path) for path in FILES if path.parent.name == gpu]
        assert len({record.environment["gpu"] for record in records}) == 1, gpu
    assert not any(measurements.read(path).code.commit.endswith("-dirty") for path in FILES)


def test_the_records_of_one_kernel_module_come_from_one_commit() -> None:
    """A page sets the benchmarks of its module side by side (matmul's square, linear-layer
    and skinny products), so they are re-measured together. Modules may differ: each
    record's fingerprint holds it to its own code (``load_current`` refuses a stale one),
    so a change to one kernel needs only its module's records again, not a whole new set."""
    for gpu in measurements.recorded_gpus():
        commits: dict[str, set[str]] = {}
        for spec in BENCHMARKS.values():
            if spec.name in measurements.recorded_benchmarks(gpu):
                commits.setdefault(spec.module, set()).add(load_current(spec, gpu).code.commit)
        assert {module: c for module, c in commits.items() if len(c) > 1} == {}, gpu


def test_every_recording_belongs_to_a_benchmark() -> None:
    assert {path.stem for path in FILES} <= {*BENCHMARKS, *LAUNCH_RECORDS}


def test_a_record_round_trips_through_its_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tmp_path = records_folder(monkeypatch, tmp_path)
    record = sample(same_size_copy=[1.0] * len(X), unavailable={"PyTorch": "at N=1: gone"})
    path = measurements.save(record)
    assert path == tmp_path / "vector_add.json"
    assert measurements.load("vector_add") == record
    assert json.loads(path.read_text(encoding="utf-8"))["pass"] == "forward"


def test_worst_fraction_of_ceiling_takes_the_minimum_over_large_sizes() -> None:
    doc = sample_doc()
    doc["series"]["Triton"] = [CEILING * share for share in (0.1, 0.8, 0.9, 0.95, 0.99)]
    record = measurements.from_json(doc, "sample.json")
    assert measurements.worst_fraction_of_ceiling(record, "Triton", X[1]) == pytest.approx(0.8)
    with pytest.raises(measurements.MeasurementError, match="no size of at least"):
        measurements.worst_fraction_of_ceiling(record, "Triton", 2**30)


def broken(path: str, value: object) -> dict:
    doc = sample_doc()
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
        (broken("call_series", KeyError), "missing key 'call_series'"),
        (broken("work", KeyError), "missing key 'work'"),
        (broken("code", KeyError), "missing key 'code'"),
        (broken("series.Triton", [1.0]), "series['Triton'] must have one value per x"),
        (broken("series.Triton", [1.0, float("nan"), 1, 1, 1]), "not a positive number"),
        (broken("series.Triton", [1.0, -2.0, 1, 1, 1]), "not a positive number"),
        (broken("series.Triton", KeyError), "'series' has no 'Triton' series"),
        (broken("series", {"Triton": [1.0] * 5}), "'series' has no baseline"),
        (broken("series.PyTorch", [None] * 5), "holds null but 'unavailable' gives no reason"),
        (broken("call_series.PyTorch", KeyError), "the providers of 'series'"),
        (broken("work", [1.0, 2.0]), "'work' must have one value per x"),
        (broken("x", [2, 1, 3, 4, 5]), "strictly increasing"),
        (broken("same_size_copy", [1.0]), "'same_size_copy' must have one value per x"),
        (broken("same_size_copy", [1.0, 0.0, 1, 1, 1]), "'same_size_copy' holds 0.0"),
        (broken("peak_memory_mb", {"Triton": [1.0]}), "peak_memory_mb['Triton'] must have"),
        (broken("peak_memory_mb", {"Triton": ["a"] * 5}), "peak_memory_mb['Triton'] holds 'a'"),
        (broken("ceiling.value", 0), "'ceiling.value' must be a positive number"),
        (broken("ceiling.timings", KeyError), "'ceiling.timings' must be a positive integer"),
        (broken("code.fingerprint", ""), "'code.fingerprint' must be a non-empty string"),
        (broken("code.files", {}), "'code.files' must be an object of path -> hash"),
        (broken("environment.gpu", KeyError), "'environment.gpu' must be a non-empty string"),
        (broken("environment.date", "yesterday"), "not an ISO 8601 date"),
        (broken("environment.date", "2099-01-01T00:00:00Z"), "'environment.date' is in the future"),
        (broken("environment.date", "2099-01-01T00:00:00"), "'environment.date' is in the future"),
        (broken("unavailable", {"PyTorch": 3}), "'unavailable' must be an object"),
        ([], "the top level must be a JSON object"),
    ],
)
def test_contract_violations_are_named(doc: object, message: str) -> None:
    with pytest.raises(
        measurements.MeasurementError,
        match=r"^somefile\.json: .*" + re.escape(message),
    ):
        measurements.from_json(doc, "somefile.json")


def test_peak_memory_may_be_null_where_a_provider_ran_out_of_memory() -> None:
    record = sample(peak_memory_mb={"Triton": [1.0] * 4 + [None]})
    assert record.peak_memory_mb == {"Triton": (1.0, 1.0, 1.0, 1.0, None)}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"{", "not valid JSON"),
    ],
    ids=["not-utf-8", "nested", "not-json"],  # the bytes themselves would make a 200 kB id
)
def test_unreadable_files_are_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: bytes, message: str
) -> None:
    tmp_path = records_folder(monkeypatch, tmp_path)
    (tmp_path / "vector_add.json").write_bytes(content)
    with pytest.raises(measurements.MeasurementError, match=r"vector_add\.json: " + message):
        measurements.load("vector_add")


def test_a_file_must_hold_the_benchmark_and_metric_it_is_named_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tmp_path = records_folder(monkeypatch, tmp_path)
    (tmp_path / "softmax.json").write_text(json.dumps(sample_doc()), encoding="utf-8")
    with pytest.raises(measurements.MeasurementError, match=r"but the file is softmax\.json"):
        measurements.load("softmax")
    (tmp_path / "vector_add.json").write_text(json.dumps(sample_doc()), encoding="utf-8")
    with pytest.raises(measurements.MeasurementError, match="the benchmark measures TFLOP/s"):
        measurements.load("vector_add", metric="TFLOP/s")


def test_missing_recording_says_how_to_make_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tmp_path = records_folder(monkeypatch, tmp_path)
    with pytest.raises(measurements.MeasurementError, match="run `nox -s bench` on that GPU"):
        measurements.load("vector_add")


def test_save_refuses_a_broken_record(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tmp_path = records_folder(monkeypatch, tmp_path)
    record = dataclasses.replace(sample(), x=())
    with pytest.raises(measurements.MeasurementError, match="'x' must be a non-empty list"):
        measurements.save(record)
    assert not (tmp_path / "vector_add.json").exists()


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _zero_device(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _directory(path: Path) -> None:
    path.mkdir()


def _link_loop(path: Path) -> None:
    path.symlink_to(path.name)


def _huge_integer(path: Path) -> None:
    path.write_text(json.dumps(sample_doc()).replace('"x": [', '"x": [' + "7" * 5000 + ", "))


def _too_large(path: Path) -> None:
    # A record whose JSON is whole, past the bound: a record is far smaller.
    path.write_text(json.dumps(sample_doc()) + " " * measurements.MAX_FILE_BYTES)


def _duplicate_key(path: Path) -> None:
    path.write_text(json.dumps(sample_doc())[:-1] + ', "dtype": "float16"}')


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (_fifo, r"cannot read a record \(not a regular file"),
        (_zero_device, r"cannot read a record \(not a regular file"),
        (_directory, r"cannot read a record \(Is a directory\)"),
        (_link_loop, r"no recorded measurement"),
        (_huge_integer, r"not a record \(.*digits"),
        (_duplicate_key, r"not a record \(the key 'dtype' appears twice"),
        (_too_large, r"cannot read a record \(larger than 1,000,000 bytes\)"),
    ],
    ids=[
        "fifo",
        "dev-zero",
        "directory",
        "link-loop",
        "huge-integer",
        "duplicate-key",
        "too-large",
    ],
)
def test_a_file_that_is_no_record_is_refused_by_name_without_hanging(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, make: Callable[[Path], None], message: str
) -> None:
    # Before: a FIFO hung the reader, /dev/zero filled the memory, a directory, a link
    # loop and a 5,000-digit integer escaped as tracebacks, a repeated key was accepted.
    tmp_path = records_folder(monkeypatch, tmp_path)
    make(tmp_path / "vector_add.json")
    with within(10), pytest.raises(measurements.MeasurementError,
                                   match=r"vector_add\.json: " + message):  # fmt: skip
        measurements.load("vector_add")


def test_a_record_is_written_whole_or_not_at_all(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tmp_path = records_folder(monkeypatch, tmp_path)
    path = measurements.save(sample())
    before = path.read_bytes()
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)

    def full_disk(descriptor: int) -> None:
        raise OSError(28, "No space left on device")

    # A write that fails before it is whole on disk (a full disk, a killed run) leaves
    # the old record and no temporary file; before, the record was cut short.
    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        measurements.save(dataclasses.replace(sample(), x_name="rows"))
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vector_add.json"]


def test_a_record_that_is_a_link_is_replaced_not_written_through(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = records_folder(monkeypatch, tmp_path / "records")
    users_file = tmp_path / "notes.txt"
    users_file.write_text("mine")
    (folder / "vector_add.json").symlink_to(users_file)
    path = measurements.save(sample())
    assert users_file.read_text() == "mine"
    assert not path.is_symlink() and measurements.read(path) == sample()


def _edited(doc: dict) -> Callable[[Callable[[dict], None]], dict]:
    def edit(change: Callable[[dict], None]) -> dict:
        copy = json.loads(json.dumps(doc))
        change(copy)
        return copy

    return edit


def _set(path: str, value: object) -> Callable[[dict], None]:
    # A change of one value, by a dotted path ("series.Triton.0").
    def change(doc: dict) -> None:
        *parents, last = path.split(".")
        for part in parents:
            doc = doc[int(part)] if isinstance(doc, list) else doc[part]
        if isinstance(doc, list):
            doc[int(last)] = value
        else:
            doc[last] = value

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set("x.0", 1000), r"'x' is \(1000, "),
        (_set("work.1", 1.0), r"'work' at N=\d+ is 1; the spec counts"),
        (_set("dtype", "float16"), r"'dtype' is 'float16'; the benchmark's spec says 'float32'"),
        (_set("x_name", "rows"), r"'x_name' is 'rows'"),
        (_set("pass", "backward"), r"'pass' is 'backward'; the spec times the forward pass"),
        (_set("series.Triton.2", None), r"Triton has no rate at N=\["),
        (_set("check.worst_relative_error", 0.5), r"'check.worst_relative_error' is 0.5"),
        (_set("series.PyTorch.0", 1e6), r"series\['PyTorch'\] at N=\d+ is 1e\+06 GB/s, more"),
        (_set("call_series.Triton.1", 1e6), r"call_series\['Triton'\] at N=\d+ is 1e\+06"),
        (lambda doc: doc["series"].pop("torch.compile"), r"the series are \["),
        (lambda doc: doc.pop("pass"), r"'pass' is missing; the spec times the forward pass"),
        (_set("check.worst_relative_error", False), r"'check.worst_relative_error' is False"),
        (_set("check.worst_relative_error", True), r"'check.worst_relative_error' is True"),
    ],
    ids=["sizes", "work", "dtype", "x-name", "pass", "triton-null", "failed-check",
         "rate-100x-ceiling", "call-rate", "series-missing", "pass-missing", "check-false",
         "check-true"],
)  # fmt: skip
def test_a_record_that_disagrees_with_its_spec_check_or_ceiling_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, change: Callable[[dict], None], message: str
) -> None:
    # Each edit was accepted by the loaders, drawn on the page and passed by --stale.
    doc = committed_doc(measurements.path_for("vector_add"))
    edited = _edited(doc)(change)
    if "Triton has no rate" in message:
        edited["call_series"]["Triton"][2] = None
        edited.setdefault("unavailable", {})["Triton"] = "edited by hand"
    if "the series are" in message:
        edited["call_series"].pop("torch.compile")
    tmp_path = records_folder(monkeypatch, tmp_path, measurements.PRIMARY_GPU)
    (tmp_path / "vector_add.json").write_text(json.dumps(edited), encoding="utf-8")
    with pytest.raises(measurements.MeasurementError, match=r"vector_add\.json: " + message):
        load_current(BENCHMARKS["vector_add"])


def _triton_null_everywhere(doc: dict) -> None:
    for key in ("series", "call_series"):
        doc[key]["Triton"] = [None] * len(doc["x"])
    doc["unavailable"] = {"Triton": "edited by hand"}


VECTOR_ADD_X = committed_doc(measurements.path_for("vector_add"))["x"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set("x.0", True), r"'x' must be a non-empty list of positive integers"),
        (_set("work.0", True), r"'work' holds True, which is not a positive number"),
        (_set("series.Triton.0", True), r"series\['Triton'\] holds True, which is not"),
        (_set("call_series.PyTorch.1", True), r"call_series\['PyTorch'\] holds True"),
        (_set("same_size_copy.2", True), r"'same_size_copy' holds True"),
        (_set("ceiling.value", True), r"'ceiling\.value' must be a positive number"),
        (_set("ceiling.timings", True), r"'ceiling\.timings' must be a positive integer"),
        (_set("x_name", 7), r"'x_name' must be a non-empty string"),
        (_set("x_name", ["N"]), r"'x_name' must be a non-empty string"),
        (_set("dtype", 32), r"'dtype' must be a non-empty string"),
        (_set("dtype", "float33"), r"'dtype' is 'float33'; the benchmark's spec says 'float32'"),
        (_triton_null_everywhere,
         r"Triton has no rate at N=\[" + ", ".join(map(str, VECTOR_ADD_X)) + r"\]; Triton must"),
    ],
    ids=["size-true", "work-true", "rate-true", "call-rate-true", "copy-rate-true",
         "ceiling-true", "timings-true", "x-name-number", "x-name-list", "dtype-number",
         "dtype-no-dtype", "triton-null-everywhere"],
)  # fmt: skip
def test_a_record_with_a_boolean_for_a_number_or_an_odd_name_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, change: Callable[[dict], None], message: str
) -> None:
    # JSON's true is Python's True, an int equal to 1: none of these may pass for a
    # number, and a name must be a string the spec knows.
    edited = _edited(committed_doc(measurements.path_for("vector_add")))(change)
    folder = records_folder(monkeypatch, tmp_path, measurements.PRIMARY_GPU)
    (folder / "vector_add.json").write_text(json.dumps(edited), encoding="utf-8")
    with pytest.raises(measurements.MeasurementError, match=r"vector_add\.json: " + message):
        load_current(BENCHMARKS["vector_add"])
    problems = stale_report({"vector_add": BENCHMARKS["vector_add"]}, launch_overhead=False)
    assert len(problems) == 1 and re.search(r"vector_add\.json: " + message, problems[0])


def test_stale_names_a_fifo_or_a_directory_named_like_a_record_without_hanging(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = records_folder(monkeypatch, tmp_path, measurements.PRIMARY_GPU)
    os.mkfifo(folder / "vector_add.json")
    (folder / "softmax.json").mkdir()
    specs = {name: BENCHMARKS[name] for name in ("softmax", "vector_add")}
    with within(10):
        problems = stale_report(specs, launch_overhead=False)
    assert problems == [
        f"{folder}/softmax.json: cannot read a record (Is a directory)",
        f"{folder}/vector_add.json: cannot read a record (not a regular file (prw-r--r--))",
    ]


def test_the_committed_records_agree_with_their_specs_checks_and_ceilings() -> None:
    # What the test above refuses, none of the records in the repository does.
    for spec in BENCHMARKS.values():
        load_current(spec)


@pytest.mark.parametrize(
    ("device_name", "slug"),
    [
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("NVIDIA A100-PCIE-40GB", "a100-pcie"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ],
)
def test_a_gpus_records_folder_is_named_after_its_model(device_name: str, slug: str) -> None:
    assert measurements.gpu_slug(device_name) == slug


@pytest.mark.parametrize("device_name", ["", "NVIDIA", "<b>80GB</b>"])
def test_a_device_name_without_a_model_is_refused(device_name: str) -> None:
    with pytest.raises(measurements.MeasurementError, match="cannot name a records folder"):
        measurements.gpu_slug(device_name)


@pytest.mark.parametrize("gpu", ["H100", "../h100", "h100/x", ""])
def test_a_folder_name_that_is_no_slug_is_refused(gpu: str) -> None:
    with pytest.raises(measurements.MeasurementError, match="is not a GPU's records folder"):
        measurements.path_for("vector_add", gpu)


def test_a_record_is_saved_in_its_own_gpus_folder_and_read_from_there_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    records_folder(monkeypatch, tmp_path, gpu="h100")
    environment = {**sample_doc()["environment"], "gpu": "NVIDIA GeForce RTX 4090"}
    record = sample(environment=environment)
    path = measurements.save(record)
    assert path == tmp_path / "rtx-4090" / "vector_add.json"
    assert measurements.recorded_gpus() == ["h100", "rtx-4090"]  # the primary first
    assert measurements.load("vector_add", gpu="rtx-4090") == record
    with pytest.raises(measurements.MeasurementError, match="no recorded measurement"):
        measurements.load("vector_add")  # the primary GPU has none
    # A record copied into another GPU's folder is refused, naming where it belongs.
    (tmp_path / "h100" / "vector_add.json").write_bytes(path.read_bytes())
    with pytest.raises(
        measurements.MeasurementError,
        match=r"h100/vector_add\.json: recorded on the NVIDIA GeForce RTX 4090, not on the "
        r"h100 .* belongs in .*rtx-4090",
    ):
        measurements.load("vector_add")


def test_a_record_whose_gpu_name_holds_markup_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = records_folder(monkeypatch, tmp_path)
    doc = sample_doc()
    doc["environment"]["gpu"] = "NVIDIA H200<script>"
    (folder / "vector_add.json").write_text(json.dumps(doc), encoding="utf-8")
    # Before, the error did not say which file.
    with pytest.raises(
        measurements.MeasurementError,
        match=r"vector_add\.json: 'environment\.gpu': cannot name a records folder",
    ):
        measurements.load("vector_add")


# ---- What the loaders refuse besides the contract --------------------------------------


def _committed(name: str) -> dict:
    """The primary GPU's committed record of ``name``, as its file's JSON object."""
    return committed_doc(measurements.path_for(name))


def _folder_of(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, docs: dict[str, dict], gpu: str | None = None
) -> Path:
    """A records folder of ``gpu`` (the primary's name by default), made the primary, that
    holds ``docs`` by benchmark name."""
    folder = records_folder(monkeypatch, tmp_path, gpu or measurements.PRIMARY_GPU)
    for name, doc in docs.items():
        (folder / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    return folder


@pytest.mark.parametrize("check", [[], "ok", 3, None], ids=["list", "string", "number", "null"])
def test_a_check_that_is_not_an_object_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, check: object
) -> None:
    # Before: an AttributeError from bench's `.get("check", {}).get(...)`, out of the
    # loaders and out of --stale.
    doc = {**_committed("vector_add"), "check": check}
    _folder_of(monkeypatch, tmp_path, {"vector_add": doc})
    with pytest.raises(MeasurementError, match=r"vector_add\.json: 'check' must be an object"):
        load_current(BENCHMARKS["vector_add"])
    problems = stale_report({"vector_add": BENCHMARKS["vector_add"]}, launch_overhead=False)
    assert any("vector_add.json: 'check' must be an object" in line for line in problems)


def test_a_timing_that_is_not_an_object_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The shard plan reads `timing.measured_s` as the check's error is read: before, a
    # list there was an AttributeError out of `--list`.
    doc = {**_committed("vector_add"), "timing": []}
    _folder_of(monkeypatch, tmp_path, {"vector_add": doc})
    with pytest.raises(MeasurementError, match=r"vector_add\.json: 'timing' must be an object"):
        load_current(BENCHMARKS["vector_add"])
    assert shards.measured_seconds("vector_add") is None
    with pytest.raises(MeasurementError, match=r"^x\.json: 'timing' must be an object"):
        measurements.launch_overhead_from_json(launch_doc(timing="fast"), "x.json")


@pytest.mark.parametrize("seconds", [True, False, "12", 0, -3.0])
def test_a_measuring_time_that_is_no_positive_number_is_not_read_as_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seconds: object
) -> None:
    # Before: `"measured_s": true` weighed its benchmark as one second in the shard plan.
    doc = _committed("vector_add")
    doc["timing"]["measured_s"] = seconds
    _folder_of(monkeypatch, tmp_path, {"vector_add": doc})
    assert shards.measured_seconds("vector_add") is None


def test_sizes_written_as_floats_are_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # 16777216.0 equals the spec's 16777216, so the spec's check let it through.
    doc = _committed("vector_add")
    doc["x"] = [float(size) for size in doc["x"]]
    with pytest.raises(MeasurementError, match="'x' must be a non-empty list of positive integ"):
        measurements.from_json(doc, "vector_add.json")
    _folder_of(monkeypatch, tmp_path, {"vector_add": doc})
    with pytest.raises(MeasurementError, match=r"vector_add\.json: 'x' must be a non-empty list"):
        load_current(BENCHMARKS["vector_add"])


@pytest.mark.parametrize("key", ["ceiling.value", "series.Triton.0", "x.0"])
def test_a_number_too_large_for_a_float_is_refused_by_name(key: str) -> None:
    # Before: math.isfinite raised OverflowError on an integer of 400 digits.
    doc = sample_doc()
    *parents, last = key.split(".")
    target = doc
    for part in parents:
        target = target[part]
    target[int(last) if isinstance(target, list) else last] = 10**400
    with pytest.raises(MeasurementError, match=r"^sample\.json: "):
        measurements.from_json(doc, "sample.json")


@pytest.mark.parametrize("device", ["cpu", "CPU", "Intel Xeon CPU"])
def test_a_record_made_on_a_cpu_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, device: str
) -> None:
    # Before, a record of "cpu" in a folder cpu/ was read, and drawn as another GPU's tab.
    doc = _committed("vector_add")
    doc["environment"]["gpu"] = device
    with pytest.raises(MeasurementError, match="is a CPU"):
        measurements.gpu_slug(device)
    _folder_of(monkeypatch, tmp_path, {"vector_add": doc}, gpu="cpu")
    with pytest.raises(MeasurementError, match=r"cpu/vector_add\.json: 'environment\.gpu'.* CPU"):
        load_current(BENCHMARKS["vector_add"], "cpu")


def test_one_folder_holds_the_records_of_one_gpu_named_alike(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # "NVIDIA H100" and "NVIDIA H100 80GB HBM3" share the folder h100; before, the folder
    # was drawn as one GPU's set.
    add, drop = _committed("vector_add"), _committed("dropout")
    named = add["environment"]["gpu"]
    drop["environment"]["gpu"] = "NVIDIA H100"
    _folder_of(monkeypatch, tmp_path, {"vector_add": add, "dropout": drop})
    for name, gpu, other, other_gpu in (
        ("vector_add", named, "dropout", "NVIDIA H100"),
        ("dropout", "NVIDIA H100", "vector_add", named),
    ):
        with pytest.raises(
            MeasurementError,
            match=rf"{name}\.json: recorded on the {gpu!r}, but .*{other}\.json in the same "
            rf"folder on the {other_gpu!r}",
        ):
            load_current(BENCHMARKS[name])
    problems = stale_report(
        {name: BENCHMARKS[name] for name in ("vector_add", "dropout")}, launch_overhead=False
    )
    assert sum("in the same folder" in line for line in problems) == 2, problems


def test_a_malformed_neighbour_does_not_refuse_a_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A file that is no record is refused on its own; its neighbours are still drawn.
    folder = _folder_of(monkeypatch, tmp_path, {"vector_add": _committed("vector_add")})
    (folder / "dropout.json").write_text("{", encoding="utf-8")
    assert load_current(BENCHMARKS["vector_add"]).benchmark == "vector_add"


@pytest.fixture
def history(monkeypatch: pytest.MonkeyPatch) -> None:
    """Git asked as in a clone: skipped where this checkout lacks the history its records
    were measured in (a copy of the sources), and $NINJA_GAP_COMMIT unset."""
    monkeypatch.delenv(fingerprint.COMMIT_VARIABLE, raising=False)
    if fingerprint.in_history(_committed("vector_add")["code"]["commit"]) is None:
        pytest.skip("no git history here to ask")


@pytest.mark.usefixtures("history")
@pytest.mark.parametrize("name", ["vector_add", "launch_overhead_vector_add"])
def test_a_record_whose_commit_is_not_in_the_history_is_refused_by_the_loaders(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    # Before, the loaders drew it (the build too); only --stale said so.
    doc = _committed(name)
    doc["code"]["commit"] = "0123456789ab"
    _folder_of(monkeypatch, tmp_path, {name: doc})

    def load() -> measurements.Record:
        if name in LAUNCH_RECORDS:
            return load_current_launch_overhead(name)
        return load_current(BENCHMARKS[name])

    with pytest.raises(
        MeasurementError,
        match=rf"{name}\.json: recorded at commit 0123456789ab, which is not in the history "
        "of this checkout's HEAD",
    ):
        load()
    # A runner given a working tree without its history names the commit it measured in
    # $NINJA_GAP_COMMIT: there is no history to ask, so nothing is refused.
    monkeypatch.setenv(fingerprint.COMMIT_VARIABLE, "0123456789ab")
    assert load().code.commit == "0123456789ab"


@pytest.mark.usefixtures("history")
def test_the_loaders_ask_git_once_per_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    # A build loads some thirty records of a commit or two.
    asked: list[list[str]] = []
    run = fingerprint.subprocess.run

    def counted(args: list[str], **kwargs: object) -> object:
        asked.append(list(args))
        return run(args, **kwargs)

    fingerprint.forget_history()
    monkeypatch.setattr(fingerprint.subprocess, "run", counted)
    for _round in range(2):
        for spec in BENCHMARKS.values():
            load_current(spec)
        for name in LAUNCH_RECORDS:
            load_current_launch_overhead(name)
    commits = {measurements.read(path).code.commit for path in FILES}
    assert sum("merge-base" in args for args in asked) == len(commits)
    assert sum("--is-shallow-repository" in args for args in asked) == 1


@pytest.mark.parametrize(
    ("name", "key", "value", "shown"),
    [
        ("dropout", "p", 0.1, "0.1"),
        ("dropout", "p", "0.5", "'0.5'"),
        ("dropout", "p", KeyError, "None"),
        ("flash_attention", "causal", 0, "0"),
        ("flash_attention", "heads", 16, "16"),
    ],
    ids=["other-value", "string", "missing", "int-for-bool", "other-heads"],
)
def test_a_record_of_other_fixed_dimensions_than_its_spec_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, key: str, value: object, shown: str
) -> None:
    # The pages read a record's fixed dimensions (the roofline counts attention's bytes
    # from its heads); before, a record that disagreed with its spec there was drawn.
    doc = _committed(name)
    if value is KeyError:
        del doc[key]
    else:
        doc[key] = value
    _folder_of(monkeypatch, tmp_path, {name: doc})
    with pytest.raises(
        MeasurementError,
        match=rf"{name}\.json: {key!r} is {re.escape(shown)}; the benchmark's spec",
    ):
        load_current(BENCHMARKS[name])


def test_work_at_reads_a_size_s_work_from_the_record_and_names_a_missing_size() -> None:
    record = sample()
    assert [record.work_at(size) for size in record.x] == list(record.work)
    with pytest.raises(ValueError, match=r"^vector_add has no size 3; its sizes are "):
        record.work_at(3)

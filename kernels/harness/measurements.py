"""The measurement record: one typed value, its contract, and the files that hold it.

A GPU run of a benchmark produces a :class:`Measurement`; it is saved to
``gallery/measurements/<gpu>/<benchmark>.json`` (``<gpu>`` the :func:`gpu_slug` of the
GPU it ran on: every GPU has its own records) and loaded back from there, and the plots,
the tables and the pages read that value and nothing else. The pages' prose and
verdicts read the records of :data:`PRIMARY_GPU`; the other GPUs' records are shown
beside them. The contract (see the
contributing guide, "The measurement record"):

- ``series``: for each provider (``Triton`` and at least one baseline), the rate at each
  ``x`` computed from *kernel time*, the GPU time of one call with no host time in it;
- ``call_series``: the same providers from *call time*, what a Python caller pays;
- ``work``: the bytes (``GB/s``) or floating-point operations (``TFLOP/s``) of one call
  at each ``x``; a rate is ``work`` over a time;
- ``code``: the fingerprint of the code that ran, the hash of each of its files, and
  the commit; a record whose fingerprint no longer matches the code is *stale*;
- ``ceiling``: the machine's limit measured in the same run, the best of ``timings``;
- ``environment``: GPU, driver, CUDA, torch, Triton, Python, date and command.

A rate is ``null`` where a provider could not run or be timed at a size; the reason is
under ``unavailable``. Every problem with a file is a :class:`MeasurementError` that
names the file and the key.

The launch-cost records are not rates: ``launch_overhead_<family>.json``, one per
kernel family (``launch_overhead_vector_add``), each a :class:`LaunchOverhead`, hold the
host time of one call of each of the family's launchers in microseconds (metric ``us``,
allowed for those records only). Its ``x`` are launcher names, not sizes; its ``series`` are exactly
``Triton`` (the launcher as a user calls it), ``bare launch`` (the same kernels launched
with precomputed arguments) and ``PyTorch`` (the equivalent op); ``inputs`` says what
each launcher was called on; ``final_wait_us``, in the shape of ``series``, how long the
synchronisation at the end of each timed loop waited for the GPU (about one call's GPU
work when the GPU kept up with the host). It has no ``work`` (a time is not a rate), no
``call_series`` (host time is the only time it holds) and no ``ceiling``: a host time
has no machine limit to be read against, so the key is absent, and a file that has one
is refused rather than read with a meaning it does not have. ``code`` and
``environment`` are as above.
"""

import hashlib
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from . import fingerprint

# In a clone, the records are in gallery/measurements/<gpu>/; installed, the package ships
# them as ninja_gap/measurements/<gpu>/, beside ninja_gap/kernels/.
_PARENT = Path(__file__).resolve().parents[2]
MEASUREMENTS_ROOT = (
    _PARENT / "gallery" / "measurements"
    if (_PARENT / "gallery" / "measurements").is_dir()
    else _PARENT / "measurements"
)
# The GPU whose records the pages' prose and verdicts read, and which every benchmark
# must have a record of (conf.py shows it to the build). The H100 is the GPU a session
# here gets most often; the other GPUs' records are shown beside its own.
PRIMARY_GPU = "h100"
# Words of a device name that do not tell one GPU model from another: the vendor, the
# memory's size and kind, the SXM form factor (PCIe and NVL boards keep their word: their
# clocks and memory differ from the SXM board's).
_NOT_THE_MODEL = re.compile(r"nvidia|geforce|\d+gb|hbm\d*e?|sxm\d*")
# What a device name may hold (CUDA's names are letters, digits, spaces and a little
# punctuation): anything else, such as markup, is no GPU's name.
_DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._()/-]*")
# What a GPU folder's name looks like: lower-case words of letters and digits, joined by "-".
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

# The rates a record may hold, each with its work unit per rate unit: a GB/s rate is
# bytes / 1e9 per second, TFLOP/s is FLOPs / 1e12 per second (a record's ``work`` is
# bytes or FLOPs per call).
RATE_SCALE = {"GB/s": 1e9, "TFLOP/s": 1e12}
METRICS = tuple(RATE_SCALE)
# The records that are not rates, one per kernel family (the name's prefix, then the
# family's: launch_overhead_vector_add), their metric, and their series in order.
LAUNCH_OVERHEAD = "launch_overhead"
LAUNCH_METRIC = "us"
LAUNCH_SERIES = ("Triton", "bare launch", "PyTorch", "CUDA graph")
# The series timed as a loop of calls and one wait; "CUDA graph" is one replay of a
# graph of those calls, whose final wait is the whole graph's GPU time.
LAUNCH_LOOPS = ("Triton", "bare launch", "PyTorch")
# The series of a launch-cost record that must hold a time for every launcher: the table
# and the page subtract one from the other.
_LAUNCH_TIMED = ("Triton", "bare launch")
_LAUNCH_KEYS = (
    "benchmark",
    "metric",
    "x_name",
    "x",
    "series",
    "final_wait_us",
    "inputs",
    "code",
    "environment",
)
# Keys of a rate record that a launch-cost record must not have (see the docstring).
_RATE_ONLY_KEYS = (
    "work",
    "call_series",
    "ceiling",
    "dtype",
    "same_size_copy",
    "peak_memory_mb",
)
ENVIRONMENT_KEYS = (
    "gpu",
    "driver",
    "cuda",
    "torch",
    "triton",
    "python",
    "date",
    "command",
)
# Keys every file has; anything else goes into Measurement.details.
_REQUIRED_KEYS = (
    "benchmark",
    "metric",
    "x_name",
    "dtype",
    "x",
    "work",
    "series",
    "call_series",
    "ceiling",
    "code",
    "environment",
)
_OPTIONAL_KEYS = ("unavailable", "same_size_copy", "peak_memory_mb")
# A record is a few hundred lines of JSON; anything far larger is not one.
MAX_FILE_BYTES = 1_000_000
# How far ahead of this machine's clock a record's date may be (clocks disagree a little);
# a record from further ahead was not measured yet.
FUTURE_SLACK = timedelta(days=1)

Rates = tuple[float | None, ...]


class MeasurementError(ValueError):
    """A measurement file that breaks the contract, or is missing; the message names the
    file and the key."""


class StaleMeasurementError(MeasurementError):
    """A record whose code fingerprint no longer matches the code it claims to measure."""


@dataclass(frozen=True)
class Ceiling:
    """The machine's limit, measured in the same run: the best of ``timings`` timings."""

    name: str
    value: float
    timings: int
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Code:
    """The code a record measured: a fingerprint over ``files`` (path -> hash) and the commit."""

    fingerprint: str
    commit: str
    files: Mapping[str, str]


@dataclass(frozen=True)
class Measurement:
    """One benchmark as recorded by one GPU run (the contract is in the module docstring).

    ``fresh`` is True when this process measured it, False when it was loaded from its
    file; ``placeholder`` marks a stand-in drawn by a draft build for a benchmark that
    has no record yet (it holds no numbers).
    """

    benchmark: str
    metric: str
    x_name: str
    dtype: str
    x: tuple[int, ...]
    work: tuple[float, ...]
    series: Mapping[str, Rates]
    call_series: Mapping[str, Rates]
    ceiling: Ceiling
    code: Code
    environment: Mapping[str, str]
    unavailable: Mapping[str, str] = field(default_factory=dict)
    same_size_copy: tuple[float, ...] | None = None
    peak_memory_mb: Mapping[str, tuple[float | None, ...]] | None = None
    # Everything else the file holds: the pass, the timing method, the check, the
    # benchmark's fixed dimensions.
    details: Mapping[str, Any] = field(default_factory=dict)
    fresh: bool = field(default=False, compare=False)
    placeholder: bool = field(default=False, compare=False)

    @property
    def providers(self) -> tuple[str, ...]:
        """The timed series, Triton first."""
        return tuple(self.series)

    @property
    def baselines(self) -> tuple[str, ...]:
        """The series Triton is compared with."""
        return tuple(name for name in self.series if name != "Triton")

    def work_at(self, size: int) -> float:
        """The recorded work of one call at ``size``, one of the record's sizes: a
        page's threshold read from the record, not worked out again."""
        if size not in self.x:
            raise ValueError(
                f"{self.benchmark} has no size {size:,}; its sizes are "
                f"{', '.join(f'{x:,}' for x in self.x)}"
            )
        return self.work[self.x.index(size)]

    def as_fresh(self) -> "Measurement":
        """This record, marked as measured by this process."""
        return replace(self, fresh=True)

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object of its file."""
        doc: dict[str, Any] = {
            "benchmark": self.benchmark,
            "metric": self.metric,
            "x_name": self.x_name,
            "dtype": self.dtype,
            "x": list(self.x),
            "work": list(self.work),
            "series": {name: list(v) for name, v in self.series.items()},
            "call_series": {name: list(v) for name, v in self.call_series.items()},
            "ceiling": {
                "name": self.ceiling.name,
                "value": self.ceiling.value,
                "timings": self.ceiling.timings,
                **self.ceiling.details,
            },
            "code": {**asdict(self.code), "files": dict(self.code.files)},
            "environment": dict(self.environment),
        }
        if self.unavailable:
            doc["unavailable"] = dict(self.unavailable)
        if self.same_size_copy is not None:
            doc["same_size_copy"] = list(self.same_size_copy)
        if self.peak_memory_mb is not None:
            doc["peak_memory_mb"] = {n: list(v) for n, v in self.peak_memory_mb.items()}
        return {**doc, **self.details}


@dataclass(frozen=True)
class LaunchOverhead:
    """``launch_overhead_<family>.json``: microseconds of host time per call, for each
    launcher of a family (or of several: :func:`kernels.harness.launch_record.combined`).

    ``series`` holds, per name of :data:`LAUNCH_SERIES`, one time per launcher in ``x``
    (``null`` only for ``PyTorch`` and ``CUDA graph``, with the reason under
    ``unavailable``);
    ``final_wait_us`` the wait for the GPU at the end of a timed loop, in the same shape;
    ``inputs`` says what each launcher was called on. ``fresh`` and ``placeholder`` are
    as for :class:`Measurement`.
    """

    benchmark: str
    metric: str
    x_name: str
    x: tuple[str, ...]
    series: Mapping[str, tuple[float | None, ...]]
    final_wait_us: Mapping[str, tuple[float | None, ...]]
    inputs: Mapping[str, str]
    code: Code
    environment: Mapping[str, str]
    unavailable: Mapping[str, str] = field(default_factory=dict)
    # Everything else the file holds: how the calls were timed.
    details: Mapping[str, Any] = field(default_factory=dict)
    fresh: bool = field(default=False, compare=False)
    placeholder: bool = field(default=False, compare=False)

    @property
    def providers(self) -> tuple[str, ...]:
        """The timed series, Triton first."""
        return tuple(self.series)

    def time_us(self, provider: str, launcher: str) -> float | None:
        """The host time of one call of ``launcher`` by ``provider``, in microseconds."""
        return self.series[provider][self.x.index(launcher)]

    def as_fresh(self) -> "LaunchOverhead":
        """This record, marked as measured by this process."""
        return replace(self, fresh=True)

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object of its file."""
        doc: dict[str, Any] = {
            "benchmark": self.benchmark,
            "metric": self.metric,
            "x_name": self.x_name,
            "x": list(self.x),
            "series": {name: list(v) for name, v in self.series.items()},
            "final_wait_us": {name: list(v) for name, v in self.final_wait_us.items()},
            "inputs": dict(self.inputs),
            "code": {**asdict(self.code), "files": dict(self.code.files)},
            "environment": dict(self.environment),
        }
        if self.unavailable:
            doc["unavailable"] = dict(self.unavailable)
        return {**doc, **self.details}


# What a measurements file holds: a rate record, or a launch-cost record.
Record = Measurement | LaunchOverhead


def launch_record_name(family: str) -> str:
    """The name of the launch-cost record of the family whose module is ``family``:
    ``launch_overhead_vector_add`` for :mod:`kernels.operations.vector_add`."""
    return f"{LAUNCH_OVERHEAD}_{family}"


def is_launch_record(name: object) -> bool:
    """Whether ``name`` is the name of a family's launch-cost record."""
    prefix = f"{LAUNCH_OVERHEAD}_"
    return isinstance(name, str) and name.startswith(prefix) and len(name) > len(prefix)


def gpu_slug(device_name: str) -> str:
    """The name of the records folder of the GPU called ``device_name`` (as CUDA names
    it): ``"NVIDIA H100 80GB HBM3"`` is ``h100``, ``"NVIDIA H200"`` ``h200``,
    ``"NVIDIA GeForce RTX 4090"`` ``rtx-4090``, ``"NVIDIA H100 PCIe"`` ``h100-pcie``."""
    words = [
        word
        for word in re.split(r"[^a-z0-9]+", device_name.lower())
        if word and not _NOT_THE_MODEL.fullmatch(word)
    ]
    if not words or not _DEVICE_NAME.fullmatch(device_name):
        raise MeasurementError(
            f"cannot name a records folder after the GPU {device_name!r}"
        )
    # The harness times on GPUs only: a record of a CPU was written by hand, and would
    # be drawn as one more GPU's tab.
    if "cpu" in words:
        raise MeasurementError(
            f"{device_name!r} is a CPU: records come from GPU runs only, and no records "
            "folder is named after a CPU"
        )
    return "-".join(words)


def gpu_dir(gpu: str | None = None) -> Path:
    """The folder of ``gpu``'s records (a :func:`gpu_slug`; the primary GPU's by default)."""
    gpu = PRIMARY_GPU if gpu is None else gpu
    if not _SLUG.fullmatch(gpu):
        raise MeasurementError(
            f"{gpu!r} is not a GPU's records folder (such as 'h100')"
        )
    return MEASUREMENTS_ROOT / gpu


def path_for(benchmark: str, gpu: str | None = None) -> Path:
    """The file that holds the recorded measurement of ``benchmark`` on ``gpu`` (the
    primary GPU by default)."""
    return gpu_dir(gpu) / f"{benchmark}.json"


def recorded_gpus() -> list[str]:
    """The GPUs that have a records folder, the primary first, then by name."""
    found = (
        sorted(
            path.name
            for path in MEASUREMENTS_ROOT.iterdir()
            if path.is_dir() and _SLUG.fullmatch(path.name)
        )
        if MEASUREMENTS_ROOT.is_dir()
        else []
    )
    return sorted(found, key=lambda gpu: gpu != PRIMARY_GPU)


def known_gpus() -> list[str]:
    """The primary GPU, which must have every record even before its folder exists, and
    every other GPU that has a records folder."""
    return list(dict.fromkeys([PRIMARY_GPU, *recorded_gpus()]))


def _positive_number(value: Any) -> bool:
    # Finite, and no larger than a float holds: an integer of 400 digits would raise
    # OverflowError in the arithmetic on it (a rate over the ceiling, a log axis).
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and 0 < value <= sys.float_info.max
    )


def _size(value: Any) -> bool:
    # A size is a count: 16777216.0 equals the spec's 16777216, but no run wrote it.
    return isinstance(value, int) and _positive_number(value)


_Fail = Callable[[str], MeasurementError]
# What fingerprint.commit() appends when files under kernels/ differ from the commit.
DIRTY = "-dirty"


def _failing(source: str) -> _Fail:
    """What makes the error of a problem with the record read from ``source``."""

    def fail(problem: str) -> MeasurementError:
        return MeasurementError(f"{source}: {problem}")

    return fail


def _code(doc: dict[str, Any], fail: _Fail) -> Code:
    """The ``code`` of a record, checked."""
    code = doc["code"]
    if not isinstance(code, dict):
        raise fail("'code' must be an object")
    for key in ("fingerprint", "commit"):
        if not isinstance(code.get(key), str) or not code[key]:
            raise fail(f"'code.{key}' must be a non-empty string")
    files = code.get("files")
    if (
        not isinstance(files, dict)
        or not files
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    ):
        raise fail("'code.files' must be an object of path -> hash")
    if code["commit"].endswith(DIRTY):
        raise fail(
            f"recorded from uncommitted changes under kernels/ (commit {code['commit']!r}): "
            "no commit holds the code it measured; commit the code, then record it again"
        )
    return Code(
        fingerprint=code["fingerprint"], commit=code["commit"], files=dict(files)
    )


def _environment(doc: dict[str, Any], fail: _Fail) -> dict[str, str]:
    """The ``environment`` of a record, checked."""
    environment = doc["environment"]
    if not isinstance(environment, dict):
        raise fail("'environment' must be an object")
    for key in ENVIRONMENT_KEYS:
        if not isinstance(environment.get(key), str) or not environment[key]:
            raise fail(f"'environment.{key}' must be a non-empty string")
    try:
        date = datetime.fromisoformat(environment["date"])
    except ValueError:
        raise fail(
            f"'environment.date' is not an ISO 8601 date: {environment['date']!r}"
        ) from None
    # A date without a zone is read as UTC, as the harness writes them (Z).
    if date.tzinfo is None:
        date = date.replace(tzinfo=UTC)
    if date > datetime.now(UTC) + FUTURE_SLACK:
        raise fail(f"'environment.date' is in the future: {environment['date']!r}")
    try:
        gpu_slug(environment["gpu"])
    except MeasurementError as error:
        raise fail(f"'environment.gpu': {error}") from None
    return {key: environment[key] for key in ENVIRONMENT_KEYS}


# Keys of a record's details that the harness reads into (the check's worst error, how
# long measuring took): where a record has one, it must be an object.
_OBJECT_DETAILS = ("check", "timing")


def _objects_where_present(doc: dict[str, Any], fail: _Fail) -> None:
    """Refuse a detail of :data:`_OBJECT_DETAILS` that is not an object."""
    for key in _OBJECT_DETAILS:
        if key in doc and not isinstance(doc[key], dict):
            raise fail(
                f"{key!r} must be an object of key -> value, not {doc[key]!r:.40}"
            )


def _unavailable(doc: dict[str, Any], fail: _Fail) -> dict[str, str]:
    unavailable = doc.get("unavailable", {})
    if not isinstance(unavailable, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in unavailable.items()
    ):
        raise fail("'unavailable' must be an object of provider -> reason")
    return dict(unavailable)


def record_from_json(doc: Any, source: str) -> Record:
    """The record that ``doc`` holds: a :class:`LaunchOverhead` for a launch-cost record
    (its name or the ``us`` metric says so), else a :class:`Measurement`; each validated."""
    if isinstance(doc, dict) and (
        is_launch_record(doc.get("benchmark")) or doc.get("metric") == LAUNCH_METRIC
    ):
        return launch_overhead_from_json(doc, source)
    return from_json(doc, source)


def launch_overhead_from_json(doc: Any, source: str) -> LaunchOverhead:
    """The :class:`LaunchOverhead` that ``doc`` holds, if it follows its contract (see the
    module docstring), else a :class:`MeasurementError` naming ``source`` and the key."""
    fail = _failing(source)
    if not isinstance(doc, dict):
        raise fail("the top level must be a JSON object")
    for key in _LAUNCH_KEYS:
        if key not in doc:
            raise fail(f"missing key {key!r}")
    if not is_launch_record(doc["benchmark"]):
        raise fail(
            f"'metric' {LAUNCH_METRIC!r} (microseconds per call) is for the launch-cost "
            f"records ({LAUNCH_OVERHEAD}_<family>) only; 'benchmark' is "
            f"{doc['benchmark']!r}, whose metric must be one of {', '.join(METRICS)}"
        )
    if doc["metric"] != LAUNCH_METRIC:
        raise fail(
            f"'metric' is {doc['metric']!r}; a launch-cost record holds microseconds per "
            f"call: {LAUNCH_METRIC!r}"
        )
    for key in _RATE_ONLY_KEYS:
        if key in doc:
            raise fail(
                f"{key!r} belongs to rate records; a launch-cost record holds host times "
                "per call, with no work, call time, ceiling or dtype of its own"
            )
    if not isinstance(doc["x_name"], str) or not doc["x_name"]:
        raise fail("'x_name' must be a non-empty string")
    x = doc["x"]
    if not isinstance(x, list) or not x or not all(isinstance(v, str) and v for v in x):
        raise fail(
            "'x' must be a non-empty list of launcher names (strings), not sizes"
        )
    if len(set(x)) != len(x):
        raise fail("'x' names a launcher twice")
    unavailable = _unavailable(doc, fail)

    def times_of(key: str) -> dict[str, tuple[float | None, ...]]:
        series = doc[key]
        if not isinstance(series, dict) or tuple(series) != LAUNCH_SERIES:
            names = list(series) if isinstance(series, dict) else series
            raise fail(
                f"{key!r} must hold {', '.join(map(repr, LAUNCH_SERIES))}, in that order; "
                f"it holds {names!r}"
            )
        times = {}
        for name, values in series.items():
            label = f"{key}[{name!r}]"
            if not isinstance(values, list) or len(values) != len(x):
                raise fail(f"{label} must have one time per launcher in x ({len(x)})")
            for value in values:
                if value is None and name in _LAUNCH_TIMED:
                    raise fail(f"{label} holds null; every launcher has a time there")
                if value is None and name not in unavailable:
                    raise fail(f"{label} holds null but 'unavailable' gives no reason")
                if value is not None and not _positive_number(value):
                    raise fail(
                        f"{label} holds {value!r}, which is not a positive number"
                    )
            times[name] = tuple(values)
        return times

    series, final_wait = times_of("series"), times_of("final_wait_us")
    for name in LAUNCH_SERIES:
        if [v is None for v in series[name]] != [v is None for v in final_wait[name]]:
            raise fail(
                f"final_wait_us[{name!r}] must be null where series[{name!r}] is"
            )
    _objects_where_present(doc, fail)
    inputs = doc["inputs"]
    if (
        not isinstance(inputs, dict)
        or list(inputs) != x
        or not all(isinstance(v, str) and v for v in inputs.values())
    ):
        raise fail(
            "'inputs' must describe, in the order of x, what each launcher was called on"
        )
    known = {*_LAUNCH_KEYS, "unavailable"}
    return LaunchOverhead(
        benchmark=doc["benchmark"],
        metric=doc["metric"],
        x_name=doc["x_name"],
        x=tuple(x),
        series=series,
        final_wait_us=final_wait,
        inputs=dict(inputs),
        code=_code(doc, fail),
        environment=_environment(doc, fail),
        unavailable=unavailable,
        details={k: v for k, v in doc.items() if k not in known},
    )


def from_json(doc: Any, source: str) -> Measurement:
    """The :class:`Measurement` (a rate record) that ``doc`` holds, if it follows the
    contract, else a :class:`MeasurementError` naming ``source`` (the file) and the key."""
    fail = _failing(source)
    if not isinstance(doc, dict):
        raise fail("the top level must be a JSON object")
    for key in _REQUIRED_KEYS:
        if key not in doc:
            raise fail(f"missing key {key!r}")
    for key in ("benchmark", "x_name", "dtype"):
        if not isinstance(doc[key], str) or not doc[key]:
            raise fail(f"{key!r} must be a non-empty string")
    if doc["metric"] not in METRICS:
        raise fail(
            f"'metric' is {doc['metric']!r}; it must be one of {', '.join(METRICS)} "
            f"({LAUNCH_METRIC!r} is for the launch-cost records only)"
        )
    x = doc["x"]
    if not isinstance(x, list) or not x or not all(_size(v) for v in x):
        raise fail("'x' must be a non-empty list of positive integers (the sizes)")
    if x != sorted(x) or len(set(x)) != len(x):
        raise fail("'x' must be strictly increasing")

    def per_x(values: Any, label: str, nullable: bool) -> tuple[Any, ...]:
        if not isinstance(values, list) or len(values) != len(x):
            raise fail(f"{label} must have one value per x ({len(x)})")
        for value in values:
            if not (_positive_number(value) or (nullable and value is None)):
                raise fail(f"{label} holds {value!r}, which is not a positive number")
        return tuple(values)

    unavailable = _unavailable(doc, fail)

    def rates(key: str) -> dict[str, Rates]:
        series = doc[key]
        if not isinstance(series, dict) or not all(isinstance(k, str) for k in series):
            raise fail(f"{key!r} must be an object of provider -> values")
        if "Triton" not in series:
            raise fail(f"{key!r} has no 'Triton' series")
        if len(series) < 2:
            raise fail(f"{key!r} has no baseline beside 'Triton'")
        out = {
            name: per_x(v, f"{key}[{name!r}]", nullable=True)
            for name, v in series.items()
        }
        for name, values in out.items():
            if None in values and name not in unavailable:
                raise fail(
                    f"{key}[{name!r}] holds null but 'unavailable' gives no reason"
                )
        return out

    series, call_series = rates("series"), rates("call_series")
    if list(call_series) != list(series):
        raise fail(
            "'call_series' must have the providers of 'series', in the same order"
        )
    work = per_x(doc["work"], "'work'", nullable=False)
    same_size_copy = doc.get("same_size_copy")
    if same_size_copy is not None:
        same_size_copy = per_x(same_size_copy, "'same_size_copy'", nullable=False)
    peak = doc.get("peak_memory_mb")
    if peak is not None:
        if not isinstance(peak, dict) or not peak:
            raise fail("'peak_memory_mb' must be an object of provider -> values")
        # null: the provider ran out of memory at that size.
        peak = {
            n: per_x(v, f"peak_memory_mb[{n!r}]", nullable=True)
            for n, v in peak.items()
        }
    ceiling = doc["ceiling"]
    if not isinstance(ceiling, dict) or not isinstance(ceiling.get("name"), str):
        raise fail("'ceiling' must be an object with a 'name'")
    if not _positive_number(ceiling.get("value")):
        raise fail("'ceiling.value' must be a positive number")
    timings = ceiling.get("timings")
    if not isinstance(timings, int) or isinstance(timings, bool) or timings < 1:
        raise fail("'ceiling.timings' must be a positive integer")
    _objects_where_present(doc, fail)
    code = _code(doc, fail)
    environment = _environment(doc, fail)
    known = set(_REQUIRED_KEYS) | set(_OPTIONAL_KEYS)
    return Measurement(
        benchmark=doc["benchmark"],
        metric=doc["metric"],
        x_name=doc["x_name"],
        dtype=doc["dtype"],
        x=tuple(x),
        work=work,
        series=series,
        call_series=call_series,
        ceiling=Ceiling(
            name=ceiling["name"],
            value=ceiling["value"],
            timings=timings,
            details={
                k: v
                for k, v in ceiling.items()
                if k not in ("name", "value", "timings")
            },
        ),
        code=code,
        environment=environment,
        unavailable=unavailable,
        same_size_copy=same_size_copy,
        peak_memory_mb=peak,
        details={k: v for k, v in doc.items() if k not in known},
    )


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them; ``OSError``
    for anything else. A FIFO named like a record would block a plain read forever, and a
    link to ``/dev/zero`` would fill the memory: the file is opened without blocking,
    must be a regular file, and is read no further than ``limit`` bytes and one."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(
                f"not a regular file ({stat.filemode(os.fstat(descriptor).st_mode)})"
            )
        content = file.read(limit + 1)
    if len(content) > limit:
        raise OSError(f"larger than {limit:,} bytes")
    return content


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of two equal keys, silently: a record that says two
    # things about one key is refused instead.
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise ValueError(f"the key {key!r} appears twice in one object")
        doc[key] = value
    return doc


def read(path: Path) -> Record:
    """Read and validate the record in ``path``; every failure names the file."""
    try:
        content = read_bounded(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        raise MeasurementError(f"{path}: no such file") from None
    except OSError as error:  # a directory, a FIFO, a link loop, a device, too large
        raise MeasurementError(
            f"{path}: cannot read a record ({error.strerror or error})"
        ) from None
    return _record_in(content, path)


def _record_in(content: bytes, path: Path) -> Record:
    """The record that ``content``, the bytes of ``path``, holds, validated."""
    try:
        doc = json.loads(content.decode("utf-8"), object_pairs_hook=_unique_keys)
    except UnicodeDecodeError as error:
        raise MeasurementError(
            f"{path}: not UTF-8 ({error.reason} at byte {error.start})"
        ) from None
    except json.JSONDecodeError as error:
        raise MeasurementError(f"{path}: not valid JSON ({error})") from None
    except RecursionError:
        raise MeasurementError(
            f"{path}: nested too deeply to be a measurement"
        ) from None
    except ValueError as error:  # a duplicate key, an integer of thousands of digits
        raise MeasurementError(f"{path}: not a record ({error})") from None
    return record_from_json(doc, str(path))


def load(benchmark: str, metric: str | None = None, gpu: str | None = None) -> Record:
    """The recorded measurement of ``benchmark`` on ``gpu`` (the primary GPU by default),
    validated; with ``metric`` (the spec's), also checked to be the benchmark it claims
    to be. A record in another GPU's folder than its own is refused, as is one beside a
    record that names its GPU otherwise, or one of a commit that is not in the history
    of this checkout's HEAD (where git can tell:
    :func:`~kernels.harness.fingerprint.in_history`)."""
    gpu = PRIMARY_GPU if gpu is None else gpu
    path = path_for(benchmark, gpu)
    if not path.exists():
        raise MeasurementError(
            f"{path}: no recorded measurement for {benchmark!r} on the {gpu}; "
            "run `nox -s bench` on that GPU to record one"
        )
    measurement = read(path)
    if gpu_slug(measurement.environment["gpu"]) != gpu:
        raise MeasurementError(
            f"{path}: recorded on the {measurement.environment['gpu']}, not on the {gpu} "
            f"whose folder it is in; it belongs in "
            f"{gpu_dir(gpu_slug(measurement.environment['gpu']))}"
        )
    _refuse_if_not_alone_on_its_gpu(path, measurement.environment["gpu"])
    if measurement.benchmark != benchmark:
        raise MeasurementError(
            f"{path}: 'benchmark' is {measurement.benchmark!r}, but the file is {benchmark}.json"
        )
    if metric is not None and measurement.metric != metric:
        raise MeasurementError(
            f"{path}: 'metric' is {measurement.metric!r}; the benchmark measures {metric}"
        )
    if fingerprint.in_history(measurement.code.commit) is False:
        raise MeasurementError(
            f"{path}: recorded at commit {measurement.code.commit}, which is not in the "
            "history of this checkout's HEAD (a branch that never landed, or no commit at "
            "all); re-measure it from this branch"
        )
    return measurement


def _refuse_if_not_alone_on_its_gpu(path: Path, gpu: str) -> None:
    """Raise unless every other readable record of the folder's GPU in ``path``'s folder
    names that GPU exactly as the record in ``path`` does (``gpu``): a folder holds one
    GPU's set, and two names of one model ("NVIDIA H100", "NVIDIA H100 80GB HBM3") may be
    two boards. A record of another model there is refused on its own, as in the wrong
    folder, and does not refuse the folder's own records."""
    for other in sorted(path.parent.glob("*.json")):
        named = gpu if other == path else _gpu_named_in(other)
        if named is not None and named != gpu and gpu_slug(named) == path.parent.name:
            raise MeasurementError(
                f"{path}: recorded on the {gpu!r}, but {other} in the same folder on the "
                f"{named!r}; a folder holds the records of one GPU, named alike: "
                "re-measure the odd ones on the GPU of the others"
            )


# The GPU that each readable record names, by the digest of its file's bytes. Loading a
# record compares it with the rest of its folder, and a build loads the whole folder:
# each file's content is parsed once per process, not once per record loaded.
_GPU_BY_DIGEST: dict[bytes, str | None] = {}


def _gpu_named_in(path: Path) -> str | None:
    """The GPU that the record in ``path`` names; None where it is no readable record
    (that one is refused when it is loaded itself, and need not refuse its folder)."""
    try:
        content = read_bounded(path, MAX_FILE_BYTES)
    except OSError:
        return None
    digest = hashlib.sha256(content).digest()
    if digest not in _GPU_BY_DIGEST:
        try:
            _GPU_BY_DIGEST[digest] = _record_in(content, path).environment["gpu"]
        except MeasurementError:
            _GPU_BY_DIGEST[digest] = None
    return _GPU_BY_DIGEST[digest]


def load_launch_overhead(name: str, gpu: str | None = None) -> LaunchOverhead:
    """The recorded launch-cost record ``name`` (``launch_overhead_<family>``) of ``gpu``
    (the primary's by default), validated."""
    record = load(name, metric=LAUNCH_METRIC, gpu=gpu)
    assert isinstance(
        record, LaunchOverhead
    )  # what record_from_json reads for this name
    return record


def save(measurement: Record) -> Path:
    """Validate ``measurement`` and write it to its benchmark's file in the folder of the
    GPU it was measured on; return the path."""
    path = path_for(measurement.benchmark, gpu_slug(measurement.environment["gpu"]))
    doc = measurement.to_json()
    record_from_json(doc, str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(doc, indent=2) + "\n")
    return path


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: into a temporary file in the same
    folder, flushed to disk, then renamed over ``path``. A run killed mid-write or a
    full disk leaves the old file as it was (a plain write would leave it cut short),
    and a symbolic link at ``path`` is replaced, not written through to its target."""
    with tempfile.NamedTemporaryFile(
        "w",
        encoding="utf-8",
        dir=path.parent,
        prefix=f".{path.name}.",
        suffix=".tmp",
        delete=False,
    ) as file:
        temporary = Path(file.name)
        try:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        except BaseException:
            file.close()
            temporary.unlink(missing_ok=True)
            raise
    # A temporary file is made readable by its owner only; a record is for everyone.
    os.chmod(temporary, stat.S_IMODE(path.stat().st_mode) if path.is_file() else 0o644)
    os.replace(temporary, path)


def recorded_benchmarks(gpu: str | None = None) -> list[str]:
    """The names of the benchmarks that have a file in ``gpu``'s folder (the primary's by
    default)."""
    return sorted(path.stem for path in gpu_dir(gpu).glob("*.json"))


def worst_fraction_of_ceiling(
    measurement: Measurement, provider: str, min_x: float
) -> float:
    """The lowest ``provider`` rate over the ceiling, among sizes of at least ``min_x``.

    A conservative headline: the provider reaches at least this share of the ceiling at
    every large size that was measured (a size it could not run at does not count).
    """
    rates = [
        rate
        for x, rate in zip(measurement.x, measurement.series[provider], strict=True)
        if x >= min_x and rate is not None
    ]
    if not rates:
        raise MeasurementError(
            f"{measurement.benchmark}: no size of at least {min_x:g} was measured"
        )
    return min(rates) / measurement.ceiling.value

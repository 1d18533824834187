"""A small valid record, in the file's JSON form, for tests of the contract and its readers."""

import contextlib
import copy
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernels.harness import measurements

X = [2**24, 2**25, 2**26, 2**27, 2**28]
CEILING = 4000.0
# A commit of main's history: the loaders refuse a record of one that is not HEAD or an
# ancestor of it.
COMMIT = "5b292fa"


def sample_doc(**changes: Any) -> dict[str, Any]:
    """A valid vector-addition-like record (GB/s, three providers), with ``changes``
    applied to its top-level keys."""
    doc: dict[str, Any] = {
        "benchmark": "vector_add",
        "metric": "GB/s",
        "x_name": "N",
        "dtype": "float32",
        "x": list(X),
        "work": [12.0 * x for x in X],
        "series": {
            "Triton": [3600.0] * len(X),
            "PyTorch": [3500.0] * len(X),
            "torch.compile": [3400.0] * len(X),
        },
        "call_series": {
            "Triton": [3000.0] * len(X),
            "PyTorch": [3100.0] * len(X),
            "torch.compile": [2900.0] * len(X),
        },
        "ceiling": {"name": "device copy", "value": CEILING, "timings": 3},
        "code": {
            "fingerprint": "0123456789abcdef",
            "commit": COMMIT,
            "files": {"kernels/vector_add.py": "0123456789abcdef"},
        },
        "environment": {
            "gpu": "NVIDIA H200",
            "driver": "580",
            "cuda": "13.0",
            "torch": "2.11",
            "triton": "3.6",
            "python": "3.12",
            "date": "2026-12-03T10:00:00Z",
            "command": "nox -s docs",
        },
        "pass": "forward",
    }
    doc.update(copy.deepcopy(changes))
    return doc


def sample(**changes: Any) -> measurements.Measurement:
    """:func:`sample_doc` as a validated :class:`~kernels.harness.measurements.Measurement`."""
    return measurements.from_json(sample_doc(**changes), "sample.json")


LAUNCHERS = ["add", "softmax", "matmul"]


def launch_doc(**changes: Any) -> dict[str, Any]:
    """A valid launch-cost record (three launchers, microseconds per call), with
    ``changes`` applied to its top-level keys."""
    doc: dict[str, Any] = {
        "benchmark": "launch_overhead_vector_add",
        "metric": "us",
        "x_name": "launcher",
        "x": list(LAUNCHERS),
        "series": {
            "Triton": [20.0, 24.0, 40.0],
            "bare launch": [12.0, 14.0, 30.0],
            "PyTorch": [5.0, 6.0, 8.0],
            "CUDA graph": [2.5, 3.0, 4.5],
        },
        "final_wait_us": {
            "Triton": [3.0, 3.5, 6.0],
            "bare launch": [3.0, 3.5, 6.0],
            "PyTorch": [2.0, 2.5, 4.0],
            "CUDA graph": [5000.0, 6000.0, 9000.0],
        },
        "inputs": {
            "add": "x (4096,) float32, y (4096,) float32",
            "softmax": "x (8, 1024) float32",
            "matmul": "a (64, 64) float16, b (64, 64) float16",
        },
        "code": {
            "fingerprint": "0123456789abcdef",
            "commit": COMMIT,
            "files": {"kernels/launch_cost.py": "0123456789abcdef"},
        },
        "environment": copy.deepcopy(sample_doc()["environment"]),
        "timing": {"calls": 2000, "repeats": 7},
    }
    doc.update(copy.deepcopy(changes))
    return doc


def launch_doc_of(launchers: list[str], **changes: Any) -> dict[str, Any]:
    """:func:`launch_doc` cut to ``launchers`` (of :data:`LAUNCHERS`), in that order, with
    ``changes`` applied: one family's record."""
    doc = launch_doc()
    at = [LAUNCHERS.index(name) for name in launchers]
    doc["x"] = list(launchers)
    for key in ("series", "final_wait_us"):
        doc[key] = {series: [values[i] for i in at] for series, values in doc[key].items()}
    doc["inputs"] = {name: doc["inputs"][name] for name in launchers}
    doc.update(copy.deepcopy(changes))
    return doc


def launch_sample(**changes: Any) -> measurements.LaunchOverhead:
    """:func:`launch_doc` as a validated :class:`~kernels.harness.measurements.LaunchOverhead`."""
    return measurements.launch_overhead_from_json(launch_doc(**changes), "sample.json")


def records_folder(monkeypatch: pytest.MonkeyPatch, root: Path, gpu: str | None = None) -> Path:
    """Point the records at ``root`` with ``gpu`` (by default the GPU of :func:`sample_doc`)
    as the primary GPU, and return that GPU's folder, made."""
    gpu = gpu or measurements.gpu_slug(sample_doc()["environment"]["gpu"])
    monkeypatch.setattr(measurements, "MEASUREMENTS_ROOT", root)
    monkeypatch.setattr(measurements, "PRIMARY_GPU", gpu)
    folder = root / gpu
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def within(seconds: int) -> Iterator[None]:
    """Fail the block with :class:`TimeoutError` once it has run ``seconds``: a read that
    blocks on a FIFO named like a file fails its test instead of hanging the run."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s: a read blocked")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def bounded_text(path: Path) -> str:
    """The text of the regular file at ``path``, read as the loaders read a record
    (:func:`kernels.harness.measurements.read_bounded`): a FIFO, a device or a directory named
    like a file, or a file past the size of a record, is an error that names the file,
    not a hang or the whole memory."""
    try:
        return measurements.read_bounded(path, measurements.MAX_FILE_BYTES).decode("utf-8")
    except OSError as error:
        raise OSError(f"{path}: cannot read it ({error.strerror or error})") from None


def committed_doc(path: Path) -> dict[str, Any]:
    """The JSON object of the record file at ``path``, read by :func:`bounded_text`."""
    return json.loads(bounded_text(path))

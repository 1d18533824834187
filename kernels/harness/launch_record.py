"""The launch-cost records: measured on a GPU, drawn from their files elsewhere.

The records that are not rates: the host time of one call of each launcher, of a bare
launch of its kernel and of PyTorch's equivalent, timed by
:mod:`kernels.harness.launch_cost`. Each kernel family's rows make one record,
``launch_overhead_<family>`` (:data:`LAUNCH_RECORDS`), whose fingerprint covers the
timing code and that family's module only: a changed family re-measures its own rows.
The functions here give them the life the other records get from
:mod:`kernels.harness.bench`: measured on a GPU, drawn from their files elsewhere,
refused when missing or stale, a placeholder in a draft build; and
:func:`launch_overhead_or_load` gives a page every family's rows as one record. They
live apart from the harness because the timing code imports every launcher: a page that
imports the harness need not depend on them all.
"""

import time
from collections.abc import Sequence

from ..triton_helpers.runtime import interpreted
from . import fingerprint, launch_cost, measurements, provenance
from .bench import draft, measuring, refuse_if_stale, save_and_keep_primary
from .measurements import Code, LaunchOverhead, MeasurementError

# Every family's launch-cost record, by name (launch_overhead_vector_add), in order of
# the families' names: the family's short name.
LAUNCH_RECORDS: dict[str, str] = {
    measurements.launch_record_name(family): family
    for family in launch_cost.FAMILY_ROWS
}


def _family(name: str) -> str:
    # The family whose launch-cost record ``name`` is; a clear error for any other name.
    if name not in LAUNCH_RECORDS:
        raise MeasurementError(
            f"no family has a launch-cost record named {name!r}; the records are "
            f"{', '.join(LAUNCH_RECORDS)}"
        )
    return LAUNCH_RECORDS[name]


def launch_overhead_code(name: str) -> Code:
    """The fingerprint of the code that launch-cost record ``name`` runs now:
    :mod:`kernels.harness.launch_cost` (the timing code), the family's module, and every
    :mod:`kernels` module they import."""
    files = fingerprint.code_digests(
        launch_cost.__name__,
        timing_module=None,
        extra_modules=(launch_cost.FAMILY_MODULES[_family(name)],),
    )
    return Code(
        fingerprint=fingerprint.combine(files), commit=fingerprint.commit(), files=files
    )


def _by_series(
    costs: list[launch_cost.LauncherCost], what: str
) -> dict[str, tuple[float | None, ...]]:
    # One of HostTime's fields, as the record's series (measurements.LAUNCH_SERIES);
    # None where a way has no time (a launcher no CUDA graph could hold).
    ways = {
        "Triton": "triton",
        "bare launch": "bare",
        "PyTorch": "torch",
        "CUDA graph": "graph",
    }
    return {
        series: tuple(
            None if getattr(cost, way) is None else getattr(getattr(cost, way), what)
            for cost in costs
        )
        for series, way in ways.items()
    }


def _unavailable(costs: list[launch_cost.LauncherCost]) -> dict[str, str]:
    # The reasons of the launchers without a CUDA graph time, under the series' name.
    reasons = [f"{c.launcher}: {c.graph_unavailable}" for c in costs if c.graph is None]
    return {"CUDA graph": "; ".join(reasons)} if reasons else {}


def measure_launch_overhead(name: str) -> LaunchOverhead:
    """Time the launchers of launch-cost record ``name``'s family three ways on this GPU
    (:func:`kernels.harness.launch_cost.measure`) and return the record; without a GPU,
    raise ``RuntimeError``."""
    family = _family(name)
    if interpreted():
        raise RuntimeError(launch_cost.NO_GPU)
    started = time.perf_counter()
    costs = launch_cost.measure(launch_cost.FAMILY_ROWS[family])
    for cost in costs:
        print(
            f"{cost.launcher:>14}: Triton {cost.triton.per_call_us:6.1f}, bare launch "
            f"{cost.bare.per_call_us:6.1f}, PyTorch {cost.torch.per_call_us:6.1f}, CUDA graph "
            + ("n/a" if cost.graph is None else f"{cost.graph.per_call_us:6.1f}")
            + " us per call",
            flush=True,
        )
    return LaunchOverhead(
        benchmark=name,
        metric=measurements.LAUNCH_METRIC,
        x_name="launcher",
        x=tuple(cost.launcher for cost in costs),
        series=_by_series(costs, "per_call_us"),
        final_wait_us=_by_series(costs, "final_wait_us"),
        inputs={cost.launcher: cost.inputs for cost in costs},
        unavailable=_unavailable(costs),
        code=launch_overhead_code(name),
        environment=provenance.capture(),
        details={
            "timing": {
                "host_time": (
                    "calls back to back after a warm-up, one torch.cuda.synchronize() at the "
                    "end, time.perf_counter_ns around both, over the number of calls; median "
                    "over the repeats, the three ways of calling taking turns"
                ),
                "cuda_graph": (
                    "the launcher's calls captured once in one CUDA graph; each timing one "
                    "replay and one torch.cuda.synchronize(), over the number of calls"
                ),
                "calls": launch_cost.CALLS,
                "repeats": launch_cost.REPEATS,
                "warmup_calls": launch_cost.WARMUP_CALLS,
                # How long measuring took, which the shards are balanced by.
                "measured_s": round(time.perf_counter() - started, 1),
            },
        },
        fresh=True,
    )


def load_current_launch_overhead(name: str, gpu: str | None = None) -> LaunchOverhead:
    """The recorded launch-cost record ``name`` of ``gpu`` (the primary GPU's by default),
    which must come from the code as it is now and hold its family's rows; raises as
    :func:`~kernels.harness.bench.load_current` does."""
    rows = launch_cost.FAMILY_ROWS[_family(name)]
    record = measurements.load_launch_overhead(name, gpu)
    refuse_if_stale(name, record.code, launch_overhead_code(name), gpu)
    if record.x != rows:
        missing = [row for row in rows if row not in record.x]
        extra = [row for row in record.x if row not in rows]
        raise MeasurementError(
            f"{measurements.path_for(name, gpu)}: the launchers are {list(record.x)}; "
            f"the family has {list(rows)} (missing {missing}, not the family's {extra})"
        )
    return record


def launch_overhead_placeholder(reason: str) -> LaunchOverhead:
    """A draft build's stand-in for every family's launch-cost rows: the launchers, no
    times."""
    return LaunchOverhead(
        benchmark=measurements.LAUNCH_OVERHEAD,
        metric=measurements.LAUNCH_METRIC,
        x_name="launcher",
        x=tuple(launch_cost.LAUNCHERS),
        series={},
        final_wait_us={},
        inputs={},
        code=Code(fingerprint="", commit=fingerprint.commit(), files={}),
        environment={},
        details={"reason": reason},
        placeholder=True,
    )


def combined(records: Sequence[LaunchOverhead]) -> LaunchOverhead:
    """The families' launch-cost ``records`` as one, for a page: their launchers in
    order, each series joined; the code of them all (the commits each names, once each);
    the environment of the first (the records of one GPU folder name one GPU); fresh
    where any was measured by this process."""
    if not records:
        raise ValueError("no launch-cost records to combine")
    series = {
        provider: tuple(t for record in records for t in record.series[provider])
        for provider in records[0].series
    }
    waits = {
        provider: tuple(t for record in records for t in record.final_wait_us[provider])
        for provider in records[0].final_wait_us
    }
    unavailable: dict[str, list[str]] = {}
    for record in records:
        for provider, reason in record.unavailable.items():
            unavailable.setdefault(provider, []).append(reason)
    files = {path: h for record in records for path, h in record.code.files.items()}
    commits = dict.fromkeys(record.code.commit for record in records)
    return LaunchOverhead(
        benchmark=measurements.LAUNCH_OVERHEAD,
        metric=measurements.LAUNCH_METRIC,
        x_name=records[0].x_name,
        x=tuple(row for record in records for row in record.x),
        series=series,
        final_wait_us=waits,
        inputs={row: text for record in records for row, text in record.inputs.items()},
        code=Code(
            fingerprint=fingerprint.combine(files),
            commit=", ".join(fingerprint.short_commit(c) for c in commits),
            files=files,
        ),
        environment=records[0].environment,
        unavailable={p: "; ".join(reasons) for p, reasons in unavailable.items()},
        details={"records": [record.benchmark for record in records]},
        fresh=any(record.fresh for record in records),
    )


def recorded_launch_overhead() -> LaunchOverhead:
    """Every family's launch-cost rows as one record (:func:`combined`), as a page draws
    them, from the primary GPU's records; in a draft build, a placeholder when any is
    missing, malformed or stale."""
    records, problems = [], []
    for name in LAUNCH_RECORDS:
        try:
            records.append(load_current_launch_overhead(name))
        except MeasurementError as error:
            if not draft():
                raise
            problems.append(str(error))
    if problems:
        for problem in problems:
            print(f"Draft build: {problem}")
        return launch_overhead_placeholder("; ".join(problems))
    return combined(records)


def launch_overhead_or_load() -> LaunchOverhead:
    """On a GPU, measure every family's launch-cost record and write each to that GPU's
    folder. Return the primary GPU's rows as one record (:func:`combined`): those just
    measured on the primary GPU, else :func:`recorded_launch_overhead`."""
    if not measuring():
        return recorded_launch_overhead()
    fresh = []
    for name in LAUNCH_RECORDS:
        record = measure_launch_overhead(name)
        fresh.append(save_and_keep_primary(record, lambda record=record: record))
    if measurements.gpu_slug(fresh[0].environment["gpu"]) != measurements.PRIMARY_GPU:
        return recorded_launch_overhead()
    return combined(fresh)

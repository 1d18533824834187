"""The launch_overhead record: measured on a GPU, drawn from its file elsewhere.

The one record that is not a rate: the host time of one call of each launcher, of a
bare launch of its kernel and of PyTorch's equivalent, timed by
:mod:`kernels.harness.launch_cost`. The functions here give it the life the other records get
from :mod:`kernels.harness.bench`: measured on a GPU, drawn from its file elsewhere, refused
when missing or stale, a placeholder in a draft build. They live apart from the
harness because the timing code imports every launcher: a page that imports the
harness need not depend on them all.
"""

import time

from ..triton_helpers.runtime import interpreted
from . import fingerprint, launch_cost, measurements, provenance
from .bench import draft, measuring, refuse_if_stale, save_and_keep_primary
from .measurements import LAUNCH_OVERHEAD, Code, LaunchOverhead, MeasurementError


def launch_overhead_code() -> Code:
    """The fingerprint of the code the launch_overhead record runs now:
    :mod:`kernels.harness.launch_cost`
    (its own timing code) and every :mod:`kernels` module it imports, the launchers'."""
    files = fingerprint.code_digests(
        launch_cost.__name__,
        timing_module=None,
        extra_modules=launch_cost.LAUNCHER_MODULES,
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


def measure_launch_overhead() -> LaunchOverhead:
    """Time every launcher three ways on this GPU (:func:`kernels.harness.launch_cost.measure`)
    and return the launch_overhead record; without a GPU, raise ``RuntimeError``."""
    if interpreted():
        raise RuntimeError(launch_cost.NO_GPU)
    started = time.perf_counter()
    costs = launch_cost.measure()
    for cost in costs:
        print(
            f"{cost.launcher:>14}: Triton {cost.triton.per_call_us:6.1f}, bare launch "
            f"{cost.bare.per_call_us:6.1f}, PyTorch {cost.torch.per_call_us:6.1f}, CUDA graph "
            + ("n/a" if cost.graph is None else f"{cost.graph.per_call_us:6.1f}")
            + " us per call",
            flush=True,
        )
    return LaunchOverhead(
        benchmark=LAUNCH_OVERHEAD,
        metric=measurements.LAUNCH_METRIC,
        x_name="launcher",
        x=tuple(cost.launcher for cost in costs),
        series=_by_series(costs, "per_call_us"),
        final_wait_us=_by_series(costs, "final_wait_us"),
        inputs={cost.launcher: cost.inputs for cost in costs},
        unavailable=_unavailable(costs),
        code=launch_overhead_code(),
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


def load_current_launch_overhead(gpu: str | None = None) -> LaunchOverhead:
    """The recorded launch_overhead record of ``gpu`` (the primary GPU's by default), which
    must come from the code as it is now; raises as :func:`load_current` does."""
    record = measurements.load_launch_overhead(gpu)
    refuse_if_stale(LAUNCH_OVERHEAD, record.code, launch_overhead_code(), gpu)
    if record.x != tuple(launch_cost.LAUNCHERS):
        missing = [name for name in launch_cost.LAUNCHERS if name not in record.x]
        extra = [name for name in record.x if name not in launch_cost.LAUNCHERS]
        raise MeasurementError(
            f"{measurements.path_for(LAUNCH_OVERHEAD, gpu)}: the launchers are {list(record.x)}; "
            f"the course has {list(launch_cost.LAUNCHERS)} (missing {missing}, not the "
            f"course's {extra})"
        )
    return record


def launch_overhead_placeholder(reason: str) -> LaunchOverhead:
    """A draft build's stand-in for the launch_overhead record: the launchers, no times."""
    return LaunchOverhead(
        benchmark=LAUNCH_OVERHEAD,
        metric=measurements.LAUNCH_METRIC,
        x_name="launcher",
        x=tuple(launch_cost.LAUNCHERS),
        series={},
        final_wait_us={},
        inputs={},
        code=launch_overhead_code(),
        environment={},
        details={"reason": reason},
        placeholder=True,
    )


def recorded_launch_overhead() -> LaunchOverhead:
    """The launch_overhead record a page may draw, as :func:`recorded` gives the others: a
    placeholder in a draft build when it is missing, malformed or stale."""
    try:
        return load_current_launch_overhead()
    except MeasurementError as error:
        if not draft():
            raise
        print(f"Draft build: {error}")
        return launch_overhead_placeholder(str(error))


def launch_overhead_or_load() -> LaunchOverhead:
    """On a GPU, measure the launch_overhead record and write it to that GPU's folder.
    Return the primary GPU's: the one just measured on the primary GPU, else
    :func:`recorded_launch_overhead`."""
    if measuring():
        return save_and_keep_primary(
            measure_launch_overhead(), recorded_launch_overhead
        )
    return recorded_launch_overhead()

"""Measuring in parts: the benchmarks split into shards that runners (or the GPUs of one
machine) measure side by side, each writing its own records.

A shard holds whole kernel modules (a page sets its module's records side by side, and the
tests ask for one commit per module), and the shards are balanced by how long each
benchmark took to measure the last time, as its record says (``timing.measured_s``); a
benchmark whose record does not say counts as the mean of those that do.
"""

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from . import measurements
from .measurements import MeasurementError


@dataclass(frozen=True)
class Shard:
    """One part of the benchmarks: its names, in measuring order, and its expected time
    (``timed``: how many of its benchmarks had a recorded time; the others count as the
    mean of those that did)."""

    names: tuple[str, ...]
    seconds: float
    timed: int = 0


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/6"`` as ``(2, 6)``: shard 2 of 6, counted from 1."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"a shard is written I/N, such as 2/6; got {text!r}") from None
    if not 1 <= index <= count:
        raise ValueError(f"shard {text}: I must be from 1 to N")
    return index, count


def measured_seconds(name: str, gpu: str | None = None) -> float | None:
    """How long ``name``'s record on ``gpu`` (the primary by default) took to measure, or
    None when there is no readable record or it does not say."""
    try:
        record = measurements.load(name, gpu=gpu)
    except MeasurementError:
        return None
    seconds = record.details.get("timing", {}).get("measured_s")
    # JSON's true reads as True, an int equal to 1: no run took that as its time.
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or seconds <= 0
    ):
        return None
    return float(seconds)


def plan(
    modules: Mapping[str, str], count: int, seconds: Mapping[str, float | None]
) -> list[Shard]:
    """``count`` shards of the benchmarks ``modules`` (each name mapped to its kernel
    module), every module whole in one shard, balanced by ``seconds`` (a benchmark's
    measuring time; None counts as the mean of the known ones). Largest module first,
    each into the shard with the least time so far; names keep their order within a
    module. A shard may be empty when there are more shards than modules."""
    if count < 1:
        raise ValueError(f"the benchmarks need at least one shard, not {count}")
    known = [value for value in seconds.values() if value is not None]
    mean = sum(known) / len(known) if known else 1.0
    groups: dict[str, list[str]] = {}
    for name, module in modules.items():
        groups.setdefault(module, []).append(name)

    def cost(names: list[str]) -> float:
        return sum(
            mean if seconds.get(name) is None else seconds[name] for name in names
        )  # type: ignore[misc]

    order = sorted(groups.values(), key=lambda names: (-cost(names), names[0]))
    shards: list[list[str]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for names in order:
        lightest = min(range(count), key=lambda index: (loads[index], index))
        shards[lightest] += names
        loads[lightest] += cost(names)
    return [
        Shard(tuple(names), load, sum(seconds.get(name) is not None for name in names))
        for names, load in zip(shards, loads, strict=True)
    ]


def imbalance(shards: Sequence[Shard]) -> float:
    """The longest shard's time over the mean shard's (1.0 is perfectly balanced)."""
    mean = sum(shard.seconds for shard in shards) / len(shards)
    # No work at all is as balanced as it gets.
    return max(shard.seconds for shard in shards) / mean if mean else 1.0


def describe(shards: Sequence[Shard], only: int | None = None) -> str:
    """The plan as lines of text: each shard's number, expected time and benchmarks (with
    ``only``, that shard's line alone), then the balance of the plan."""
    lines = []
    for index, shard in enumerate(shards, start=1):
        if only not in (None, index):
            continue
        known = f"{shard.timed} of {len(shard.names)} timed before"
        lines.append(
            f"shard {index}/{len(shards)}: about {shard.seconds:.0f} s ({known}): "
            + " ".join(shard.names)
        )
    lines.append(f"longest shard / mean: {imbalance(shards):.2f}")
    return "\n".join(lines)


def visible_gpus(environ: Mapping[str, str] | None = None) -> list[str]:
    """The GPUs this process may use, as ``CUDA_VISIBLE_DEVICES`` names them (by default
    from the environment; unset: every GPU that ``nvidia-smi`` lists, by index)."""
    environ = os.environ if environ is None else environ
    listed = environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [gpu.strip() for gpu in listed.split(",") if gpu.strip()]
    try:
        result = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def shard_command(index: int, count: int, extra: Sequence[str] = ()) -> list[str]:
    """The command that measures shard ``index`` of ``count``."""
    return [
        sys.executable,
        "-m",
        f"{__package__}.recording",
        "--shard",
        f"{index}/{count}",
        *extra,
    ]


def run_on_gpus(
    gpus: Sequence[str],
    command: Callable[[int, int], list[str]] = shard_command,
    environ: Mapping[str, str] | None = None,
) -> list[int]:
    """Measure shard I of N on the I-th of ``gpus`` (N = their number), one process per
    GPU, all at once, each seeing only its own GPU; return the exit codes in shard order.
    With one GPU that is one process measuring everything."""
    if not gpus:
        raise RuntimeError(
            "no GPU is visible: CUDA_VISIBLE_DEVICES is empty or nvidia-smi lists none"
        )
    base = dict(os.environ if environ is None else environ)
    processes = [
        subprocess.Popen(
            command(index, len(gpus)), env={**base, "CUDA_VISIBLE_DEVICES": gpu}
        )
        for index, gpu in enumerate(gpus, start=1)
    ]
    return [process.wait() for process in processes]

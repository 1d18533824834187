"""What a gallery page prints under its figure: the sizes that matter, against the ceiling
and a baseline (by default the fastest at each size), read from the record itself (kernel
time, the record's ``work``)."""

import math
from typing import Any

from kernels.measurements import Measurement

# A same-size copy above this share of the ceiling is more than run-to-run noise.
COPY_ABOVE_CEILING = 1.02
# The widest line a page's code block shows without a scroll bar (the table's width).
LINE_WIDTH = 101


def large_sizes(
    measurement: Measurement, min_work: float, against: str | None = None
) -> list[dict[str, Any]]:
    """One row per measured size whose call needs at least ``min_work`` (bytes or FLOPs,
    the record's ``work``): the Triton rate, its share of the ceiling, and its ratio to
    the ``against`` series, or to the fastest baseline at that size. Where the record
    has one, ``copy_of_ceiling`` is the share of the ceiling that a copy of the same
    number of bytes reached in the same run (else None). Rates are kernel time; a
    baseline with no rate at a size is passed over there."""
    rows = []
    ceiling = measurement.ceiling.value
    same_size_copy = measurement.same_size_copy
    series = measurement.series
    for index, (size, work) in enumerate(zip(measurement.x, measurement.work, strict=True)):
        triton_rate = series["Triton"][index]
        if work < min_work or triton_rate is None:
            continue
        ran = [name for name in measurement.baselines if series[name][index] is not None]
        best = against or max(ran, key=lambda name: series[name][index])
        baseline_rate = series[best][index]
        rows.append({
            "size": size,
            "work": work,
            "triton": triton_rate,
            "of_ceiling": triton_rate / ceiling,
            "best_baseline": best,
            "vs_best": triton_rate / baseline_rate if baseline_rate else math.nan,
            "copy_of_ceiling": same_size_copy[index] / ceiling if same_size_copy else None,
        })  # fmt: skip
    return rows


def print_large_sizes(
    measurement: Measurement,
    min_work: float = 256e6,
    *,
    ceiling_goal: float | None = None,
    baseline_goal: float | None = None,
    against: str | None = None,
) -> list[dict[str, Any]]:
    """Print :func:`large_sizes` as a table and return its rows.

    With ``ceiling_goal`` (a share of the ceiling) or ``baseline_goal`` (a ratio to the
    baseline), each row also says whether the measurement reached it, and a line per
    goal under the table says where it was met and where missed. A note follows when a
    same-size copy beat the ceiling by more than run-to-run noise.
    """
    if measurement.placeholder:
        print(f"{measurement.benchmark}: not measured yet, so there is no table.")
        return []
    rows = large_sizes(measurement, min_work, against)
    metric, x_name = measurement.metric, measurement.x_name
    if metric == "GB/s":
        unit, scale, work_label = "MB", 1e6, "MB/call"
        print(f"Sizes where one call moves at least {min_work / scale:,.0f} {unit} ({metric}):")
    else:
        unit, scale, work_label = "GFLOP", 1e9, "GFLOP"
        print(f"Sizes where one call needs at least {min_work / scale:,.0f} {unit} ({metric}):")
    baseline_label = against or "faster baseline"
    baseline_phrase = against or "the faster baseline"
    # Each goal: its name in the verdict line, its column heading, the row value it
    # judges and the target; each size is judged once, for its column and the line.
    goals = []
    if ceiling_goal is not None:
        pct = f"{ceiling_goal:.0%}"
        goals.append((f"Ceiling goal ({pct})", f"goal {pct}", "of_ceiling", ceiling_goal))
    if baseline_goal is not None:
        ratio = f"{baseline_goal:.2f}x"
        goals.append((f"Baseline goal ({ratio})", f"goal {ratio}", "vs_best", baseline_goal))
    met_at: dict[str, list[int]] = {name: [] for name, *_ in goals}
    missed_at: dict[str, list[int]] = {name: [] for name, *_ in goals}
    if goals:
        print(f"Goals: a share of the ceiling, a ratio to {baseline_phrase}; met in this run?")
    with_copy = bool(rows) and rows[0]["copy_of_ceiling"] is not None
    if with_copy:
        print(
            "'copy': a same-size copy, moving as many bytes as one call, timed alike "
            "(share of the ceiling)."
        )
    # Narrow columns: the table must fit a page's code block without scrolling.
    print(
        f"{x_name:>11} {work_label:>9} {'Triton':>8} {'of ceiling':>11} "
        + (f"{'copy':>6} " if with_copy else "")
        + f"{baseline_label:>16} {'Triton vs it':>12}"
        + "".join(f" {heading:>10}" for _, heading, _, _ in goals)
    )
    for row in rows:
        verdicts = []
        for name, _, key, target in goals:
            met = row[key] >= target
            (met_at if met else missed_at)[name].append(row["size"])
            verdicts.append("met" if met else "MISSED")
        print(
            f"{row['size']:>11,} {row['work'] / scale:>9,.0f} {row['triton']:>8,.0f} "
            f"{row['of_ceiling']:>11.1%} "
            + (f"{row['copy_of_ceiling']:>6.1%} " if with_copy else "")
            + f"{row['best_baseline']:>16} {row['vs_best']:>11.2f}x"
            + "".join(f" {v:>10}" for v in verdicts)
        )
    if rows:
        for name, *_ in goals:
            _print_verdict(name, x_name, met_at[name], missed_at[name])
    fastest_copy = max((row["copy_of_ceiling"] or 0.0 for row in rows), default=0.0)
    if fastest_copy > COPY_ABOVE_CEILING:
        # Two copies differ by a percent or two run to run; more means the ceiling
        # timing of this run read low, and every share of it above reads high with it.
        print(
            f"Note: a same-size copy ran at {fastest_copy:.0%} of this run's ceiling: "
            "the ceiling's timing\nread low, so the shares of it above read high."
        )
    return rows


def size_list(sizes: list[int]) -> str:
    """Sizes as a phrase: ``4,096``, ``4,096 and 8,192``, ``4,096, 8,192 and 16,384``."""
    names = [f"{size:,}" for size in sizes]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _print_verdict(goal: str, x_name: str, met: list[int], missed: list[int]) -> None:
    # The verdict in words, from the measurement: prose typed beside a table goes stale
    # when the benchmarks are measured again, this line does not.
    if not missed:
        print(f"{goal}: met at every size in the table.")
    elif not met:
        print(f"{goal}: missed at every size in the table.")
    else:
        met_part = f"{goal}: met at {x_name} = {size_list(met)};"
        missed_part = f"missed at {size_list(missed)}."
        # Like the table, the line must fit a page's code block without scrolling.
        one_line = len(met_part) + 1 + len(missed_part) <= LINE_WIDTH
        print(met_part + (" " if one_line else "\n    ") + missed_part)


def print_peak_memory(measurement: Measurement) -> None:
    """Print the peak memory recorded beside a benchmark: a row per size, a column per
    provider, ``out of memory`` where it did not fit."""
    if measurement.placeholder or measurement.peak_memory_mb is None:
        print(f"{measurement.benchmark}: no peak memory recorded.")
        return
    peak = measurement.peak_memory_mb
    print(f"{measurement.x_name:>16} " + " ".join(f"{name:>15}" for name in peak))
    for index, size in enumerate(measurement.x):
        cells = [values[index] for values in peak.values()]
        text = [f"{'out of memory':>15}" if mb is None else f"{mb:>12,.0f} MB" for mb in cells]
        print(f"{size:>16,} " + " ".join(text))

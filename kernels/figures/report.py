"""What a gallery page prints under its figure: the sizes that matter, against the ceiling
and a baseline (by default the fastest at each size), read from the record itself (kernel
time, the record's ``work``). And what the launch_overhead record says per launcher: how
a call's host time divides between the launcher's Python and Triton's launch. Under the
primary GPU's table, the other GPUs' records of the benchmark
(:mod:`kernels.figures.other_gpus`)."""

import html
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

from ..harness import measurements
from ..harness.measurements import LAUNCH_LOOPS, LaunchOverhead, Measurement
from ..text.messages import _, axis_name, number, series_name, translated
from . import other_gpus

# A same-size copy above this share of the ceiling is more than run-to-run noise.
COPY_ABOVE_CEILING = 1.02


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
    for index, (size, work) in enumerate(
        zip(measurement.x, measurement.work, strict=True)
    ):
        triton_rate = series["Triton"][index]
        if work < min_work or triton_rate is None:
            continue
        ran = [
            name for name in measurement.baselines if series[name][index] is not None
        ]
        best = against or max(ran, key=lambda name: series[name][index])
        baseline_rate = series[best][index]
        rows.append(
            {
                "size": size,
                "work": work,
                "triton": triton_rate,
                "of_ceiling": triton_rate / ceiling,
                "best_baseline": best,
                "vs_best": triton_rate / baseline_rate if baseline_rate else math.nan,
                "copy_of_ceiling": same_size_copy[index] / ceiling
                if same_size_copy
                else None,
            }
        )
    return rows


@dataclass(frozen=True)
class ResultTable:
    """What a gallery page shows under its figure: a caption, a table with a row per
    large size, and lines that say in words where each goal was met. A page shows it as
    an HTML table (``_repr_html_``, which sphinx-gallery and Jupyter display); ``str()``
    gives the same as plain text."""

    caption: list[str]
    header: list[str]
    rows: list[list[str]]
    notes: list[str]
    sizes: list[dict[str, Any]] = field(default_factory=list)
    # The other GPUs' records of the benchmark, as tabs (HTML), and those GPUs' names.
    beside_html: str = ""
    beside: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        if not self.header:
            return "\n".join(self.caption)
        table = [self.header, *self.rows]
        widths = [
            max(len(cell) for cell in column) for column in zip(*table, strict=True)
        ]
        lines = [
            " ".join(c.rjust(w) for c, w in zip(row, widths, strict=True))
            for row in table
        ]
        also = [_("Also recorded on: {gpus}.").format(gpus=", ".join(self.beside))]
        return "\n".join(
            [*self.caption, *lines, *self.notes, *(also if self.beside else [])]
        )

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        # Every text is escaped: provider names and sizes come from a record file.
        def cells(tag: str, row: list[str]) -> str:
            return "".join(f"<{tag}>{html.escape(cell)}</{tag}>" for cell in row)

        parts = ['<div class="result-table">']
        parts += [f"<p>{html.escape(line)}</p>" for line in self.caption]
        if self.header:
            parts.append('<div class="result-table-scroll"><table>')
            parts.append(f"<thead><tr>{cells('th', self.header)}</tr></thead><tbody>")
            parts += [f"<tr>{cells('td', row)}</tr>" for row in self.rows]
            parts.append("</tbody></table></div>")
        parts += [f"<p>{html.escape(line)}</p>" for line in self.notes]
        parts.append("</div>")
        if self.beside_html:
            parts.append(self.beside_html)
        return "\n".join(parts)


def _not_measured(benchmark: str) -> ResultTable:
    """The table of a benchmark with no record yet (a draft's placeholder): one line."""
    missing = _("{benchmark}: not measured yet, so there is no table.")
    return ResultTable([missing.format(benchmark=benchmark)], [], [], [])


def _missing_rates(measurement: Measurement) -> list[str]:
    """Where a line of the figure has gaps, or is missing, and why (the record's words,
    which stay as the record has them): a note per series."""
    return [
        _("No {name} rate {reason}.").format(
            name=name, reason=reason_text(reason).rstrip(".")
        )
        for name, reason in measurement.unavailable.items()
    ]


def round_down(value: float, decimals: int) -> float:
    """``value`` rounded down to ``decimals`` places (NaN stays NaN): a share or ratio
    printed this way is never more than was measured, so "met" and "or more" stay true."""
    return (
        value if math.isnan(value) else math.floor(value * 10**decimals) / 10**decimals
    )


def _share(value: float) -> str:
    """A share as a percentage with one decimal, rounded down."""
    return number(f"{round_down(100 * value, 1):.1f}%")


def _amount(value: float) -> str:
    """A work threshold as a short number: ``256``, ``1,024``, ``0.5``."""
    return number(f"{value:,.0f}" if value >= 10 else f"{value:.2g}")


def results_table(
    measurement: Measurement,
    min_work: float = 256e6,
    *,
    ceiling_goal: float | None = None,
    baseline_goal: float | None = None,
    against: str | None = None,
) -> ResultTable:
    """:func:`large_sizes` as a :class:`ResultTable`.

    With ``ceiling_goal`` (a share of the ceiling) or ``baseline_goal`` (a ratio to the
    baseline), each row also says whether the measurement reached it, and a line per
    goal under the table says where it was met and where missed. A note follows when a
    same-size copy beat the ceiling by more than run-to-run noise.

    Under the primary GPU's record, the table also
    carries the other GPUs' current records of the benchmark, each with its own figure
    and this same table, shown as tabs.
    """
    table = _results_table(measurement, min_work, ceiling_goal, baseline_goal, against)
    if not _of_the_primary_gpu(measurement):
        return table
    tabs = [
        other_gpus.tab_of(
            record,
            _results_table(
                record, min_work, ceiling_goal, baseline_goal, against
            )._repr_html_(),
        )
        for record in other_gpus.records_beside(measurement)
    ]
    return replace(
        table,
        beside_html=other_gpus.tabs_html(measurement.benchmark, tabs),
        beside=[tab.gpu for tab in tabs],
    )


def _of_the_primary_gpu(measurement: Measurement) -> bool:
    # A draft's placeholder stands for no GPU's record: its page shows no tabs either.
    if measurement.placeholder:
        return False
    return (
        measurements.gpu_slug(measurement.environment["gpu"])
        == measurements.PRIMARY_GPU
    )


def _results_table(
    measurement: Measurement,
    min_work: float,
    ceiling_goal: float | None,
    baseline_goal: float | None,
    against: str | None,
) -> ResultTable:
    if measurement.placeholder:
        return _not_measured(measurement.benchmark)
    sizes = large_sizes(measurement, min_work, against)
    # The metric and the size's name as the table shows them, in the edition's language.
    metric = translated(measurement.metric)
    x_name = translated(measurement.x_name)
    if measurement.metric == "GB/s":
        scale, work_label = 1e6, _("MB/call")
        threshold = _("Sizes where one call moves at least {amount} MB:")
    else:
        scale, work_label = 1e9, _("GFLOP/call")
        threshold = _("Sizes where one call needs at least {amount} GFLOP:")
    amount = _amount(min_work / scale)
    caption = [
        threshold.format(amount=amount) if min_work > 0 else _("Every measured size:")
    ]
    if against:
        ratio = _(
            "Triton vs {against}: Triton's rate divided by {against}'s "
            "(above 1.00x, Triton is faster)."
        )
    elif len(measurement.baselines) <= 2:
        ratio = _(
            "Triton vs it: Triton's rate divided by the faster baseline's "
            "(above 1.00x, Triton is faster)."
        )
    else:
        ratio = _(
            "Triton vs it: Triton's rate divided by the fastest baseline's "
            "(above 1.00x, Triton is faster)."
        )
    caption.append(ratio.format(against=against))
    # Against one named baseline, its name heads the ratio's column; else a column says
    # which baseline was the faster (or the fastest) at each size.
    best = (
        _("faster baseline")
        if len(measurement.baselines) <= 2
        else _("fastest baseline")
    )
    ratio_columns = (
        [_("Triton vs {against}").format(against=against)]
        if against
        else [best, _("Triton vs it")]
    )
    # Each goal: its name in the verdict line, its column heading, the row value it
    # judges and the target; each size is judged once, for its column and the line.
    goals = []
    targets = []
    if ceiling_goal is not None:
        pct = number(f"{ceiling_goal:.0%}")
        name = _("Ceiling goal ({target})").format(target=pct)
        goals.append(
            (name, _("goal {target}").format(target=pct), "of_ceiling", ceiling_goal)
        )
        targets.append(_("at least {share} of the ceiling").format(share=pct))
    if baseline_goal is not None:
        times = number(f"{baseline_goal:.2f}x")
        name = _("Baseline goal ({target})").format(target=times)
        goals.append(
            (name, _("goal {target}").format(target=times), "vs_best", baseline_goal)
        )
        if against:
            target = _("at least {ratio} {against}'s rate")
        elif len(measurement.baselines) <= 2:
            target = _("at least {ratio} the faster baseline's rate")
        else:  # the fastest of three or more, as the ratio's column says
            target = _("at least {ratio} the fastest baseline's rate")
        targets.append(target.format(ratio=times, against=against))
    if goals:
        if len(goals) > 1:
            both = _("{first} and {second}").format(first=targets[0], second=targets[1])
            line = _(
                "Goals: {targets}; each goal column says met or MISSED in this run."
            )
            caption.append(line.format(targets=both))
        else:
            line = _("Goal: {target}; each goal column says met or MISSED in this run.")
            caption.append(line.format(target=targets[0]))
    with_copy = bool(sizes) and sizes[0]["copy_of_ceiling"] is not None
    if with_copy:
        caption.append(
            _(
                "copy: a plain device copy of as many bytes as one call moves, timed the same "
                "way, as a share of the ceiling."
            )
        )
    header = [
        x_name,
        work_label,
        _("Triton {metric}").format(metric=metric),
        _("of ceiling"),
        *([_("copy")] if with_copy else []),
        *ratio_columns,
        *(goal[1] for goal in goals),
    ]
    met_at: dict[str, list[int]] = {goal[0]: [] for goal in goals}
    missed_at: dict[str, list[int]] = {goal[0]: [] for goal in goals}
    rows = []
    for row in sizes:
        verdicts = []
        for name, _heading, key, target in goals:
            met = row[key] >= target
            (met_at if met else missed_at)[name].append(row["size"])
            verdicts.append(_("met") if met else _("MISSED"))
        # Shares and ratios are shown rounded down, so that a goal shown as reached is
        # reached (0.998x prints as 0.99x, not as a 1.00x that MISSED 1.00x).
        rows.append(
            [
                number(f"{row['size']:,}"),
                number(f"{row['work'] / scale:,.0f}"),
                number(f"{row['triton']:,.0f}"),
                _share(row["of_ceiling"]),
                *([_share(row["copy_of_ceiling"])] if with_copy else []),
                *([] if against else [row["best_baseline"]]),
                number(f"{round_down(row['vs_best'], 2):.2f}x"),
                *verdicts,
            ]
        )
    notes = [
        _verdict(name, x_name, met_at[name], missed_at[name])
        for name, *_rest in goals
        if sizes
    ]
    notes += _missing_rates(measurement)
    fastest_copy = max((row["copy_of_ceiling"] or 0.0 for row in sizes), default=0.0)
    if fastest_copy > COPY_ABOVE_CEILING:
        # Two copies differ by a percent or two run to run; more means the ceiling
        # timing of this run read low, and every share of it above reads high with it.
        note = _(
            "Note: a same-size copy ran at {share} of this run's ceiling: "
            "the ceiling's timing read low, so the shares of it above read high."
        )
        notes.append(note.format(share=number(f"{fastest_copy:.0%}")))
    return ResultTable(caption, header, rows, notes, sizes)


def gpu_comparison(first: str, second: str) -> ResultTable:
    """Each benchmark with a current record on both GPUs (folders such as ``h100`` and
    ``h200``): at its largest size (the last column), Triton's rate on each, the second
    over the first, and the same ratio for the two runs' ceilings. A kernel limited by
    the memory keeps pace with the memory: its ratio is close to the copy ceilings'. The
    notes name the benchmarks recorded on one of the two only."""
    ours, theirs = other_gpus.current_records(first), other_gpus.current_records(second)
    both = [name for name in ours if name in theirs]
    caption = [
        _(
            "Triton's rate at each benchmark's largest size on the {first} and on the "
            "{second}, the second divided by the first, and the same for the ceilings "
            "measured in the two runs."
        ).format(first=first.upper(), second=second.upper())
    ]
    # One unit for the whole table goes in the headings, to keep the table narrow.
    metrics = {ours[name].metric for name in both}
    unit = f" {metrics.pop()}" if len(metrics) == 1 else ""
    # The ratios, the point of the table, before the size, which a narrow column may hide.
    header = [
        _("benchmark"),
        first.upper() + unit,
        second.upper() + unit,
        "Triton",
        _("ceiling"),
        _("size"),
    ]
    rows = []
    for name in both:
        a, b = ours[name], theirs[name]
        rate_a, rate_b = a.series["Triton"][-1], b.series["Triton"][-1]
        if rate_a is None or rate_b is None:
            continue  # Triton has a rate at every size of a current record
        own = "" if unit else f" {a.metric}"
        rows.append(
            [
                name,
                number(f"{rate_a:,.0f}{own}"),
                number(f"{rate_b:,.0f}{own}"),
                number(f"{rate_b / rate_a:.2f}x"),
                number(f"{b.ceiling.value / a.ceiling.value:.2f}x"),
                number(f"{a.x[-1]:,}"),
            ]
        )
    if not rows:
        # No table to show: one line that says so, and how to make one.
        nothing = _(
            "No benchmark has a record of the code as it is now on both the {first} and "
            "the {second}: the table appears once each has recorded them (nox -s bench)."
        )
        return ResultTable(
            [nothing.format(first=first.upper(), second=second.upper())], [], [], []
        )
    notes = []
    for gpu, names in (
        (first, sorted(set(ours) - set(theirs))),
        (second, sorted(set(theirs) - set(ours))),
    ):
        if names:
            notes.append(
                _("Recorded on the {gpu} only: {names}.").format(
                    gpu=gpu.upper(), names=", ".join(names)
                )
            )
    return ResultTable(caption, header, rows, notes)


def size_list(sizes: list[int]) -> str:
    """Sizes as a phrase: ``4,096``, ``4,096 and 8,192``, ``4,096, 8,192 and 16,384``."""
    names = [number(f"{size:,}") for size in sizes]
    if len(names) == 1:
        return names[0]
    return _("{sizes} and {last}").format(sizes=", ".join(names[:-1]), last=names[-1])


# A record's line of why a provider has no rate, as the harness writes it: one part per
# reason, "at N=1,024, 2,048: <reason>", the parts joined by "; ".
_REASON_PART = re.compile(
    r"at (?P<x_name>[^=]+)=(?P<sizes>\d[\d,]*(?:, \d[\d,]*)*): (?P<why>.+)", re.DOTALL
)
_NEXT_PART = re.compile(r"; (?=at [^=:]+=\d)")


def reason_text(line: str) -> str:
    """A record's reason that a provider has no rate, in the language of this run: each
    reason translated where the catalog has it (the harness and the baselines write them
    in English), its sizes written as the language writes numbers and separated by
    semicolons (a comma is also the English thousands separator: "128,256, 151,936"
    read as a list is ambiguous)."""
    parts = []
    for part in _NEXT_PART.split(line):
        match = _REASON_PART.fullmatch(part)
        if match is None:
            parts.append(translated(part))
            continue
        sizes = [
            number(f"{int(size.replace(',', '')):,}")
            for size in match["sizes"].split(", ")
        ]
        where = _("at {x_name} = {sizes}: {reason}")
        parts.append(
            where.format(
                x_name=translated(match["x_name"].strip()),
                sizes="; ".join(sizes),
                reason=translated(match["why"]),
            )
        )
    return "; ".join(parts)


def _verdict(goal: str, x_name: str, met: list[int], missed: list[int]) -> str:
    # The verdict in words, from the measurement: prose typed beside a table goes stale
    # when the benchmarks are measured again, this line does not.
    if not missed:
        return _("{goal}: met at every size in the table.").format(goal=goal)
    if not met:
        return _("{goal}: missed at every size in the table.").format(goal=goal)
    line = _("{goal}: met at {x_name} = {met}; missed at {missed}.")
    return line.format(
        goal=goal, x_name=x_name, met=size_list(met), missed=size_list(missed)
    )


def rival_table(measurement: Measurement, ours: str, goal: float) -> ResultTable:
    """One series of a record (``ours``, such as ``"Gluon"``) judged at every size against
    the fastest *other* series there, Triton included: its rate, that rival's name and
    rate, the ratio and whether it reached ``goal``; a line says where the goal was met,
    and the record's reasons for missing rates follow. Sizes where ``ours`` has no rate
    are left out (the notes say why)."""
    if measurement.placeholder:
        return _not_measured(measurement.benchmark)
    metric = translated(measurement.metric)
    x_name = translated(measurement.x_name)
    series = measurement.series
    shown = series_name(ours)
    times = number(f"{goal:.2f}x")
    caption = [
        _(
            "{ours} against the fastest other implementation at each size, its rate "
            "divided by theirs (above 1.00x, {ours} is faster)."
        ).format(ours=shown),
        _(
            "Goal: at least {ratio} their rate; the goal column says met or MISSED in "
            "this run."
        ).format(ratio=times),
    ]
    versus = _("{ours} vs it").format(ours=shown)
    header = [
        x_name,
        _("{ours} {metric}").format(ours=shown, metric=metric),
        _("fastest other"),
        metric,
        versus,
        _("goal {target}").format(target=times),
    ]
    rows, met, missed = [], [], []
    for index, size in enumerate(measurement.x):
        rate = series[ours][index]
        rivals = {
            name: values[index]
            for name, values in series.items()
            if name != ours and values[index] is not None
        }
        if rate is None or not rivals:
            continue
        rival = max(rivals, key=rivals.get)
        ratio = rate / rivals[rival]
        (met if ratio >= goal else missed).append(size)
        # Rounded down, as in the results tables: a ratio shown as reached is reached.
        rows.append(
            [
                number(f"{size:,}"),
                number(f"{rate:,.0f}"),
                series_name(rival),
                number(f"{rivals[rival]:,.0f}"),
                number(f"{round_down(ratio, 2):.2f}x"),
                _("met") if ratio >= goal else _("MISSED"),
            ]
        )
    goal_name = _("Goal ({target})").format(target=times)
    notes = [_verdict(goal_name, x_name, met, missed)] if rows else []
    notes += _missing_rates(measurement)
    return ResultTable(caption, header, rows, notes)


def ablation_table(measurement: Measurement, ours: str = "Triton") -> ResultTable:
    """Every other series of a record as a share of ``ours`` at each size: an ablation,
    in which each series takes one thing out of the kernel that ``ours`` times, reads as
    what that thing was worth (a row below 1.00x: the kernel is that much faster with
    it). The record's reasons for missing rates follow."""
    if measurement.placeholder:
        return _not_measured(measurement.benchmark)
    shown = series_name(ours)
    caption = [
        _(
            "Each series' rate divided by {ours}'s, per column ({x_name}); below "
            "1.00x, {ours} is faster."
        ).format(ours=shown, x_name=translated(measurement.x_name))
    ]
    header = [_("series"), *(number(f"{size:,}") for size in measurement.x)]
    rows = []
    for name, values in measurement.series.items():
        if name == ours:
            continue
        row = [series_name(name)]
        for rate, base in zip(values, measurement.series[ours], strict=True):
            # Rounded down, as in the other tables.
            row.append(
                "n/a"
                if rate is None or base is None
                else number(f"{round_down(rate / base, 2):.2f}x")
            )
        rows.append(row)
    return ResultTable(caption, header, rows, _missing_rates(measurement))


def neighbour_table(
    measurement: Measurement, aligned: Measurement, providers: tuple[str, ...]
) -> ResultTable:
    """Each size of ``measurement`` beside the size one away in ``aligned`` (a record of
    the same metric whose sizes are aligned, such as 2048 beside 2047): per provider, its
    rate at both and the ratio of the first to the second. Sizes with no such neighbour
    are left out."""
    if measurement.placeholder or aligned.placeholder:
        return _not_measured(measurement.benchmark)
    caption = [
        _(
            "{metric} of each provider at each size and one size away, and the first "
            "divided by the second."
        ).format(metric=translated(measurement.metric))
    ]
    header = [translated(measurement.x_name), _("one away")]
    for provider in providers:
        header += [series_name(provider), _("one away"), _("ratio")]
    rows = []
    for index, size in enumerate(measurement.x):
        near = [other for other in aligned.x if abs(other - size) == 1]
        if not near:
            continue
        row = [number(f"{size:,}"), number(f"{near[0]:,}")]
        for provider in providers:
            here = measurement.series[provider][index]
            there = aligned.series[provider][aligned.x.index(near[0])]
            if here is None or there is None:
                row += ["n/a", "n/a", "n/a"]
                continue
            row += [
                number(f"{here:,.0f}"),
                number(f"{there:,.0f}"),
                number(f"{round_down(here / there, 2):.2f}x"),
            ]
        rows.append(row)
    return ResultTable(caption, header, rows, [])


def print_peak_memory(measurement: Measurement) -> None:
    """Print the peak memory recorded beside a benchmark: a row per size, a column per
    provider, ``out of memory`` where it did not fit."""
    if measurement.placeholder or measurement.peak_memory_mb is None:
        print(
            _("{benchmark}: no peak memory recorded.").format(
                benchmark=measurement.benchmark
            )
        )
        return
    peak = measurement.peak_memory_mb
    # Headings, sizes and megabytes in the edition's words and number format.
    names = [series_name(name) for name in peak]
    print(f"{axis_name(measurement.x_name):>16} " + " ".join(f"{n:>15}" for n in names))
    megabytes = _("MB")
    for index, size in enumerate(measurement.x):
        cells = [values[index] for values in peak.values()]
        text = [
            f"{_('out of memory'):>15}"
            if mb is None
            else f"{number(f'{mb:,.0f}'):>12} {megabytes}"
            for mb in cells
        ]
        print(f"{number(f'{size:,}'):>16} " + " ".join(text))


@dataclass(frozen=True)
class LaunchCost:
    """One launcher's host time per call, in microseconds, from the launch_overhead
    record: the launcher's (``triton``), a bare launch of its kernels' (``bare``), the
    difference (``python``: the launcher's checks, allocations and autograd wiring),
    PyTorch's equivalent (``torch``, None where it could not run) and the launcher
    replayed from a CUDA graph (``graph``, None where it could not be captured)."""

    launcher: str
    triton: float
    bare: float
    python: float
    torch: float | None
    graph: float | None


def launch_costs(record: LaunchOverhead) -> list[LaunchCost]:
    """The record's host times, one :class:`LaunchCost` per launcher, in its order."""
    costs = []
    for launcher in record.x:
        triton = record.time_us("Triton", launcher)
        bare = record.time_us("bare launch", launcher)
        # The contract guarantees both (measurements: no null in these two series).
        assert triton is not None and bare is not None
        torch_us, graph_us = (
            record.time_us(s, launcher) for s in ("PyTorch", "CUDA graph")
        )
        costs.append(
            LaunchCost(launcher, triton, bare, triton - bare, torch_us, graph_us)
        )
    return costs


def longest_final_wait(record: LaunchOverhead) -> float:
    """The longest wait for the GPU at the end of a timed loop in ``record``, in calls:
    each wait over the host time per call of its loop. About one where the GPU kept up
    with the host; where it fell behind, the calls it had not run yet are in the wait.
    A graph's replay is no loop: its wait is all of its calls, by design."""
    return max(
        wait / time
        for name in LAUNCH_LOOPS
        for wait, time in zip(
            record.final_wait_us[name], record.series[name], strict=True
        )
        if wait is not None and time is not None
    )


def launch_table(record: LaunchOverhead) -> ResultTable:
    """The launch_overhead record as a :class:`ResultTable`: per launcher, the host time of
    a call, of a bare launch, their difference, PyTorch's and the call replayed from a
    CUDA graph, in microseconds."""
    if record.placeholder:
        return _not_measured(record.benchmark)
    caption = [
        _(
            "Host time per call, in µs, on tiny inputs. 'launcher minus bare': the launcher's "
            "own Python (checks, allocation, autograd wiring) less what its direct launch "
            "saves over kernel[grid] (negative where the saving is larger). 'CUDA graph': "
            "the launcher's calls replayed from one CUDA graph, per call."
        )
    ]
    header = [
        _("launcher"),
        "Triton",
        series_name("bare launch"),
        _("launcher minus bare"),
        "PyTorch",
        series_name("CUDA graph"),
    ]
    rows = [
        [
            cost.launcher,
            number(f"{cost.triton:.1f}"),
            number(f"{cost.bare:.1f}"),
            number(f"{cost.python:+.1f}"),
            "n/a" if cost.torch is None else number(f"{cost.torch:.1f}"),
            "n/a" if cost.graph is None else number(f"{cost.graph:.1f}"),
        ]
        for cost in launch_costs(record)
    ]
    notes = [
        _("{provider} n/a: {reason}").format(
            provider=provider, reason=reason_text(reason)
        )
        for provider, reason in record.unavailable.items()
    ]
    return ResultTable(caption, header, rows, notes)

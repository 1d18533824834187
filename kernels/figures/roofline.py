"""What the records say about a kernel beyond its rate: its roofline point and its host cost.

A record holds one kind of work per call: bytes for a ``GB/s`` benchmark, floating-point
operations (FLOPs) for a ``TFLOP/s`` one. To place a kernel on the *roofline* of a GPU,
both are needed: the *arithmetic intensity* of a call is its FLOPs over its bytes, and
the roof over an intensity ``I`` is ``min(compute, I * bandwidth)``, with the measured
ceilings of two records as bandwidth (a device copy) and compute (a cuBLAS product).
:data:`OTHER_WORK` counts, from a record's shapes, the work its record does not hold,
and says where that count is an estimate.

A record also holds two rates per provider, from *kernel time* (``series``) and from
*call time* (``call_series``); their ratio says how much of a call the kernel is.
Every function here reads :class:`~kernels.harness.measurements.Measurement` values only.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch
from matplotlib.figure import Figure

from ..harness.measurements import RATE_SCALE, Measurement, MeasurementError
from ..text.messages import _

# A softmax of one element: its row's maximum (a comparison), a subtraction, an exponential,
# a term of the row's sum, and a division, each counted as one operation.
SOFTMAX_FLOPS_PER_ELEMENT = 5


def _itemsize(record: Measurement) -> int:
    return getattr(torch, record.dtype).itemsize


@dataclass(frozen=True)
class OtherWork:
    """The work of one call that a record does not hold: FLOPs for a ``GB/s`` record,
    bytes for a ``TFLOP/s`` one, counted from the record and its ``x``; ``note`` says
    how it is counted, and ``estimated`` whether the count is a convention rather than
    a fact of the shapes."""

    count: Callable[[Measurement, int], float]
    note: str
    estimated: bool = False


def _fewest_attention_bytes(record: Measurement, seq_len: int) -> float:
    # Q, K and V read once and the output written once, each (batch, heads, seq_len, head_dim).
    details = record.details
    per_tensor = details["batch"] * details["heads"] * seq_len * details["head_dim"]
    return 4 * per_tensor * _itemsize(record)


OTHER_WORK: dict[str, OtherWork] = {
    "vector_add": OtherWork(
        lambda record, n: float(n), "FLOPs: one addition per element"
    ),
    "softmax": OtherWork(
        lambda record, n: float(SOFTMAX_FLOPS_PER_ELEMENT * record.details["rows"] * n),
        f"FLOPs: about {SOFTMAX_FLOPS_PER_ELEMENT} per element, an exponential counted as one",
        estimated=True,
    ),
    "matmul": OtherWork(
        lambda record, n: float(3 * n * n * _itemsize(record)),
        "bytes: A and B read once and C written once, the fewest possible",
    ),
    "flash_attention": OtherWork(
        _fewest_attention_bytes,
        "bytes: Q, K and V read once and the output written once, the fewest possible",
    ),
}


@dataclass(frozen=True)
class Roofline:
    """The roof of a GPU from two measured ceilings: ``bandwidth_gbps`` (GB/s, from the
    record ``bandwidth_from``) and ``compute_tflops`` (TFLOP/s, from ``compute_from``)."""

    bandwidth_gbps: float
    compute_tflops: float
    bandwidth_from: str
    compute_from: str

    @property
    def ridge(self) -> float:
        """The intensity (FLOP per byte) where the two roofs meet: below it memory limits
        a kernel, above it arithmetic does."""
        return self.compute_tflops * 1e12 / (self.bandwidth_gbps * 1e9)

    def attainable_tflops(self, intensity: float) -> float:
        """The roof over ``intensity``: ``min(compute, intensity * bandwidth)``, in TFLOP/s."""
        return min(self.compute_tflops, intensity * self.bandwidth_gbps / 1e3)


def _require_measured(record: Measurement) -> None:
    if record.placeholder:
        raise MeasurementError(
            f"{record.benchmark}: a placeholder holds no measurement"
        )


def roofline(memory: Measurement, compute: Measurement) -> Roofline:
    """The roof drawn from the ceiling of a ``GB/s`` record (a device copy) and the
    ceiling of a ``TFLOP/s`` record (a cuBLAS product)."""
    for record, metric in ((memory, "GB/s"), (compute, "TFLOP/s")):
        _require_measured(record)
        if record.metric != metric:
            raise MeasurementError(
                f"{record.benchmark}: its ceiling is in {record.metric}; this roof needs {metric}"
            )
    return Roofline(
        memory.ceiling.value, compute.ceiling.value, memory.benchmark, compute.benchmark
    )


@dataclass(frozen=True)
class RooflinePoint:
    """One provider of one record on the roofline, at one size ``x``: the FLOPs and bytes
    of a call, and the rate it reached in kernel time, in TFLOP/s. ``note`` says how the
    work the record does not hold was counted."""

    benchmark: str
    provider: str
    x: int
    flops: float
    bytes: float
    tflops: float
    note: str
    estimated: bool

    @property
    def intensity(self) -> float:
        """FLOPs per byte of one call."""
        return self.flops / self.bytes


def point(
    record: Measurement, provider: str = "Triton", other: OtherWork | None = None
) -> RooflinePoint:
    """``provider`` of ``record`` on the roofline, at the largest size it has a kernel-time
    rate for. ``other`` counts the work the record does not hold (by default the entry of
    :data:`OTHER_WORK` for the record's benchmark)."""
    _require_measured(record)
    if other is None:
        if record.benchmark not in OTHER_WORK:
            raise MeasurementError(
                f"{record.benchmark}: no count of the work its record leaves out; "
                "pass one as `other`"
            )
        other = OTHER_WORK[record.benchmark]
    measured = [i for i, rate in enumerate(record.series[provider]) if rate is not None]
    if not measured:
        raise MeasurementError(
            f"{record.benchmark}: {provider} has no rate at any size"
        )
    index = measured[-1]
    x, work, rate = record.x[index], record.work[index], record.series[provider][index]
    seconds = work / (rate * RATE_SCALE[record.metric])
    if record.metric == "GB/s":
        flops, n_bytes = other.count(record, x), work
    else:
        flops, n_bytes = work, other.count(record, x)
    return RooflinePoint(
        benchmark=record.benchmark,
        provider=provider,
        x=x,
        flops=flops,
        bytes=n_bytes,
        tflops=flops / seconds / 1e12,
        note=other.note,
        estimated=other.estimated,
    )


def times_us(
    record: Measurement, provider: str, *, call: bool = False
) -> tuple[float | None, ...]:
    """Microseconds per call of ``provider`` at each ``x``: the record's work over its
    rate, from kernel time, or from call time with ``call``; None where it has no rate."""
    _require_measured(record)
    rates = (record.call_series if call else record.series)[provider]
    scale = RATE_SCALE[record.metric]
    return tuple(
        None if rate is None else work / (rate * scale) * 1e6
        for work, rate in zip(record.work, rates, strict=True)
    )


def call_over_kernel(record: Measurement, provider: str) -> tuple[float | None, ...]:
    """Call time over kernel time of ``provider`` at each ``x`` (1 when the kernel is the
    whole call); None where either rate is missing."""
    kernel, call = times_us(record, provider), times_us(record, provider, call=True)
    return tuple(
        None if k is None or c is None else c / k
        for k, c in zip(kernel, call, strict=True)
    )


def first_size_within(record: Measurement, provider: str, factor: float) -> int | None:
    """The smallest ``x`` from which on, at every larger recorded size too, the call time
    of ``provider`` is at most ``factor`` times its kernel time; None if the largest size
    is not."""
    found = None
    for x, ratio in reversed(
        list(zip(record.x, call_over_kernel(record, provider), strict=True))
    ):
        if ratio is None or ratio > factor:
            break
        found = x
    return found


def widest_gap(record: Measurement, provider: str) -> tuple[int, float]:
    """The size at which the call time of ``provider`` is the largest multiple of its
    kernel time, and that multiple."""
    ratios = [
        (ratio, x)
        for x, ratio in zip(record.x, call_over_kernel(record, provider), strict=True)
        if ratio is not None
    ]
    if not ratios:
        raise MeasurementError(
            f"{record.benchmark}: {provider} has no rate at any size"
        )
    ratio, x = max(ratios)
    return x, ratio


@dataclass(frozen=True)
class HostOverhead:
    """How much of a call of ``provider`` is not its kernel, from one record: at ``size``,
    where call time is the largest multiple of kernel time, the two times and the call
    time of ``baseline``; the smallest and largest call time less kernel time of the
    two over every size (``gap_low_us``, ``gap_high_us``); and the smallest sizes from
    which on the call time of each is within the chosen factor of its kernel time (None
    if not even at the largest size)."""

    size: int
    kernel_us: float
    call_us: float
    baseline_call_us: float | None
    gap_low_us: float
    gap_high_us: float
    close_from: int | None
    baseline_close_from: int | None


def host_overhead(
    record: Measurement, provider: str, baseline: str, factor: float
) -> HostOverhead:
    """Compare call time with kernel time for ``provider`` and ``baseline`` in ``record``
    (see :class:`HostOverhead`); ``factor`` is how close counts as close."""
    size, _ = widest_gap(record, provider)
    index = record.x.index(size)
    # Kernel and call times of each of the two, read once.
    times = {
        name: (times_us(record, name), times_us(record, name, call=True))
        for name in (provider, baseline)
    }
    gaps = [
        c - k
        for kernels, calls in times.values()
        for k, c in zip(kernels, calls, strict=True)
        if k is not None and c is not None
    ]
    return HostOverhead(
        size=size,
        kernel_us=times[provider][0][index],
        call_us=times[provider][1][index],
        baseline_call_us=times[baseline][1][index],
        gap_low_us=min(gaps),
        gap_high_us=max(gaps),
        close_from=first_size_within(record, provider, factor),
        baseline_close_from=first_size_within(record, baseline, factor),
    )


def highest_share(record: Measurement) -> tuple[str, int, float]:
    """The provider, size and rate-over-ceiling of the highest kernel-time rate in
    ``record``: above 1 when a provider beat the ceiling measured in the same run."""
    _require_measured(record)
    share, provider, x = max(
        (rate / record.ceiling.value, provider, x)
        for provider, rates in record.series.items()
        for x, rate in zip(record.x, rates, strict=True)
        if rate is not None
    )
    return provider, x, share


# Short legend labels of the roofline figure.
def _label(benchmark: str) -> str:
    # A point's legend entry, in the language of the figure.
    names = {
        "vector_add": _("vector add"),
        "softmax": "softmax",
        "matmul": _("matmul"),
        "flash_attention": _("attention"),
    }
    return names.get(benchmark, benchmark)


_MARKERS = ("o", "s", "^", "D", "v", "P")


def plot_roofline(roof: Roofline, points: list[RooflinePoint]) -> Figure:
    """The roof on log-log axes (TFLOP/s against FLOP per byte), dashed as every measured
    ceiling on the site, with one marker per point; an estimated point is hollow."""
    import matplotlib.pyplot as plt

    from .plotting import (
        CEILING_COLOUR,
        FIGURE_SIZE,
        PROVIDER_COLOURS,
        label_log_axis,
        legend_below,
        style,
    )

    fig, ax = plt.subplots(figsize=FIGURE_SIZE, layout="constrained")
    intensities = [p.intensity for p in points] + [roof.ridge]
    low, high = min(intensities) / 4, max(intensities) * 4
    xs = [low, roof.ridge, high]
    ax.plot(
        xs,
        [roof.attainable_tflops(x) for x in xs],
        linestyle="--",
        linewidth=1.2,
        color=CEILING_COLOUR,
        label=_("measured roof"),
    )
    ax.axvline(
        roof.ridge,
        linestyle=":",
        linewidth=1.0,
        color=CEILING_COLOUR,
        label=_("ridge point"),
    )
    for index, p in enumerate(points):
        colour = PROVIDER_COLOURS.get(p.provider, CEILING_COLOUR)
        name = _label(p.benchmark)
        label = _("{name} (estimated)").format(name=name) if p.estimated else name
        ax.plot(
            [p.intensity],
            [p.tflops],
            linestyle="none",
            marker=_MARKERS[index % 6],
            markersize=9,
            color=colour,
            markerfacecolor="none" if p.estimated else colour,
            label=label,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    label_log_axis(ax, "x")
    label_log_axis(ax, "y")
    ax.set_xlabel(_("FLOP per byte"))
    ax.set_ylabel("TFLOP/s")
    ax.grid(True, which="major", alpha=0.3)
    legend_below(fig, most_columns=3)
    style(fig)
    return fig

"""The one plotting style of the site.

Every benchmark figure is drawn by :func:`plot_measurement`: the metric against the
problem size, one line per provider from kernel time and a lighter one from call time,
the ceiling measured in the same run dashed. The launch_overhead record, host time per
call of each launcher, is drawn by :func:`plot_launch_overhead` as bars. Text
in the image stays short (axis labels, legend); the provenance caption is kept beside
the figure and written into the page as text, so that it can be translated.
"""

import math
from collections.abc import Callable

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from ..harness.measurements import LaunchOverhead, Measurement
from ..harness.provenance import caption, placeholder_caption
from ..text.messages import _, axis_name, number, series_name, translated

# One colour per provider, the same on every page.
PROVIDER_COLOURS = {
    "Triton": "#1f77b4",
    "bare launch": "#aec7e8",
    "CUDA graph": "#17becf",
    "PyTorch": "#ff7f0e",
    "torch.compile": "#2ca02c",
    "cuBLAS": "#d62728",
    "SDPA flash": "#ff7f0e",
    "SDPA cuDNN": "#2ca02c",
    "SDPA efficient": "#9467bd",
    "naive": "#8c564b",
    "Liger": "#e377c2",
}
_FALLBACK_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
CEILING_COLOUR = "#555555"
# Call time is drawn in the colour of its provider, lighter.
CALL_TIME_ALPHA = 0.35
# Sized for a phone as much as for a laptop: a 6-inch figure is about 610 pixels wide
# once saved (legends and labels add a little), and on a 390-pixel phone screen, shrunk
# to the narrowest column a figure gets (342 pixels, a lesson's captioned figure), 12-point
# text is still 9 pixels tall. At 6.4 inches (651 pixels saved) it was 8.8.
FIGURE_SIZE = (6.0, 4.5)
# The smallest text in any figure of the site, in points (the build refuses smaller).
TEXT_PT = 12

_CAPTION_ATTRIBUTE = "_ninja_gap_caption"


def size_label(value: float) -> str:
    """A size as a tick label writes it, at full text size: whole multiples of 2**20 as
    ``M``, of 2**10 as ``K`` (the sizes are powers of two and their neighbours), others
    in full, in the edition's number format. Matplotlib's default, ``2^20`` with a
    superscript, prints the exponent at 70% of the text, under 9 px on a phone."""
    if value >= 2**20 and value % 2**20 == 0:
        return _("{value}M").format(value=number(f"{value / 2**20:,.0f}"))
    if value >= 2**10 and value % 2**10 == 0:
        return _("{value}K").format(value=number(f"{value / 2**10:,.0f}"))
    return plain_label(value)


def plain_label(value: float) -> str:
    """A value on a logarithmic axis as a tick label: written out (``0.1``, ``1,000``),
    not as a power of ten with a superscript exponent."""
    return number(f"{value:,.0f}" if value >= 1 else f"{value:g}")


def label_log_axis(
    ax: Axes, axis: str, label: Callable[[float], str] = plain_label
) -> None:
    """Label the major ticks of ``ax``'s logarithmic ``axis`` (``"x"`` or ``"y"``) with
    ``label`` and leave its minor ticks unlabelled."""
    which = ax.xaxis if axis == "x" else ax.yaxis
    which.set_major_formatter(FuncFormatter(lambda value, _position: label(value)))
    which.set_minor_formatter(NullFormatter())


def _provider_colour(provider: str, index: int) -> str:
    return PROVIDER_COLOURS.get(
        provider, _FALLBACK_COLOURS[index % len(_FALLBACK_COLOURS)]
    )


def style(fig: Figure) -> None:
    """Give every text of ``fig`` the site's size: tick labels, axis labels, titles and
    legends at TEXT_PT or more."""
    for ax in fig.axes:
        ax.tick_params(labelsize=TEXT_PT)
        for label in (ax.xaxis.label, ax.yaxis.label, ax.title):
            label.set_fontsize(max(TEXT_PT, label.get_fontsize()))
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if legend is not None:
            for text in legend.get_texts():
                text.set_fontsize(TEXT_PT)


def legend_below(fig: Figure, most_columns: int = 2) -> None:
    """The first axes' legend below them, across the figure's width, so that the plot
    keeps the width: in as many columns, up to ``most_columns``, as fit the figure's
    width, else in one (a long label, such as the Russian name of a ceiling, pushed two
    columns past both edges of the image, and a phone then shrank the whole figure)."""
    handles, labels = fig.axes[0].get_legend_handles_labels()
    for columns in range(most_columns, 0, -1):
        legend = fig.legend(handles, labels, loc="outside lower center", ncols=columns,
                            frameon=False, fontsize=TEXT_PT)  # fmt: skip
        if legend.get_window_extent(fig.canvas.get_renderer()).width <= fig.bbox.width:
            break
        if columns > 1:
            legend.remove()


def _values(rates: tuple[float | None, ...]) -> list[float]:
    # None marks a size a provider could not run at: a gap in its line.
    return [math.nan if v is None else v for v in rates]


def _never_ran(values: tuple[float | None, ...]) -> bool:
    return all(v is None for v in values)


def _placeholder(measurement: Measurement | LaunchOverhead) -> Figure:
    fig, ax = plt.subplots(figsize=FIGURE_SIZE, layout="constrained")
    ax.text(
        0.5,
        0.5,
        _("not measured yet"),
        ha="center",
        va="center",
        fontsize=16,
        color=CEILING_COLOUR,
        transform=ax.transAxes,
    )
    ax.set_xlabel(axis_name(measurement.x_name))
    ax.set_ylabel(translated(measurement.metric))
    ax.set_xticks([])
    ax.set_yticks([])
    style(fig)
    set_caption(fig, placeholder_caption(measurement.benchmark))
    return fig


# Above the other lines (2, matplotlib's default) and below the legend (5).
TRITON_ZORDER = 3


def plot_measurement(measurement: Measurement) -> Figure:
    """Draw a measurement as the site's standard figure and attach its caption: kernel
    time as the main lines, call time as lighter lines of the same colours, the ceiling
    dashed. A draft build's placeholder is drawn as an empty, labelled figure."""
    if measurement.placeholder:
        return _placeholder(measurement)
    fig, ax = plt.subplots(figsize=FIGURE_SIZE, layout="constrained")
    for index, provider in enumerate(measurement.providers):
        if _never_ran(measurement.series[provider]):
            continue  # no line to draw, and none in the legend (the table says why)
        colour = _provider_colour(provider, index)
        ax.plot(
            measurement.x,
            _values(measurement.series[provider]),
            marker="o",
            markersize=3.5,
            linewidth=1.8,
            label=series_name(provider),
            color=colour,
            # Triton's line on top: where a baseline's rates matched it, the baseline,
            # drawn later, hid it (the vector addition's PyTorch and torch.compile).
            zorder=TRITON_ZORDER if provider == "Triton" else None,
        )
        ax.plot(
            measurement.x,
            _values(measurement.call_series[provider]),
            marker=".",
            markersize=3,
            linewidth=1.0,
            alpha=CALL_TIME_ALPHA,
            color=colour,
        )
    ceiling = measurement.ceiling
    ax.axhline(
        ceiling.value,
        linestyle="--",
        linewidth=1.2,
        color=CEILING_COLOUR,
        label=_("{ceiling} ({value} {metric})").format(
            ceiling=translated(ceiling.name),
            value=number(f"{ceiling.value:,.0f}"),
            metric=translated(measurement.metric),
        ),
    )
    # One legend entry for every lighter line.
    ax.plot(
        [],
        [],
        linewidth=1.0,
        alpha=CALL_TIME_ALPHA,
        color=CEILING_COLOUR,
        label=_("lighter: call time"),
    )
    ax.set_xscale("log", base=2)
    label_log_axis(ax, "x", size_label)
    ax.set_xlabel(axis_name(measurement.x_name))
    ax.set_ylabel(translated(measurement.metric))
    rates = [
        v for series in measurement.series.values() for v in series if v is not None
    ]
    ax.set_ylim(bottom=0, top=max([ceiling.value, *rates]) * 1.12)
    ax.grid(True, which="major", alpha=0.3)
    legend_below(fig)
    style(fig)
    set_caption(
        fig,
        caption(
            measurement.environment, measurement.code.commit, fresh=measurement.fresh
        ),
    )
    return fig


def plot_peak_memory(measurement: Measurement) -> Figure:
    """Draw the peak GPU memory of one training step per provider, recorded beside a
    benchmark (``peak_memory_mb``), with the same caption as its speed figure. A size at
    which a provider ran out of memory (recorded as None) is a gap in its line."""
    if measurement.placeholder or measurement.peak_memory_mb is None:
        return _placeholder(measurement)
    fig, ax = plt.subplots(figsize=FIGURE_SIZE, layout="constrained")
    for index, (provider, values) in enumerate(measurement.peak_memory_mb.items()):
        if _never_ran(values):
            continue
        ax.plot(
            measurement.x,
            _values(values),
            marker="o",
            markersize=3.5,
            linewidth=1.8,
            label=series_name(provider),
            color=_provider_colour(provider, index),
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    label_log_axis(ax, "x", size_label)
    label_log_axis(ax, "y")
    ax.set_xlabel(axis_name(measurement.x_name))
    ax.set_ylabel(_("MB"))
    ax.grid(True, which="major", alpha=0.3)
    legend_below(fig)
    style(fig)
    set_caption(
        fig,
        caption(
            measurement.environment, measurement.code.commit, fresh=measurement.fresh
        ),
    )
    return fig


# Height of one launcher's group of bars, in inches, and of the axes' labels and legend.
_GROUP_INCHES = 0.6
_MARGIN_INCHES = 1.8


def plot_launch_overhead(record: LaunchOverhead) -> Figure:
    """Draw the launch_overhead record as horizontal bars, one group per launcher (top to
    bottom in the record's order), one bar per series, and attach its caption. A draft
    build's placeholder is drawn as an empty, labelled figure."""
    if record.placeholder:
        fig = _placeholder(record)
        fig.axes[0].set_xlabel(_("µs per call"))
        fig.axes[0].set_ylabel(axis_name(record.x_name))
        style(fig)
        return fig
    height = _MARGIN_INCHES + _GROUP_INCHES * len(record.x)
    fig, ax = plt.subplots(figsize=(FIGURE_SIZE[0], height), layout="constrained")
    providers = record.providers
    bar = 0.8 / len(providers)
    for index, provider in enumerate(providers):
        # Within a group the first series is on top, as the legend lists them.
        offsets = [group - 0.4 + bar * (index + 0.5) for group in range(len(record.x))]
        ax.barh(
            offsets,
            _values(record.series[provider]),
            height=bar,
            label=series_name(provider),
            color=_provider_colour(provider, index),
        )
    ax.set_yticks(range(len(record.x)), record.x)
    ax.invert_yaxis()
    # The axis of the launch_overhead figure: host time of one call.
    ax.set_xlabel(_("µs per call"))
    ax.set_xlim(left=0)
    ax.grid(True, axis="x", alpha=0.3)
    fig.legend(
        *ax.get_legend_handles_labels(),
        loc="outside lower center",
        ncols=len(providers),
        frameon=False,
    )
    style(fig)
    set_caption(
        fig, caption(record.environment, record.code.commit, fresh=record.fresh)
    )
    return fig


def set_caption(fig: Figure, text: str) -> None:
    """Attach the caption that the gallery writes under ``fig``."""
    setattr(fig, _CAPTION_ATTRIBUTE, text)


def caption_of(fig: Figure) -> str | None:
    """The caption attached to ``fig`` by :func:`set_caption`, if any."""
    return getattr(fig, _CAPTION_ATTRIBUTE, None)

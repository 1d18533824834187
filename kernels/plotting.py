"""The one plotting style of the site, and the gallery scraper that prints its captions.

Every benchmark figure is drawn by :func:`plot_measurement`: the metric against the
problem size, one line per provider, the ceiling measured in the same run dashed. Text
in the image stays short (axis labels, legend); the provenance caption is kept beside
the figure and written into the page as text, so that it can be translated.
"""

import math
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from kernels.bench import Measurement
from kernels.provenance import caption

# One colour per provider, the same on every page.
PROVIDER_COLOURS = {
    "Triton": "#1f77b4",
    "PyTorch": "#ff7f0e",
    "torch.compile": "#2ca02c",
    "cuBLAS": "#d62728",
    "SDPA flash": "#ff7f0e",
    "SDPA cuDNN": "#2ca02c",
    "SDPA efficient": "#9467bd",
    "naive": "#8c564b",
}
_FALLBACK_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
CEILING_COLOUR = "#555555"

_CAPTION_ATTRIBUTE = "_ninja_gap_caption"


def _provider_colour(provider: str, index: int) -> str:
    return PROVIDER_COLOURS.get(provider, _FALLBACK_COLOURS[index % len(_FALLBACK_COLOURS)])


def plot_measurement(measurement: Measurement) -> Figure:
    """Draw a measurement document as the site's standard figure and attach its caption."""
    doc = measurement.doc
    fig, ax = plt.subplots(figsize=(8.5, 4.2), layout="constrained")
    for index, (provider, values) in enumerate(doc["series"].items()):
        ax.plot(
            doc["x"],
            values,
            marker="o",
            markersize=3.5,
            linewidth=1.8,
            label=provider,
            color=_provider_colour(provider, index),
        )
    ceiling = doc["ceiling"]
    ax.axhline(
        ceiling["value"],
        linestyle="--",
        linewidth=1.2,
        color=CEILING_COLOUR,
        label=f"{ceiling['name']} ({ceiling['value']:,.0f} {doc['metric']})",
    )
    ax.set_xscale("log", base=2)
    ax.set_xlabel(doc["x_name"])
    ax.set_ylabel(doc["metric"])
    highest = max([ceiling["value"], *(v for values in doc["series"].values() for v in values)])
    ax.set_ylim(bottom=0, top=highest * 1.12)
    ax.grid(True, which="major", alpha=0.3)
    # Beside the axes, so that no line or the dashed ceiling runs through the labels.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    set_caption(fig, caption(doc["environment"], fresh=measurement.fresh))
    return fig


def plot_peak_memory(measurement: Measurement) -> Figure:
    """Draw the peak GPU memory of one training step per provider, recorded beside a
    benchmark (``peak_memory_mb``), with the same caption as its speed figure. A size at
    which a provider ran out of memory (recorded as None) is a gap in its line."""
    doc = measurement.doc
    fig, ax = plt.subplots(figsize=(8.5, 4.2), layout="constrained")
    for index, (provider, values) in enumerate(doc["peak_memory_mb"].items()):
        # None marks a size at which the provider ran out of memory: a gap in its line.
        megabytes = [math.nan if v is None else v for v in values]
        ax.plot(doc["x"], megabytes, marker="o", markersize=3.5, linewidth=1.8,
                label=provider, color=_provider_colour(provider, index))  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(doc["x_name"])
    ax.set_ylabel("MB")
    ax.grid(True, which="major", alpha=0.3)
    # Beside the axes, so that no line or the dashed ceiling runs through the labels.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    set_caption(fig, caption(doc["environment"], fresh=measurement.fresh))
    return fig


def set_caption(fig: Figure, text: str) -> None:
    """Attach the caption that the gallery writes under ``fig``."""
    setattr(fig, _CAPTION_ATTRIBUTE, text)


def caption_of(fig: Figure) -> str | None:
    """The caption attached to ``fig`` by :func:`set_caption`, if any."""
    return getattr(fig, _CAPTION_ATTRIBUTE, None)


def captioned_matplotlib_scraper(
    block: Any, block_vars: Any, gallery_conf: Any, **kwargs: Any
) -> str:
    """sphinx-gallery image scraper: matplotlib's own, plus each figure's caption as text.

    Captions may mark code with `backticks`, as quiz banks do.
    """
    from sphinx_gallery.scrapers import matplotlib_scraper

    from quiz.rst import to_rst_inline

    captions = [caption_of(plt.figure(number)) for number in plt.get_fignums()]
    rst = matplotlib_scraper(block, block_vars, gallery_conf, **kwargs)
    for text in filter(None, captions):
        rst += f"\n\n.. rst-class:: figure-provenance\n\n{to_rst_inline(text)}\n"
    return rst

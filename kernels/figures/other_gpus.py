"""The other GPUs' records of a benchmark, shown beside the primary GPU's.

A page's prose, figure and verdicts read the primary GPU's record
(:data:`~kernels.harness.measurements.PRIMARY_GPU`). Every other GPU that has a record of the same
benchmark, of the code as it is now, gets a tab under the page's table with its own
figure, table and provenance line, so that a reader sees how the kernel moves from one
GPU to another. A GPU with no record of the benchmark simply has no tab.
"""

import base64
import html
import io
import re
from dataclasses import dataclass

import matplotlib.pyplot as plt

from ..declarations.spec import BenchmarkSpec
from ..harness import bench, measurements
from ..harness.measurements import Measurement, MeasurementError
from ..text.messages import _
from .plotting import caption_of, plot_measurement

# The resolution of a tab's figure: sharp on a high-density screen, about 60 KB a figure.
DPI = 150


@dataclass(frozen=True)
class GpuTab:
    """One other GPU's record of a benchmark as a tab shows it."""

    gpu: str  # the device name, as the record gives it
    figure_png: bytes
    caption: str
    table_html: str


def records_beside(measurement: Measurement) -> list[Measurement]:
    """The current records of ``measurement``'s benchmark on the GPUs other than the
    primary, in the order of :func:`~kernels.harness.measurements.recorded_gpus`.

    A record there that is stale, malformed or unlike its spec fails the build, as the
    primary's would; a draft build leaves it out and says why.
    """
    spec = bench.discover().get(measurement.benchmark)
    if spec is None:
        return []
    others = [
        gpu for gpu in measurements.recorded_gpus() if gpu != measurements.PRIMARY_GPU
    ]
    found = (_drawable(spec, gpu) for gpu in others)
    return [record for record in found if record is not None]


def _drawable(spec: BenchmarkSpec, gpu: str) -> Measurement | None:
    # ``gpu``'s current record of ``spec``, or None when it has none. One that is stale,
    # malformed or unlike its spec fails the build; a draft build leaves it out.
    if spec.name not in measurements.recorded_benchmarks(gpu):
        return None
    try:
        return bench.load_current(spec, gpu)
    except MeasurementError as error:
        if not bench.draft():
            raise
        print(f"Draft build: the {gpu}'s record is left out: {error}")
        return None


def tab_of(record: Measurement, table_html: str) -> GpuTab:
    """``record``'s figure drawn as a PNG, its caption, and ``table_html``."""
    figure = plot_measurement(record)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    # Closed, so that the gallery's scraper does not also put it on the page.
    plt.close(figure)
    caption = caption_of(figure) or ""
    return GpuTab(record.environment["gpu"], buffer.getvalue(), caption, table_html)


def _inline(text: str) -> str:
    # A caption marks commands with `backticks`, as the scraper's captions do.
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def tabs_html(benchmark: str, tabs: list[GpuTab]) -> str:
    """The tabs as sphinx-design draws a ``tab-set`` (the site's CSS styles them): a
    radio input, a label and a content block per tab, the first one open."""
    if not tabs:
        return ""
    group = f"gpu-tabs-{_slug(benchmark)}"
    parts = [
        f'<p class="gpu-tabs-intro">{html.escape(_("The same benchmark on other GPUs:"))}</p>',
        f'<div class="sd-tab-set docutils gpu-tabs" id="{group}">',
    ]
    for index, tab in enumerate(tabs):
        item = f"{group}-{_slug(tab.gpu)}"
        checked = ' checked="checked"' if index == 0 else ""
        alt = _("{benchmark} on the {gpu}: each provider's rate at each size").format(
            benchmark=benchmark, gpu=tab.gpu
        )
        png = base64.b64encode(tab.figure_png).decode("ascii")
        parts += [
            f'<input{checked} id="{item}" name="{group}" type="radio">',
            f'<label class="sd-tab-label" for="{item}">{html.escape(tab.gpu)}</label>',
            '<div class="sd-tab-content docutils">',
            f'<img class="gpu-tab-figure" src="data:image/png;base64,{png}" '
            f'alt="{html.escape(alt)}">',
            f'<p class="figure-provenance">{_inline(tab.caption)}</p>',
            tab.table_html,
            "</div>",
        ]
    parts.append("</div>")
    return "\n".join(parts)


def current_records(gpu: str) -> dict[str, Measurement]:
    """Every rate record of ``gpu`` that a build may draw, by benchmark name. A stale or
    malformed one fails, as on a page; a draft build leaves it out and says why."""
    found = {name: _drawable(spec, gpu) for name, spec in bench.discover().items()}
    return {name: record for name, record in found.items() if record is not None}

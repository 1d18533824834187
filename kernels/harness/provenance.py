"""Where and when a measurement was taken: the ``environment`` of a measurement file."""

import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime

import torch
import triton

from ..text.messages import _
from .fingerprint import short_commit

# Set by the nox sessions so that a file says which command produced it.
COMMAND_VARIABLE = "NINJA_GAP_COMMAND"


def _driver_version() -> str:
    try:
        result = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return result.stdout.strip().splitlines()[0] if result.stdout.strip() else "unknown"


def capture() -> dict[str, str]:
    """Describe this machine's GPU and software, and the command that is running, now."""
    return {
        "gpu": torch.cuda.get_device_name(),
        "driver": _driver_version(),
        "cuda": torch.version.cuda or "none",
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "date": datetime.now(UTC)
        .replace(microsecond=0)
        .isoformat()
        .replace("+00:00", "Z"),
        "command": os.environ.get(COMMAND_VARIABLE)
        or shlex.join([sys.executable, *sys.argv]),
    }


def shown_date(date: str) -> str:
    """A recorded date (``2026-12-07T16:05:20Z``, as :func:`capture` writes it) as a
    caption shows it: ``2026-12-07 16:05:20 UTC``."""
    return date.replace("T", " ").replace("Z", " UTC")


def caption(environment: Mapping[str, str], commit: str, *, fresh: bool) -> str:
    """One line of provenance for a figure: GPU, driver, versions, date, the code's
    commit, and whether this build measured it or drew it from the record."""
    date = shown_date(environment["date"])
    where = _(
        "{gpu}, driver {driver}, CUDA {cuda}, torch {torch}, Triton {triton}, {date}, "
        "code at commit {commit}"
    ).format(**{**environment, "date": date, "commit": short_commit(commit)})
    if fresh:
        return _("Measured during this build: {where}.").format(where=where)
    return _(
        "Recorded by `{command}` on {where}. "
        "This build did not measure, so the figure is drawn from that record, "
        "whose code fingerprint matches the code on this page."
    ).format(command=environment["command"], where=where)


def placeholder_caption(benchmark: str) -> str:
    """The caption of a draft build's stand-in figure for a benchmark with no usable record."""
    return _(
        "Not measured yet: `{benchmark}` has no record of the code as it is now. "
        "This is a draft build; a GPU build measures it."
    ).format(benchmark=benchmark)

"""Where and when a measurement was taken: the ``environment`` of a measurement file."""

import os
import platform
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import torch
import triton

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
        "date": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "command": os.environ.get(COMMAND_VARIABLE) or shlex.join([sys.executable, *sys.argv]),
    }


def caption(environment: dict[str, Any], *, fresh: bool) -> str:
    """One line of provenance for a figure: GPU, driver, versions, date, and how it was drawn."""
    date = environment["date"].replace("T", " ").replace("Z", " UTC")
    where = (
        f"{environment['gpu']}, driver {environment['driver']}, CUDA {environment['cuda']}, "
        f"torch {environment['torch']}, Triton {environment['triton']}, {date}"
    )
    if fresh:
        return f"Measured during this build: {where}."
    return (
        f"Recorded by `{environment['command']}` on {where}. "
        "This page was built without a GPU, so the figure is drawn from that record."
    )

"""Profiles taken on a GPU and saved for the profiling lesson, and the command that takes them.

Two tools read what the compiler cannot know (``docs/lessons/08_profiling.md``):
Proton, Triton's profiler, times each kernel inside the scopes a program names; Nsight
Compute (``ncu``) replays one launch many times and reads the GPU's counters. Neither
runs without a GPU, so the page reads what they wrote on one, saved under
``docs/lessons/profiles/<gpu>/`` with where and when it was taken (the same ``<gpu>``
folder names as the records). On a GPU with ``ncu`` on the path,

    python -m kernels.lessons.saved_profiles

takes both again and writes that GPU's folder. The launches profiled are those of
:func:`profiled_launches`: the softmax page's one-row kernel on 4,096 rows of bfloat16,
at 8,192 columns as the launcher runs it, and at 32,768 columns in one tile with 4 warps
(ptxas spills) and with 16 (it does not).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROFILES = Path(__file__).resolve().parents[2] / "docs" / "lessons" / "profiles"
PROTON_FILE, NCU_FILE = "softmax_proton.json", "softmax_ncu.json"
ROWS, COLUMNS, WIDE_COLUMNS = 4096, 8192, 32768
PROTON_CALLS = 10
# The columns of each launch of profiled_launches, in the order Nsight Compute sees them,
# and the warps of those whose warps it sets (the launcher picks the first's).
PROFILED_COLUMNS = (COLUMNS, WIDE_COLUMNS, WIDE_COLUMNS)
PROFILED_WARPS = (None, 4, 16)
# Reasons that are not waits: the warp that issued, and warps that could have issued
# but another was picked.
NOT_WAITING = frozenset({"selected", "not_selected"})
NCU_SECTIONS = (
    "LaunchStats",
    "Occupancy",
    "WarpStateStats",
    "SpeedOfLight",
    "MemoryWorkloadAnalysis",
    "SchedulerStats",
)
# Per stall reason, the average number of warps stalled for it per issued instruction.
STALL_METRICS = r"regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
_STALL_PREFIX = "smsp__average_warps_issue_stalled_"
_STALL_SUFFIX = "_per_issue_active.ratio"
PROVENANCE_KEYS = (
    "tool",
    "gpu",
    "driver",
    "torch",
    "triton",
    "date",
    "commit",
    "command",
)


class ProfileError(ValueError):
    """A saved profile that cannot be read, with the file and what is wrong in it."""


@dataclass(frozen=True)
class ProtonEntry:
    """One kernel inside one Proton scope: its launches, their summed GPU time, and the
    bytes the scope said its entries move."""

    scope: str
    kernel: str
    launches: int
    time_ns: float
    scope_bytes: float

    @property
    def microseconds_per_launch(self) -> float:
        return self.time_ns / self.launches / 1e3

    @property
    def terabytes_per_second(self) -> float:
        return self.scope_bytes / self.time_ns / 1e3


@dataclass(frozen=True)
class ProtonProfile:
    provenance: dict[str, str]
    entries: list[ProtonEntry]


@dataclass(frozen=True)
class ProfiledLaunch:
    """What Nsight Compute read of one launch (units as its report gives them)."""

    kernel: str
    threads: int
    registers: int
    duration_us: float
    memory_tb_s: float
    dram_percent: float
    spill_requests: int
    shared_memory_configured: int
    limit_registers: int
    limit_warps: int
    limit_shared_memory: int
    theoretical_occupancy: float
    achieved_occupancy: float
    stalls: dict[str, float]

    @property
    def warps(self) -> int:
        return self.threads // 32


@dataclass(frozen=True)
class NcuReport:
    provenance: dict[str, str]
    launches: list[ProfiledLaunch]


# (section, metric) of the details page behind each field of ProfiledLaunch.
_DETAILS = {
    "threads": ("Launch Statistics", "Block Size"),
    "registers": ("Launch Statistics", "Registers Per Thread"),
    "duration_us": ("GPU Speed Of Light Throughput", "Duration"),
    "memory_tb_s": ("Memory Workload Analysis", "Memory Throughput"),
    "dram_percent": ("GPU Speed Of Light Throughput", "DRAM Throughput"),
    "spill_requests": ("Memory Workload Analysis", "Local Memory Spilling Requests"),
    "shared_memory_configured": (
        "Launch Statistics",
        "Shared Memory Configuration Size",
    ),
    "limit_registers": ("Occupancy", "Block Limit Registers"),
    "limit_warps": ("Occupancy", "Block Limit Warps"),
    "limit_shared_memory": ("Occupancy", "Block Limit Shared Mem"),
    "theoretical_occupancy": ("Occupancy", "Theoretical Occupancy"),
    "achieved_occupancy": ("Occupancy", "Achieved Occupancy"),
}
# The unit each field is kept in, and the factor from each unit ncu may print it in
# (ncu's Kbyte and Tbyte are decimal: 1,000 and 10^12 bytes).
_UNITS = {
    "duration_us": {"us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3},
    "memory_tb_s": {"Tbyte/s": 1.0, "Tbyte/second": 1.0, "Gbyte/s": 1e-3},
    "shared_memory_configured": {"byte": 1.0, "Kbyte": 1e3},
}


def profiles_dir(gpu: str | None = None) -> Path:
    """The folder of ``gpu``'s saved profiles (a records folder's name, such as ``h100``;
    the primary GPU's by default)."""
    from ..harness.measurements import PRIMARY_GPU

    return PROFILES / (PRIMARY_GPU if gpu is None else gpu)


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ProfileError(f"{path}: cannot read a saved profile: {error}") from error
    if not isinstance(doc, dict):
        raise ProfileError(f"{path}: a saved profile is a JSON object")
    missing = [key for key in PROVENANCE_KEYS if not isinstance(doc.get(key), str)]
    if missing:
        raise ProfileError(
            f"{path}: no {', '.join(missing)} (strings) in its provenance"
        )
    return doc


def _provenance(doc: Mapping[str, Any]) -> dict[str, str]:
    return {key: doc[key] for key in PROVENANCE_KEYS}


def read_proton_profile(path: Path) -> ProtonProfile:
    """The kernels of every scope in a saved Proton profile: the file Proton wrote
    (``.hatchet``, a JSON tree of frames, each with its metrics) under ``hatchet``, with
    its provenance."""
    doc = _load(path)
    tree = doc.get("hatchet")
    if not isinstance(tree, list) or not tree or not isinstance(tree[0], dict):
        raise ProfileError(f"{path}: 'hatchet' is not the list of frames Proton writes")
    entries = []
    for scope in tree[0].get("children", []):
        for kernel in scope.get("children", []):
            try:
                metrics = kernel["metrics"]
                entries.append(
                    ProtonEntry(
                        scope=scope["frame"]["name"],
                        kernel=kernel["frame"]["name"],
                        launches=int(metrics["count"]),
                        time_ns=float(metrics["time (ns)"]),
                        scope_bytes=float(scope["metrics"]["bytes"]),
                    )
                )
            except (KeyError, TypeError, ValueError) as error:
                raise ProfileError(
                    f"{path}: a kernel frame without its name, count, time (ns) or its "
                    f"scope's bytes: {error!r}"
                ) from error
    if not entries:
        raise ProfileError(f"{path}: the profile holds no kernel inside a scope")
    return ProtonProfile(_provenance(doc), entries)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _launch(
    path: Path,
    launch: str,
    kernel: str,
    rows: list[list[str]],
    stalls: dict[str, float],
) -> ProfiledLaunch:
    values: dict[str, tuple[str, str]] = {
        (row[0], row[1]): (row[2], row[3]) for row in rows
    }
    fields: dict[str, Any] = {}
    for field, key in _DETAILS.items():
        if key not in values:
            raise ProfileError(
                f"{path}: launch {launch} has no {key[1]!r} in {key[0]!r}"
            )
        unit, text = values[key]
        try:
            number = _number(text)
        except ValueError:
            raise ProfileError(
                f"{path}: launch {launch}'s {key[1]!r} is {text!r}, not a number"
            ) from None
        if field in _UNITS:
            if unit not in _UNITS[field]:
                raise ProfileError(
                    f"{path}: launch {launch}'s {key[1]!r} is in {unit!r}; expected one "
                    f"of {', '.join(_UNITS[field])}"
                )
            number *= _UNITS[field][unit]
        fields[field] = number
    counts = [f for f in fields if f.startswith("limit_")]
    for field in ("threads", "registers", "spill_requests", "shared_memory_configured"):
        fields[field] = round(fields[field])
    for field in counts:
        fields[field] = int(fields[field])
    return ProfiledLaunch(kernel=kernel, stalls=stalls, **fields)


def read_ncu_report(path: Path) -> NcuReport:
    """Every launch of a saved Nsight Compute report: its details page (``ncu --csv
    --page details``) under ``details`` and its stall-reason metrics (``--page raw``,
    the ``smsp__average_warps_issue_stalled_*`` columns) under ``stall_metrics``."""
    doc = _load(path)
    details, raw = doc.get("details"), doc.get("stall_metrics")
    for name, table in (("details", details), ("stall_metrics", raw)):
        if (
            not isinstance(table, list)
            or len(table) < 2
            or not all(isinstance(r, list) for r in table)
        ):
            raise ProfileError(f"{path}: {name!r} is not a table (a list of rows)")
    header = details[0]
    wanted = ("ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit")
    try:
        columns = [header.index(c) for c in (*wanted, "Metric Value")]
    except ValueError as error:
        raise ProfileError(
            f"{path}: the details table lacks a column: {error}"
        ) from None
    by_launch: dict[str, list[list[str]]] = {}
    kernels: dict[str, str] = {}
    for row in details[1:]:
        launch, kernel, *rest = (row[i] for i in columns)
        kernels[launch] = kernel
        by_launch.setdefault(launch, []).append(rest)
    stall_header = raw[0]
    if "ID" not in stall_header:
        raise ProfileError(f"{path}: the stall_metrics table has no 'ID' column")
    stalls: dict[str, dict[str, float]] = {}
    for row in raw[2:]:  # the second row holds the units
        if len(row) != len(stall_header):
            raise ProfileError(
                f"{path}: a stall_metrics row has {len(row)} cells; its header "
                f"{len(stall_header)}"
            )
        named = dict(zip(stall_header, row, strict=True))
        stalls[named["ID"]] = {
            name.removeprefix(_STALL_PREFIX).removesuffix(_STALL_SUFFIX): _number(value)
            for name, value in named.items()
            if name.startswith(_STALL_PREFIX) and value
        }
    launches = []
    for launch, rows in by_launch.items():
        if launch not in stalls:
            raise ProfileError(f"{path}: launch {launch} has no stall metrics")
        launches.append(_launch(path, launch, kernels[launch], rows, stalls[launch]))
    return NcuReport(_provenance(doc), launches)


def saved_proton_profile(gpu: str | None = None) -> ProtonProfile:
    """The Proton profile saved for ``gpu`` (the primary GPU's by default)."""
    return read_proton_profile(profiles_dir(gpu) / PROTON_FILE)


def saved_ncu_report(gpu: str | None = None) -> NcuReport:
    """The Nsight Compute report saved for ``gpu`` (the primary GPU's by default), one
    launch per entry of PROFILED_COLUMNS."""
    path = profiles_dir(gpu) / NCU_FILE
    report = read_ncu_report(path)
    if len(report.launches) != len(PROFILED_COLUMNS):
        raise ProfileError(
            f"{path}: {len(report.launches)} launches; profiled_launches makes "
            f"{len(PROFILED_COLUMNS)}"
        )
    for number, (launch, warps) in enumerate(
        zip(report.launches, PROFILED_WARPS, strict=True)
    ):
        if warps is not None and launch.warps != warps:
            raise ProfileError(
                f"{path}: launch {number} ran {launch.warps} warps; profiled_launches "
                f"launches it with {warps}: the report is of other launches"
            )
    return report


_TOOL_NOISE = r" \((?:build [^)]*|public-release)\)|, Triton [\w.+]+$"


def caption(provenance: Mapping[str, str], width: int = 80) -> str:
    """Which tool took a saved profile, where, when and of which code, wrapped at
    ``width`` columns."""
    from ..harness.fingerprint import short_commit
    from ..harness.provenance import shown_date
    from ..text.messages import _

    # The tool named in short: no build number, no release channel, no second Triton.
    tool = re.sub(_TOOL_NOISE, "", provenance["tool"])
    line = _(
        "{tool}; {gpu}, driver {driver}, torch {torch}, Triton {triton}, {date}, code "
        "at commit {commit}"
    ).format(
        **{
            **provenance,
            "tool": tool,
            "date": shown_date(provenance["date"]),
            "commit": short_commit(provenance["commit"]),
        }
    )
    return textwrap.fill(line, width)


def ncu_table(report: NcuReport) -> str:
    """The launches of a saved report as the profiling lesson prints them: a table of
    registers, spill requests, duration, memory throughput and occupancy, then each
    launch's top stall reasons (:func:`top_stalls`), in the language of this run."""
    from ..text.messages import _, number

    rows = [
        [
            _("columns"),
            _("warps"),
            _("registers"),
            _("spill requests"),
            _("µs"),
            _("TB/s"),
            _("occupancy"),
        ]
    ]
    waits = [_("most warps waiting on:")]
    for columns, launch in zip(PROFILED_COLUMNS, report.launches, strict=True):
        rows.append(
            [
                number(f"{columns:,}"),
                str(launch.warps),
                str(launch.registers),
                number(f"{launch.spill_requests:,}"),
                number(f"{launch.duration_us:.1f}"),
                number(f"{launch.memory_tb_s:.2f}"),
                _("{theoretical}%, achieved {achieved}%").format(
                    theoretical=number(f"{launch.theoretical_occupancy:g}"),
                    achieved=number(f"{launch.achieved_occupancy:.0f}"),
                ),
            ]
        )
        stalls = ", ".join(
            f"{reason} {number(f'{warps:.1f}')}" for reason, warps in top_stalls(launch)
        )
        waits.append(
            "  "
            + _("{columns} columns, {warps} warps: {stalls}").format(
                columns=number(f"{columns:,}"), warps=launch.warps, stalls=stalls
            )
        )
    # Numbers right-aligned under their headings; the occupancy (text) left-aligned.
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            [c.rjust(w) for c, w in zip(row[:-1], widths, strict=False)] + [row[-1]]
        )
        for row in rows
    ]
    return "\n".join([*lines, "", *waits])


def top_stalls(launch: ProfiledLaunch, count: int = 3) -> list[tuple[str, float]]:
    """The ``count`` reasons that stalled the most warps per issued instruction, most
    first, leaving out those that are not waits (NOT_WAITING)."""
    reasons = [(r, v) for r, v in launch.stalls.items() if r not in NOT_WAITING]
    return sorted(reasons, key=lambda item: -item[1])[:count]


def profiled_launches() -> None:
    """The launches both tools profile (see the module's docstring); needs a GPU."""
    import torch

    from ..operations import softmax

    x = torch.randn(ROWS, COLUMNS, device="cuda", dtype=torch.bfloat16)
    softmax.softmax(x)
    wide = torch.randn(ROWS, WIDE_COLUMNS, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(wide)
    for warps in (4, 16):
        softmax.softmax_kernel[(ROWS,)](
            wide,
            out,
            WIDE_COLUMNS,
            ACC=softmax.tl.float32,
            BLOCK_SIZE=WIDE_COLUMNS,
            EVEN=True,
            num_warps=warps,
        )
    torch.cuda.synchronize()


def _provenance_now(tool: str, command: str) -> dict[str, str]:
    from ..harness.fingerprint import commit
    from ..harness.provenance import capture

    environment = capture()
    return {
        "tool": tool,
        **{
            key: environment[key]
            for key in ("gpu", "driver", "torch", "triton", "date")
        },
        "commit": commit(),
        "command": command,
    }


def take_proton_profile(folder: Path) -> Path:
    """Run the profiling lesson's Proton example, as the page prints it, and save the
    profile Proton wrote in ``folder``."""
    import torch
    import triton.profiler as proton

    from ..operations import softmax

    with tempfile.TemporaryDirectory() as scratch:
        x = torch.randn(ROWS, COLUMNS, device="cuda", dtype=torch.bfloat16)
        softmax.softmax(x)  # compiled before the profile starts
        moved = 2 * x.numel() * x.element_size()
        proton.start(os.path.join(scratch, "softmax"))
        for _ in range(PROTON_CALLS):
            with proton.scope(f"softmax {ROWS} x {COLUMNS}", {"bytes": moved}):
                softmax.softmax(x)
        proton.finalize()
        tree = json.loads(Path(scratch, "softmax.hatchet").read_text())
    doc = _provenance_now(
        "Proton (triton.profiler)",
        "python -m kernels.lessons.saved_profiles",
    )
    return _save(folder / PROTON_FILE, {**doc, "hatchet": tree})


def _ncu_table(ncu: str, report: Path, page: str) -> list[list[str]]:
    import csv
    import io

    out = subprocess.run(
        [ncu, "-i", str(report), "--csv", "--page", page],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return list(csv.reader(io.StringIO(out.stdout)))


def take_ncu_report(folder: Path, ncu: str) -> Path:
    """Profile :func:`profiled_launches` with Nsight Compute and save its details page
    and stall metrics in ``folder``."""
    sections = [arg for section in NCU_SECTIONS for arg in ("--section", section)]
    options = [
        "--clock-control", "none",  # METHOD: profile at the clocks the GPU runs at
        *sections,
        "--metrics", STALL_METRICS,
        "-k", "regex:softmax_kernel",
        "-c", str(len(PROFILED_COLUMNS)),
    ]  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch, "softmax.ncu-rep")
        target = [sys.executable, "-m", "kernels.lessons.saved_profiles", "--launches"]
        subprocess.run(
            [ncu, *options, "-f", "-o", str(report.with_suffix("")), *target],
            check=True,
            timeout=600,
        )
        details = _ncu_table(ncu, report, "details")
        raw = _ncu_table(ncu, report, "raw")
    keep = [i for i, name in enumerate(raw[0]) if name == "ID" or _STALL_PREFIX in name]
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True)
    doc = _provenance_now(
        "Nsight Compute "
        + version.stdout.strip().splitlines()[-1].removeprefix("Version ").split()[0],
        " ".join(
            ["ncu", *options, "python -m kernels.lessons.saved_profiles --launches"]
        ),
    )
    return _save(
        folder / NCU_FILE,
        {
            **doc,
            "details": details,
            "stall_metrics": [[r[i] for i in keep] for r in raw],
        },
    )


def _save(path: Path, doc: dict[str, Any]) -> Path:
    from ..harness.measurements import write_atomically

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(doc, indent=1) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m kernels.lessons.saved_profiles``: take both profiles on this GPU."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--launches"]:
        profiled_launches()
        return
    if args:
        raise SystemExit(
            f"usage: python -m kernels.lessons.saved_profiles (no arguments); got {args}"
        )
    import torch

    from ..harness.measurements import gpu_slug

    if not torch.cuda.is_available():
        raise SystemExit("taking profiles needs a CUDA GPU; this machine has none")
    ncu = shutil.which("ncu") or shutil.which("ncu", path="/usr/local/cuda/bin")
    if ncu is None:
        raise SystemExit(
            "Nsight Compute's ncu is not on the PATH (nor in /usr/local/cuda/bin)"
        )
    folder = profiles_dir(gpu_slug(torch.cuda.get_device_name()))
    for taken in (take_proton_profile(folder), take_ncu_report(folder, ncu)):
        print(f"wrote {taken}")


if __name__ == "__main__":
    main()

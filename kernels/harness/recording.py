"""Recording the benchmarks: the command line that re-measures them on a GPU and checks
the records anywhere, and the build's list of the records it cannot draw.

``python -m kernels.harness.recording [NAME ...]`` (or ``nox -s bench``) re-measures on a GPU
and writes this GPU's records; ``--stale`` lists the records that no longer match the
code; ``--shard I/N`` measures one of N parts, ``--gpus all`` a part per visible GPU.

It lives apart from :mod:`kernels.harness.bench`, the harness that pages import, because it
handles the families' launch-cost records too, whose timing code
(:mod:`kernels.harness.launch_record`) imports every launcher: a page that imports the
harness depends only on what it uses.
"""

import argparse
import sys
import time
from collections.abc import Collection, Mapping, Sequence

import torch

from ..declarations.spec import BenchmarkSpec
from ..triton_helpers.runtime import interpreted
from . import bench, fingerprint, launch_cost, launch_record, measurements, shards
from .launch_record import LAUNCH_RECORDS
from .measurements import LAUNCH_OVERHEAD, MeasurementError


def _refusal(
    name: str, specs: Mapping[str, BenchmarkSpec], gpu: str | None = None
) -> str | None:
    # Why a normal build would refuse record ``name`` of ``gpu`` (missing, malformed,
    # stale), or None when it would draw it.
    try:
        if name in LAUNCH_RECORDS:
            launch_record.load_current_launch_overhead(name, gpu)
        else:
            bench.load_current(specs[name], gpu)
    except MeasurementError as error:
        return str(error)
    return None


def unusable_records(names: Collection[str]) -> set[str]:
    """Those of the records ``names`` that a build which is not a draft would refuse:
    missing, malformed or stale. A draft build draws a placeholder for each of them, and
    draws every other record exactly as a normal build does."""
    specs = bench.discover()
    return {name for name in names if _refusal(name, specs) is not None}


def stale_report(
    specs: dict[str, BenchmarkSpec], launch_overhead: bool = True
) -> list[str]:
    """One line per record that the build would refuse, on every GPU that has records:
    malformed, stale, in the wrong GPU's folder or beside a record that names its GPU
    otherwise, of a commit not in the history of HEAD, unlike its spec, left over from a
    benchmark that no longer exists, or missing from the primary GPU (another GPU need
    not have every record; the page shows what it has). ``launch_overhead``: check the
    families' launch-cost records too."""
    names = [*specs, *LAUNCH_RECORDS] if launch_overhead else list(specs)
    known = {*bench.discover(), *LAUNCH_RECORDS}
    root = measurements.MEASUREMENTS_ROOT
    problems = [
        f"{path}: a record belongs in its GPU's folder, {root}/<gpu>/"
        for path in sorted(root.glob("*.json"))
    ]
    for gpu in measurements.known_gpus():
        here = set(measurements.recorded_benchmarks(gpu))
        for name in names:
            if (name in here or gpu == measurements.PRIMARY_GPU) and (
                problem := _refusal(name, specs, gpu)
            ) is not None:
                problems.append(problem)
        for name in sorted(here - known):
            problems.append(
                f"{measurements.path_for(name, gpu)}: no benchmark is named {name!r}"
            )
    return problems


def shard_plan(names: Sequence[str], count: int) -> list["shards.Shard"]:
    """``names`` (benchmarks and launch-cost records) in ``count`` shards, modules whole
    (a family's launch-cost record goes with its module's benchmarks), balanced by how
    long the primary GPU's records took to measure."""
    specs = bench.discover()
    modules = {
        name: (
            launch_cost.FAMILY_MODULES[LAUNCH_RECORDS[name]]
            if name in LAUNCH_RECORDS
            else specs[name].module
        )
        for name in names
    }
    return shards.plan(
        modules, count, {name: shards.measured_seconds(name) for name in names}
    )


def _measure_and_save(names: Sequence[str], budget_s: float | None) -> list[str]:
    # Measure and record each of ``names`` in turn; past ``budget_s`` seconds, start no
    # more. Returns the names left unmeasured.
    commit = fingerprint.commit()
    if commit.endswith(measurements.DIRTY):
        # Refused before any GPU time is spent: the loaders would refuse the records.
        raise SystemExit(
            f"kernels/ has uncommitted changes (commit {commit}): a record names the commit "
            "that holds the code it measured. Commit first, or set "
            f"{fingerprint.COMMIT_VARIABLE} to the commit whose code this is."
        )
    specs = bench.discover()
    started = time.monotonic()
    for index, name in enumerate(names):
        if budget_s is not None and time.monotonic() - started > budget_s:
            return list(names[index:])
        record = (
            launch_record.measure_launch_overhead(name)
            if name in LAUNCH_RECORDS
            else bench.measure(specs[name])
        )
        print(f"wrote {measurements.save(record)}", flush=True)
    return []


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: measure the named benchmarks (all by default) and record their files
    in this GPU's folder, or one shard of them (``--shard I/N``), or a shard per visible
    GPU at once (``--gpus all``); ``--list`` prints the shard plan without a GPU;
    ``--stale`` lists the records that do not match the code."""
    specs = bench.discover()
    known = [*specs, *LAUNCH_RECORDS]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=(
            f"benchmarks to measure (default: all of {', '.join(known)}; "
            f"{LAUNCH_OVERHEAD} names every family's launch-cost record)"
        ),
    )
    parser.add_argument(
        "--stale",
        action="store_true",
        help="list every record whose code fingerprint no longer matches, and exit 1 if any",
    )
    parser.add_argument(
        "--shard",
        metavar="I/N",
        help="measure only shard I of N: whole kernel modules, balanced by the records' times",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the shard plan (with --shard: that shard)",
    )
    parser.add_argument(
        "--gpus",
        choices=["all"],
        help="measure shard I of N on the I-th of the N visible GPUs, all at once",
    )
    parser.add_argument(
        "--only-stale",
        action="store_true",
        help="measure only those of the benchmarks whose record on this GPU is missing or stale",
    )
    parser.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="start no benchmark after this many seconds; list the ones left and exit 3",
    )
    args = parser.parse_args(argv)
    if LAUNCH_OVERHEAD in args.names:  # every family's launch-cost record, in its place
        at = args.names.index(LAUNCH_OVERHEAD)
        args.names[at : at + 1] = [n for n in LAUNCH_RECORDS if n not in args.names]
        args.names = list(dict.fromkeys(args.names))
    unknown = sorted(set(args.names) - set(known))
    if unknown:
        parser.error(
            f"unknown benchmark {', '.join(unknown)}; known: {', '.join(known)}"
        )
    chosen = args.names or known
    if args.stale:
        problems = stale_report(
            {name: specs[name] for name in chosen if name in specs},
            launch_overhead=any(name in LAUNCH_RECORDS for name in chosen),
        )
        for line in problems:
            print(line)
        if problems:
            parser.exit(1, f"Records that cannot be drawn: {len(problems)}\n")
        gpus = ", ".join(measurements.known_gpus())
        print(
            f"All records of the {len(chosen)} benchmarks match the code (GPUs: {gpus})."
        )
        return
    if args.only_stale:
        gpu = (
            measurements.PRIMARY_GPU
            if interpreted()
            else measurements.gpu_slug(torch.cuda.get_device_name())
        )
        chosen = [name for name in chosen if _refusal(name, specs, gpu) is not None]
        print(
            f"Missing or stale on the {gpu}: {' '.join(chosen) or 'none'}", flush=True
        )
    index, count = 1, 1
    if args.shard:
        try:
            index, count = shards.parse_shard(args.shard)
        except ValueError as error:
            parser.error(str(error))
    if args.list:
        print(shards.describe(shard_plan(chosen, count), index if args.shard else None))
        return
    if args.gpus:
        if args.shard:
            parser.error("--gpus all picks the shards itself; leave out --shard")
        gpus = shards.visible_gpus()
        print(
            f"Measuring {len(gpus)} shard(s), one per GPU: {', '.join(gpus)}",
            flush=True,
        )
        extra = [
            *args.names,
            *(["--budget", str(args.budget)] if args.budget else []),
            *(["--only-stale"] if args.only_stale else []),
        ]
        codes = shards.run_on_gpus(gpus, lambda i, n: shards.shard_command(i, n, extra))
        failed = [f"{i}/{len(codes)}" for i, code in enumerate(codes, start=1) if code]
        if failed:
            parser.exit(1, f"shards that failed: {', '.join(failed)}\n")
        return
    if interpreted():
        parser.exit(
            2,
            "kernels.harness.recording: no CUDA GPU here; benchmarks are measured on GPUs only\n",
        )
    names = shard_plan(chosen, count)[index - 1].names if args.shard else tuple(chosen)
    left = _measure_and_save(names, args.budget)
    if left:
        not_measured = " ".join(left)
        parser.exit(
            3,
            f"out of time (--budget {args.budget:g} s); not measured: {not_measured}\n",
        )


if __name__ == "__main__":
    # Run as a script, this file is the module __main__, whose classes are other objects
    # than the ones the kernel modules import: call the real module's main.
    from .recording import main as recording_main

    recording_main(sys.argv[1:])

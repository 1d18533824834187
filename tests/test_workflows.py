"""The GPU CI workflows: they parse, and every command they run exists (a nox session of
the noxfile, options that the benchmark command line knows)."""

import contextlib
import io
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

import noxfile
from kernels.harness import recording

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
# What `nox -s NAME -- ARGS` a step runs.
NOX = re.compile(r"nox -s (\S+)(?: -- ([^\n]*))?")


def _load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict) and doc.get("jobs"), f"{path.name}: no jobs"
    return doc


def _runs(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (job, step["run"])
        for job, spec in doc["jobs"].items()
        for step in spec["steps"]
        if "run" in step
    ]


def _bench_options() -> set[str]:
    # The options `python -m kernels.harness.recording --help` lists.
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        recording.main(["--help"])
    return set(re.findall(r"--[a-z][a-z-]*", out.getvalue()))


def test_there_are_workflows_for_a_full_run_and_a_pull_request() -> None:
    assert {path.name for path in WORKFLOWS} >= {"gpu-docs.yml", "gpu-pr.yml"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda path: path.name)
def test_every_nox_command_of_a_workflow_exists(path: Path) -> None:
    sessions = {name for name in dir(noxfile) if callable(getattr(noxfile, name))}
    options = _bench_options()
    commands = [match for _job, run in _runs(_load(path)) for match in NOX.finditer(run)]
    assert commands, f"{path.name} runs no nox session"
    for match in commands:
        session, args = match.group(1), match.group(2) or ""
        assert session in sessions and session in {"bench", "docs", "tests", "lint"}, session
        if session == "bench":
            assert set(re.findall(r"--[a-z][a-z-]*", args)) <= options, args
            shlex.split(args)  # quotes that close


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda path: path.name)
def test_measuring_runs_on_gpu_runners_and_the_site_is_built_without_one(path: Path) -> None:
    doc = _load(path)
    for job, spec in doc["jobs"].items():
        runs = " ".join(step.get("run", "") for step in spec["steps"])
        measures = re.search(r"nox -s bench -- (?!--list|--stale)", runs) is not None
        labels = spec["runs-on"]
        if measures:
            assert "self-hosted" in labels and "gpu" in labels, job
            assert "NINJA_GAP_COMMIT" in spec.get("env", {}), job  # the commit a record names
        elif "nox -s docs" in runs:
            assert labels == "ubuntu-latest", job
            assert "nox -s bench -- --stale" in runs, job  # the merged records are checked


def test_the_full_run_splits_each_gpu_into_the_shards_it_asks_for() -> None:
    doc = _load(ROOT / ".github" / "workflows" / "gpu-docs.yml")
    measure = doc["jobs"]["measure"]
    assert set(measure["strategy"]["matrix"]) == {"gpu", "shard"}
    assert any("--shard ${{ matrix.shard }}" in step.get("run", "") for step in measure["steps"])

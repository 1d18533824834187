"""Measuring in shards: plans tested on the CPU, the one-process-per-GPU runner with
stand-in processes."""

import subprocess
import sys
from pathlib import Path

import pytest

from kernels.harness import bench, launch_cost, recording, shards
from kernels.harness.launch_record import LAUNCH_RECORDS

ROOT = Path(__file__).resolve().parent.parent
SPECS = bench.discover()
NAMES = [*SPECS, *LAUNCH_RECORDS]
# Each benchmark's kernel module; a family's launch-cost record goes with its module.
MODULES = {
    name: SPECS[name].module if name in SPECS else launch_cost.FAMILY_MODULES[LAUNCH_RECORDS[name]]
    for name in NAMES
}


@pytest.mark.parametrize("count", [1, 2, 3, 6, 8, 20])
def test_every_benchmark_is_in_exactly_one_shard_and_modules_stay_whole(count: int) -> None:
    plan = recording.shard_plan(NAMES, count)
    assert len(plan) == count
    placed = [name for shard in plan for name in shard.names]
    assert sorted(placed) == sorted(NAMES)
    for shard in plan:
        for name in shard.names:
            module = MODULES[name]
            assert {n for n in NAMES if MODULES[n] == module} <= set(shard.names)


def test_the_shards_are_balanced_by_the_recorded_times() -> None:
    # Twelve modules of uneven measuring times over six shards.
    times = [300, 250, 200, 180, 150, 140, 120, 100, 90, 60, 40, 30]
    modules = {f"b{i}": f"m{i}" for i in range(len(times))}
    plan = shards.plan(modules, 6, {f"b{i}": float(t) for i, t in enumerate(times)})
    assert shards.imbalance(plan) <= 1.25
    assert [shard.timed for shard in plan] == [len(shard.names) for shard in plan]


def test_a_benchmark_without_a_recorded_time_counts_as_the_mean() -> None:
    plan = shards.plan({"a": "m1", "b": "m2", "c": "m3"}, 2, {"a": 10.0, "b": 30.0, "c": None})
    assert {shard.names: shard.seconds for shard in plan} == {("b",): 30.0, ("c", "a"): 30.0}
    assert shards.plan({"a": "m"}, 1, {"a": None})[0].seconds == 1.0  # nothing timed at all


@pytest.mark.parametrize("text", ["2", "0/6", "7/6", "a/b", "1/0", "1/2/3"])
def test_a_malformed_shard_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="shard"):
        shards.parse_shard(text)


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernels.harness.recording", *args],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip


def test_the_plan_is_listed_without_a_gpu() -> None:
    result = _bench("--list", "--shard", "2/6")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("shard 2/6: about ")
    assert "shard 1/6" not in result.stdout and "longest shard / mean:" in result.stdout
    result = _bench("--list", "--shard", "9/6")
    assert result.returncode == 2 and "I must be from 1 to N" in result.stderr


def test_each_gpu_runs_its_own_shard_at_once(tmp_path: Path) -> None:
    # Stand-ins for the shard processes: each writes the GPU it sees and exits with a
    # code of its own.
    def command(index: int, count: int) -> list[str]:
        script = (
            "import os, sys, pathlib; "
            f"pathlib.Path(r'{tmp_path}', '{index}-of-{count}').write_text("
            "os.environ['CUDA_VISIBLE_DEVICES']); "
            f"sys.exit({0 if index != 2 else 5})"
        )
        return [sys.executable, "-c", script]

    codes = shards.run_on_gpus(["0", "3", "7"], command, environ={"PATH": ""})
    assert codes == [0, 5, 0]
    seen = {path.name: path.read_text() for path in tmp_path.iterdir()}
    assert seen == {"1-of-3": "0", "2-of-3": "3", "3-of-3": "7"}


def test_the_visible_gpus_come_from_cuda_visible_devices() -> None:
    assert shards.visible_gpus({"CUDA_VISIBLE_DEVICES": "2, 5"}) == ["2", "5"]
    with pytest.raises(RuntimeError, match="no GPU is visible"):
        shards.run_on_gpus(shards.visible_gpus({"CUDA_VISIBLE_DEVICES": ""}))


def test_a_shard_command_measures_its_shard() -> None:
    command = shards.shard_command(2, 6, ["--budget", "300"])
    assert command[1:] == ["-m", "kernels.harness.recording", "--shard", "2/6", "--budget", "300"]

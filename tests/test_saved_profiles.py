"""kernels.lessons.saved_profiles: the profiles lesson 8 reads, what the page says of them, and
errors that name the file and what is wrong."""

import copy
import json
from pathlib import Path

import pytest
import torch

from kernels.harness import profiling
from kernels.lessons import saved_profiles
from kernels.lessons.saved_profiles import ProfileError


@pytest.fixture(scope="module")
def report() -> saved_profiles.NcuReport:
    return saved_profiles.saved_ncu_report()


@pytest.fixture(scope="module")
def proton() -> saved_profiles.ProtonProfile:
    return saved_profiles.saved_proton_profile()


def _doc(name: str) -> dict:
    return json.loads((saved_profiles.profiles_dir() / name).read_text())


def _write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_saved_profiles_say_where_when_and_of_which_code(
    report: saved_profiles.NcuReport, proton: saved_profiles.ProtonProfile
) -> None:
    for provenance in (report.provenance, proton.provenance):
        assert provenance["gpu"].startswith("NVIDIA")
        assert len(provenance["commit"]) >= 12
        assert provenance["command"].startswith(("python -m", "ncu "))
        assert saved_profiles.caption(provenance).count(provenance["commit"][:12]) == 1


def test_proton_adds_each_entry_s_bytes_to_its_scope(
    proton: saved_profiles.ProtonProfile,
) -> None:
    (entry,) = proton.entries
    assert entry.kernel == "softmax_kernel"
    assert entry.launches == saved_profiles.PROTON_CALLS
    one_call = 2 * saved_profiles.ROWS * saved_profiles.COLUMNS * 2  # bf16 in and out
    assert entry.scope_bytes == one_call * saved_profiles.PROTON_CALLS


def test_the_page_s_occupancy_finds_the_limits_nsight_compute_reports(
    report: saved_profiles.NcuReport,
) -> None:
    for launch in report.launches:
        ours = profiling.occupancy(launch.registers, launch.warps)
        assert (ours.by_registers, ours.by_warps) == (
            launch.limit_registers,
            launch.limit_warps,
        )
        assert launch.theoretical_occupancy == pytest.approx(
            100 * min(ours.by_registers, ours.by_warps) * launch.warps / 64
        )


def test_what_the_page_says_of_the_report(report: saved_profiles.NcuReport) -> None:
    usual, spilling, wide = report.launches
    # Warps wait most on memory in all three.
    for launch in report.launches:
        assert saved_profiles.top_stalls(launch)[0][0] == "long_scoreboard"
    # Only the 32,768-column tile at 4 warps spills, with 255 registers: two programs.
    assert (spilling.warps, spilling.registers, spilling.limit_registers) == (4, 255, 2)
    assert spilling.spill_requests > 0 and usual.spill_requests == wide.spill_requests == 0
    # It takes longer than the same tile at 16 warps, the memory about as busy: more
    # bytes in all; and it keeps half as many warps on an SM.
    assert spilling.duration_us > 1.2 * wide.duration_us
    assert spilling.memory_tb_s == pytest.approx(wide.memory_tb_s, rel=0.1)
    moved = [launch.memory_tb_s * launch.duration_us for launch in (spilling, wide)]
    assert moved[0] > moved[1]
    assert 2 * spilling.theoretical_occupancy == wide.theoretical_occupancy
    # The shared-memory carveout is smaller than occupancy() assumes, and not binding.
    for launch in report.launches:
        assert launch.shared_memory_configured < profiling.SHARED_MEMORY_PER_SM
        assert launch.limit_shared_memory > launch.limit_registers


def test_top_stalls_leaves_out_what_is_not_a_wait() -> None:
    launch = saved_profiles.saved_ncu_report().launches[0]
    reasons = [reason for reason, _ in saved_profiles.top_stalls(launch, count=30)]
    assert not {"selected", "not_selected"} & set(reasons)
    assert len(reasons) == len(launch.stalls) - 2


def test_the_caption_names_the_tool_in_short() -> None:
    provenance = saved_profiles.saved_ncu_report().provenance
    tool = "Nsight Compute 2025.3.1.0 (build 36398880) (public-release)"
    assert saved_profiles.caption({**provenance, "tool": tool}).startswith(
        "Nsight Compute 2025.3.1.0; NVIDIA"
    )
    proton = {**provenance, "tool": "Proton (triton.profiler), Triton 3.6.0"}
    assert saved_profiles.caption(proton).startswith("Proton (triton.profiler); NVIDIA")


@pytest.mark.parametrize("key", saved_profiles.PROVENANCE_KEYS)
def test_a_profile_without_its_provenance_is_refused(tmp_path: Path, key: str) -> None:
    doc = _doc(saved_profiles.PROTON_FILE)
    del doc[key]
    path = _write(tmp_path, doc)
    with pytest.raises(ProfileError, match=rf"{path}: no {key} "):
        saved_profiles.read_proton_profile(path)


def test_a_profile_that_is_not_json_names_its_file(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    path.write_text("{not json")
    with pytest.raises(ProfileError, match=rf"{path}: cannot read"):
        saved_profiles.read_ncu_report(path)


def test_a_kernel_frame_without_its_time_is_refused(tmp_path: Path) -> None:
    doc = _doc(saved_profiles.PROTON_FILE)
    del doc["hatchet"][0]["children"][0]["children"][0]["metrics"]["time (ns)"]
    with pytest.raises(ProfileError, match="time \\(ns\\)"):
        saved_profiles.read_proton_profile(_write(tmp_path, doc))


def test_a_profile_with_no_kernel_in_a_scope_is_refused(tmp_path: Path) -> None:
    doc = _doc(saved_profiles.PROTON_FILE)
    doc["hatchet"][0]["children"] = []
    with pytest.raises(ProfileError, match="no kernel inside a scope"):
        saved_profiles.read_proton_profile(_write(tmp_path, doc))


def _without_metric(doc: dict, metric: str) -> dict:
    doc = copy.deepcopy(doc)
    name = doc["details"][0].index("Metric Name")
    doc["details"] = [r for r in doc["details"] if r[name] != metric]
    return doc


def test_a_launch_missing_a_metric_is_named(tmp_path: Path) -> None:
    doc = _without_metric(_doc(saved_profiles.NCU_FILE), "Registers Per Thread")
    with pytest.raises(ProfileError, match="launch 0 has no 'Registers Per Thread'"):
        saved_profiles.read_ncu_report(_write(tmp_path, doc))


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("Metric Unit", "furlong", "is in 'furlong'; expected one of us, "),
        ("Metric Value", "n/a", "is 'n/a', not a number"),
    ],
)
def test_a_duration_in_no_known_unit_or_not_a_number_is_refused(
    tmp_path: Path, column: str, value: str, message: str
) -> None:
    doc = _doc(saved_profiles.NCU_FILE)
    header = doc["details"][0]
    for row in doc["details"][1:]:
        if row[header.index("Metric Name")] == "Duration":
            row[header.index(column)] = value
    with pytest.raises(ProfileError, match=message):
        saved_profiles.read_ncu_report(_write(tmp_path, doc))


def test_a_launch_without_stall_metrics_is_refused(tmp_path: Path) -> None:
    doc = _doc(saved_profiles.NCU_FILE)
    doc["stall_metrics"] = doc["stall_metrics"][:3]  # header, units, launch 0
    with pytest.raises(ProfileError, match="launch 1 has no stall metrics"):
        saved_profiles.read_ncu_report(_write(tmp_path, doc))


def test_a_report_whose_launches_ran_other_warps_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(saved_profiles, "PROFILED_WARPS", (None, 8, 16))
    with pytest.raises(ProfileError, match=r"launch 1 ran 4 warps; .* with 8"):
        saved_profiles.saved_ncu_report()


def test_a_ragged_stall_metrics_row_is_refused(tmp_path: Path) -> None:
    doc = _doc(saved_profiles.NCU_FILE)
    doc["stall_metrics"][2] = doc["stall_metrics"][2][:-1]
    with pytest.raises(ProfileError, match="a stall_metrics row has"):
        saved_profiles.read_ncu_report(_write(tmp_path, doc))


def test_a_report_of_other_launches_than_the_page_s_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(saved_profiles, "PROFILED_COLUMNS", (8192,))
    with pytest.raises(ProfileError, match="3 launches; profiled_launches makes 1"):
        saved_profiles.saved_ncu_report()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without a GPU")
def test_taking_profiles_without_a_gpu_says_so() -> None:
    with pytest.raises(SystemExit, match="needs a CUDA GPU"):
        saved_profiles.main([])


def test_the_command_takes_no_arguments() -> None:
    with pytest.raises(SystemExit, match=r"usage: python -m kernels\.lessons\.saved_profiles"):
        saved_profiles.main(["--everything"])


def test_the_table_lists_every_launch_and_what_its_warps_wait_on(
    report: saved_profiles.NcuReport,
) -> None:
    lines = saved_profiles.ncu_table(report).splitlines()
    header, *rows = lines[: 1 + len(report.launches)]
    assert header.split()[:3] == ["columns", "warps", "registers"]
    assert [row.split()[:3] for row in rows] == [
        [f"{c:,}", str(launch.warps), str(launch.registers)]
        for c, launch in zip(saved_profiles.PROFILED_COLUMNS, report.launches, strict=True)
    ]
    waits = lines[lines.index("most warps waiting on:") + 1 :]
    assert len(waits) == len(report.launches)
    assert all("long_scoreboard" in line for line in waits)


def test_the_caption_wraps_at_its_width(report: saved_profiles.NcuReport) -> None:
    text = saved_profiles.caption(report.provenance, width=60)
    assert len(text.splitlines()) > 1
    assert all(len(line) <= 60 for line in text.splitlines())

"""The profiling lesson's tools: ptxas's report for the softmax kernel compiled for sm_90a
(what the lesson says of it), the occupancy arithmetic against cases worked by hand,
and the errors that name what is wrong."""

import functools
from pathlib import Path

import pytest

from kernels.harness import profiling
from kernels.harness.profiling import Allocation, occupancy
from kernels.text import messages

SOFTMAX_KERNEL = "kernels.operations.softmax:softmax_kernel"

# ptxas's report, as CUDA 12's ptxas (Triton 3.6) and CUDA 13's (Triton 3.9) print it.
CUDA_12_REPORT = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'softmax_kernel' for 'sm_90a'
ptxas info    : Function properties for softmax_kernel
    336 bytes stack frame, 392 bytes spill stores, 396 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 336 bytes cumulative stack size
"""
CUDA_13_REPORT = """ptxas-blackwell info    : 0 bytes gmem
ptxas-blackwell info    : Compiling entry function 'softmax_kernel' for 'sm_90a'
ptxas-blackwell info    : Function properties for softmax_kernel
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas-blackwell info    : Used 20 registers, used 1 barriers
"""


@functools.cache
def softmax(block_size: int, num_warps: int) -> Allocation:
    # Each compile takes seconds: a configuration that two tests read is compiled once.
    return profiling.softmax_allocation(block_size, num_warps)


@pytest.mark.compiles
def test_a_small_tile_takes_few_registers_and_spills_nothing() -> None:
    small = softmax(1024, 4)
    assert small.kernel == "kernels.operations.softmax:softmax_kernel" and small.num_warps == 4
    assert 0 < small.registers < profiling.MAX_REGISTERS_PER_THREAD
    assert not small.spills and small.spill_stores == small.spill_loads == 0
    # The row's maximum and sum are exchanged between warps through shared memory.
    assert small.shared_memory > 0


@pytest.mark.compiles
def test_a_row_too_long_for_its_threads_spills_and_more_warps_take_the_spills_away() -> None:
    # What the lesson says: at 4 warps the registers grow with the tile until, at 256
    # float32 values per thread, ptxas uses all 255 and spills; 16 warps hold the same
    # tile without spilling and keep more warps resident on the SM.
    small, crowded, spread = softmax(1024, 4), softmax(32768, 4), softmax(32768, 16)
    assert crowded.registers == profiling.MAX_REGISTERS_PER_THREAD > small.registers
    assert crowded.spills and crowded.spill_stores > 0 and crowded.spill_loads > 0
    assert not spread.spills and spread.registers < crowded.registers
    assert spread.occupancy().warps > crowded.occupancy().warps


def test_ptxas_reports_of_cuda_12_and_13_are_read() -> None:
    assert profiling.read_ptxas_report(CUDA_12_REPORT, "k") == (255, 392, 396)
    assert profiling.read_ptxas_report(CUDA_13_REPORT, "k") == (20, 0, 0)


def test_a_report_without_counts_names_the_kernel() -> None:
    with pytest.raises(RuntimeError, match="no register or spill counts for my_kernel"):
        profiling.read_ptxas_report("ptxas fatal   : Unresolved extern function", "my_kernel")


def test_ptxas_is_the_one_triton_picks_or_else_one_from_the_wheel(monkeypatch) -> None:
    chosen = Path(profiling.find_ptxas())
    assert chosen.is_file() and chosen.name in profiling.BUNDLED_PTXAS
    monkeypatch.setattr(profiling, "_triton_ptxas", lambda: None)
    bundled = Path(profiling.find_ptxas())
    assert bundled.parent == profiling._bundled_folder()
    assert bundled.name == next(
        name for name in profiling.BUNDLED_PTXAS if (bundled.parent / name).is_file()
    )


def test_no_ptxas_is_a_named_error(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(profiling, "_triton_ptxas", lambda: None)
    monkeypatch.setattr(profiling, "_bundled_folder", lambda: tmp_path)
    with pytest.raises(profiling.PtxasNotFoundError, match=f"no ptxas for sm_90a: .*{tmp_path}"):
        profiling.find_ptxas()
    assert issubclass(profiling.PtxasNotFoundError, FileNotFoundError)


# (registers, warps, shared memory) -> (registers per warp, programs by registers,
# programs, limits), worked by hand from CUDA's occupancy rules for an H100: registers
# per warp rounded up to 256; 16,384 per sub-partition, four of them; 64 warps; 32
# programs; 228 KB of shared memory, 1 KB of it reserved per program, in 128-byte units.
HAND_WORKED = [
    # 157 x 32 = 5,024 -> 5,120; 16,384 // 5,120 = 3 warps per quarter, 12 in all:
    # 3 programs of 4 warps. Shared: 16 + 1,024 -> 1,152 bytes, 202 programs.
    ((157, 4, 16), (5120, 3, 3, ("registers",))),
    # 32 x 32 = 1,024: 16 warps per quarter, 64 in all: 8 programs, as many as 64 warps allow.
    ((32, 8, 0), (1024, 8, 8, ("registers", "warps"))),
    # 40 x 32 = 1,280: 12 warps per quarter, 48 in all (not 65,536 // 1,280 = 51): 48
    # one-warp programs by registers, but only 32 program slots.
    ((40, 1, 0), (1280, 48, 32, ("program slots",))),
    # 128 x 32 = 4,096: 4 warps per quarter, 16 in all: 8 programs of 2 warps.
    ((128, 2, 0), (4096, 8, 8, ("registers",))),
    # 100 KB + 1 KB = 103,424 bytes (808 units of 128): 233,472 // 103,424 = 2.
    ((32, 4, 100 * 1024), (1024, 16, 2, ("shared memory",))),
    # The most one program may use: 227 KB + 1 KB = the whole 228 KB, once.
    ((32, 4, 227 * 1024), (1024, 16, 1, ("shared memory",))),
    # One byte more and the program does not launch.
    ((32, 4, 227 * 1024 + 1), (1024, 16, 0, ("shared memory",))),
    # 255 x 32 = 8,160 -> 8,192: 2 warps per quarter, 8 in all: one program of 8 warps...
    ((255, 8, 0), (8192, 1, 1, ("registers",))),
    # ... and a program of 16 such warps would need 131,072 registers: it does not launch.
    ((255, 16, 0), (8192, 0, 0, ("registers",))),
]


@pytest.mark.parametrize(("given", "expected"), HAND_WORKED, ids=str)
def test_occupancy_matches_the_cases_worked_by_hand(given: tuple, expected: tuple) -> None:
    per_warp, by_registers, programs, limits = expected
    fit = occupancy(*given)
    assert fit.registers_per_warp == per_warp
    assert fit.by_registers == by_registers
    assert fit.programs == programs and fit.limits == limits
    assert fit.warps == programs * given[1]
    assert fit.share_of_warps == fit.warps / 64


def test_the_limits_are_named_in_the_language_of_the_run(monkeypatch) -> None:
    # The lesson prints the limits that decide, joined as the English output always was.
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "en")
    assert profiling.describe_limits(("registers",)) == "registers"
    tied = ("registers", "warps", "program slots")
    assert profiling.describe_limits(tied) == "registers and warps and program slots"
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    assert profiling.describe_limits(("registers", "warps")) == "регистры и warp"
    assert profiling.describe_limits(("shared memory",)) == "разделяемая память"


def test_an_allocation_gives_its_own_occupancy() -> None:
    report = Allocation("m:k", num_warps=4, registers=157, spill_stores=0, spill_loads=0,
                        shared_memory=16)  # fmt: skip
    assert report.occupancy() == occupancy(157, 4, 16)
    assert not report.spills
    assert Allocation("m:k", 4, 255, 8, 0, 0).spills


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: occupancy(0, 4), ValueError, "registers is 0; it must be from 1 to 255"),
        (lambda: occupancy(256, 4), ValueError, "registers is 256; .* at most 255"),
        (lambda: occupancy(32.0, 4), TypeError, "registers is 32.0; it must be an integer"),
        (lambda: occupancy(True, 4), TypeError, "registers is True"),
        (lambda: occupancy(32, 3), ValueError, "num_warps is 3; Triton needs a power of two"),
        (lambda: occupancy(32, 64), ValueError, "num_warps is 64; .* at most 1,024 threads"),
        (lambda: occupancy(32, 4, -1), ValueError, "shared_memory is -1; it must be at least 0"),
        (lambda: profiling.softmax_allocation(1000, 4), ValueError,
         "block_size is 1000; a tile's length must be a power of two"),
        (lambda: profiling.softmax_allocation(1024, 6), ValueError, "num_warps is 6"),
        (lambda: profiling.allocation(SOFTMAX_KERNEL, {}, {}, num_warps=0),
         ValueError, "num_warps is 0"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_by_name(call, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()

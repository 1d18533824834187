"""What the compiler allocated for a kernel, and how many of its programs fit on an SM.

Triton compiles a kernel to PTX on any machine (:mod:`kernels.triton_helpers.compiler_output`). The
assembler that ships with Triton, ``ptxas``, turns PTX into one GPU's machine code and,
run with ``-v``, says what it gave each thread: how many 32-bit registers, and how many
bytes it had to *spill* (store to local memory and load back) when the registers ran
out. :func:`allocation` does both for sm_90a (H100 and H200) and adds the shared memory
that Triton asks for per program. :func:`occupancy` turns those numbers into how many
programs one streaming multiprocessor (SM) holds at once, by CUDA's occupancy rules for
compute capability 9.0. The profiling lesson (``docs/lessons/08_profiling.md``) shows
both on the softmax kernel.
"""

import functools
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import triton.language as tl

from ..text.messages import _
from ..triton_helpers.compiler_output import compile_for_gpu

# The target: compute capability 9.0, with the "a" features Triton compiles for.
ARCH = 90
GPU_NAME = "sm_90a"

# One SM of compute capability 9.0 (H100, H200), from NVIDIA's Hopper Tuning Guide
# ("Occupancy"): 64 resident warps, 64K 32-bit registers, at most 255 registers per
# thread, at most 32 resident thread blocks (programs), 228 KB of shared memory of
# which one block may use 227 KB; CUDA reserves 1 KB of shared memory per block.
WARPS_PER_SM = 64
REGISTERS_PER_SM = 65_536
MAX_REGISTERS_PER_THREAD = 255
PROGRAMS_PER_SM = 32
SHARED_MEMORY_PER_SM = 228 * 1024
MAX_SHARED_MEMORY_PER_PROGRAM = 227 * 1024
RESERVED_SHARED_MEMORY = 1024
# How CUDA's occupancy calculator (cuda_occupancy.h) hands these out: registers to each
# warp in units of 256, from one of four sub-partitions that each hold a quarter of the
# register file; shared memory in units of 128 bytes (the header's unit for compute
# capabilities 8.x and 9.x, as CUDA 12.6's copy names them).
REGISTER_UNIT = 256
SUB_PARTITIONS = 4
SHARED_MEMORY_UNIT = 128
WARP_SIZE = 32

# The ptxas binaries a Triton wheel ships, newest first: a newer ptxas also reads the
# PTX that an older one would.
BUNDLED_PTXAS = ("ptxas-blackwell", "ptxas")


class PtxasNotFoundError(FileNotFoundError):
    """No ptxas to run: neither the one Triton picks for sm_90a nor one in its wheel."""


@dataclass(frozen=True)
class Allocation:
    """What ptxas allocated for one thread of ``kernel`` compiled for sm_90a with
    ``num_warps`` warps per program, and the shared memory of one program (bytes)."""

    kernel: str
    num_warps: int
    registers: int
    spill_stores: int
    spill_loads: int
    shared_memory: int

    @property
    def spills(self) -> bool:
        """Whether ptxas ran out of registers and moved values to local memory."""
        return self.spill_stores > 0 or self.spill_loads > 0

    def occupancy(self) -> "Occupancy":
        """How many programs of this kernel one SM holds (:func:`occupancy`)."""
        return occupancy(self.registers, self.num_warps, self.shared_memory)


@dataclass(frozen=True)
class Occupancy:
    """How many programs of ``num_warps`` warps one SM of compute capability 9.0 holds
    at once, by each of its limits; the smallest of them is the answer.
    ``registers_per_warp`` is what a warp is given: its threads' registers rounded up to
    whole units."""

    num_warps: int
    registers_per_warp: int
    by_registers: int
    by_warps: int
    by_shared_memory: int
    by_slots: int

    @property
    def programs(self) -> int:
        """Programs resident on one SM at once."""
        return min(
            self.by_registers, self.by_warps, self.by_shared_memory, self.by_slots
        )

    @property
    def warps(self) -> int:
        """Warps resident on one SM at once."""
        return self.programs * self.num_warps

    @property
    def share_of_warps(self) -> float:
        """Resident warps as a share of the SM's 64 (CUDA's theoretical occupancy)."""
        return self.warps / WARPS_PER_SM

    @property
    def limits(self) -> tuple[str, ...]:
        """The limits that decide :attr:`programs` (several when they tie)."""
        named = {
            "registers": self.by_registers,
            "warps": self.by_warps,
            "shared memory": self.by_shared_memory,
            "program slots": self.by_slots,
        }
        return tuple(name for name, limit in named.items() if limit == self.programs)


def describe_limits(limits: tuple[str, ...]) -> str:
    """:attr:`Occupancy.limits` as the lesson prints them, in the language of this run:
    ``registers``, or ``registers and warps`` when they tie."""
    names = {
        "registers": _("registers"),
        "warps": _("warps"),
        "shared memory": _("shared memory"),
        "program slots": _("program slots"),
    }

    def joined(first: str, second: str) -> str:
        return _("{first} and {second}").format(first=first, second=second)

    return functools.reduce(joined, (names[limit] for limit in limits))


def _count(name: str, value: object, low: int, high: int | None, why: str = "") -> int:
    # Counts are whole numbers (a bool is not one, although Python says it is an int).
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} is {value!r}; it must be an integer")
    if value < low or (high is not None and value > high):
        bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise ValueError(f"{name} is {value}; it must be {bounds}{why}")
    return value


def _warps(num_warps: object) -> int:
    warps = _count(
        "num_warps", num_warps, 1, 32, " (a program has at most 1,024 threads)"
    )
    if warps & (warps - 1):
        raise ValueError(f"num_warps is {warps}; Triton needs a power of two")
    return warps


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(registers: int, num_warps: int, shared_memory: int = 0) -> Occupancy:
    """How many programs an SM of compute capability 9.0 holds at once when each thread
    uses ``registers`` registers, each program has ``num_warps`` warps and asks for
    ``shared_memory`` bytes of shared memory: the rules of CUDA's occupancy calculator
    with the limits in this module. A program that cannot launch at all (too many
    registers for its warps, or too much shared memory) gets 0."""
    registers = _count(
        "registers",
        registers,
        1,
        MAX_REGISTERS_PER_THREAD,
        " (ptxas gives a thread of sm_90a at most 255)",
    )
    num_warps = _warps(num_warps)
    shared_memory = _count("shared_memory", shared_memory, 0, None)
    # Registers: each warp takes whole units from one sub-partition, so a quarter of
    # the file holds a whole number of warps, and the SM four times that.
    per_warp = _round_up(registers * WARP_SIZE, REGISTER_UNIT)
    warps_per_quarter = REGISTERS_PER_SM // SUB_PARTITIONS // per_warp
    by_registers = warps_per_quarter * SUB_PARTITIONS // num_warps
    # The launch itself is refused when the program's warps, counted in whole sets of
    # four (one per sub-partition), would need more than the register file.
    if per_warp * _round_up(num_warps, SUB_PARTITIONS) > REGISTERS_PER_SM:
        by_registers = 0
    # Shared memory: the program's own and the kilobyte CUDA reserves, in whole units.
    per_program = _round_up(shared_memory + RESERVED_SHARED_MEMORY, SHARED_MEMORY_UNIT)
    by_shared_memory = SHARED_MEMORY_PER_SM // per_program
    if shared_memory > MAX_SHARED_MEMORY_PER_PROGRAM:
        by_shared_memory = 0
    return Occupancy(
        num_warps=num_warps,
        registers_per_warp=per_warp,
        by_registers=by_registers,
        by_warps=WARPS_PER_SM // num_warps,
        by_shared_memory=by_shared_memory,
        by_slots=PROGRAMS_PER_SM,
    )


def _triton_ptxas() -> str | None:
    # The ptxas that Triton itself runs for this target: its PTX carries the PTX version
    # that this ptxas reads (an older ptxas refuses newer PTX). Triton 3.6 picks
    # "ptxas" (CUDA 12) for sm_90a, Triton 3.9 "ptxas-blackwell" (CUDA 13).
    try:
        from triton.backends.nvidia.compiler import get_ptxas
    except ImportError:  # a Triton without its NVIDIA backend
        return None
    try:
        return get_ptxas(ARCH).path
    # RuntimeError: Triton found no ptxas that runs; TypeError or AttributeError: a
    # Triton whose get_ptxas takes or returns something else. The wheel's folder is
    # tried next.
    except (RuntimeError, TypeError, AttributeError):
        return None


def _bundled_folder() -> Path:
    # Where the Triton wheel keeps the NVIDIA tools, found without the backend.
    import triton

    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin"


def find_ptxas() -> str:
    """The path of a ptxas that reads the PTX Triton writes for sm_90a: the one Triton's
    own ``get_ptxas`` picks for the target when this Triton has it, otherwise the newest
    of the ptxas binaries in the wheel's ``backends/nvidia/bin`` folder."""
    chosen = _triton_ptxas()
    if chosen:
        return chosen
    folder = _bundled_folder()
    for name in BUNDLED_PTXAS:
        if (folder / name).is_file():
            return str(folder / name)
    raise PtxasNotFoundError(
        f"no ptxas for {GPU_NAME}: Triton's get_ptxas({ARCH}) gave none, and {folder} "
        f"holds none of {', '.join(BUNDLED_PTXAS)}; install a Triton wheel with its "
        "NVIDIA backend (the wheels on PyPI ship ptxas)"
    )


def read_ptxas_report(report: str, kernel: str) -> tuple[int, int, int]:
    """Registers per thread, bytes of spill stores and bytes of spill loads, from what
    ``ptxas -v`` printed for ``kernel`` (named in the error when a count is missing)."""
    registers = re.search(r"Used (\d+) registers", report)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    if registers is None or spills is None:
        raise RuntimeError(
            f"ptxas -v printed no register or spill counts for {kernel}:\n"
            + report[-2000:]
        )
    return int(registers.group(1)), int(spills.group(1)), int(spills.group(2))


def _assemble(ptx: str, kernel: str) -> str:
    # ptxas -v prints its counts while it writes the machine code, which is not kept.
    ptxas = find_ptxas()
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "kernel.ptx"
        source.write_text(ptx, encoding="utf-8")
        command = [
            ptxas,
            "-v",
            f"--gpu-name={GPU_NAME}",
            str(source),
            "-o",
            str(Path(folder) / "kernel.cubin"),
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(
            f"ptxas could not assemble {kernel} for {GPU_NAME}:\n"
            + result.stderr[-3000:]
        )
    return result.stdout + result.stderr


def allocation(
    kernel: str,
    signature: dict[str, str],
    constexprs: dict[str, Any],
    divisible_by_16: tuple[str, ...] = (),
    num_warps: int = 4,
    num_stages: int = 3,
) -> Allocation:
    """What ptxas allocates for ``kernel`` ("module:function") compiled for sm_90a, with
    arguments as :func:`kernels.triton_helpers.compiler_output.compile_for_gpu` takes them.

    The counts are those of ``ptxas -v`` run on Triton's PTX. Triton's own build passes
    ptxas more options (line information; Triton 3.9 also a register-allocation level),
    which can move the spill counts of a kernel that spills by a few bytes."""
    num_warps = _warps(num_warps)
    compiled = compile_for_gpu(
        kernel,
        signature,
        constexprs,
        divisible_by_16,
        arch=ARCH,
        num_warps=num_warps,
        num_stages=num_stages,
        shared_memory=True,
    )
    registers, stores, loads = read_ptxas_report(
        _assemble(compiled["ptx"], kernel), kernel
    )
    return Allocation(
        kernel, num_warps, registers, stores, loads, int(compiled["shared"])
    )


def softmax_allocation(block_size: int, num_warps: int) -> Allocation:
    """:func:`allocation` of the softmax page's one-row kernel (``softmax_kernel``) as
    its launcher compiles it for rows of bfloat16 that fill a tile of ``block_size``
    values (a power of two), with a float32 accumulator."""
    block = _count("block_size", block_size, 1, None)
    if block & (block - 1):
        raise ValueError(
            f"block_size is {block}; a tile's length must be a power of two"
        )
    signature = {
        "x_ptr": "*bf16",
        "out_ptr": "*bf16",
        "n_cols": "i32",
        "ACC": "constexpr",
        "BLOCK_SIZE": "constexpr",
        "EVEN": "constexpr",
    }
    constexprs = {"ACC": tl.float32, "BLOCK_SIZE": block, "EVEN": True}
    aligned = ("x_ptr", "out_ptr", "n_cols")
    return allocation(
        "kernels.operations.softmax:softmax_kernel",
        signature,
        constexprs,
        aligned,
        num_warps=num_warps,
    )

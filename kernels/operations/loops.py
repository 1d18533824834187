"""Loops and reductions: what the loops lesson shows (``docs/lessons/07_loops.md``).

A reduction folds a tile along an axis (``tl.sum``, ``tl.max``); a row longer than a
tile is folded in a loop, with a running total carried from one step to the next. The
row sums here come in three forms that differ only in how the loop's loads are issued:
one after another (:func:`row_sums_kernel`), one step ahead by hand
(:func:`row_sums_prefetch_kernel`), or as many steps ahead as the compiler's pipeliner
is asked for (:func:`row_sums_pipelined_kernel`). The benchmark times the three.
"""

import re

import torch
import triton
import triton.language as tl

from ..declarations.family import (
    Family,
    Launcher,
    tiny_randn,
)
from ..declarations.spec import BenchmarkSpec
from ..triton_helpers.checks import (
    check_no_grad,
    check_no_partial_overlap,
    check_rows,
    check_tensor,
)
from ..triton_helpers.compiler_output import compile_for_gpu
from ..triton_helpers.direct_launch import launch
from ..triton_helpers.launch import row_block

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@triton.jit
def reduce_tile_kernel(
    x_ptr,
    row_sums_ptr,
    column_maxima_ptr,
    n_rows,
    n_cols,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
):
    # One program holds the whole matrix in one 2-D tile and folds it both ways.
    rows = tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_COLS)
    inside = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offsets = rows[:, None] * n_cols + cols[None, :]
    # A masked lane must hold the reduction's identity, the value that changes
    # nothing: 0 for a sum, minus infinity for a maximum.
    x = tl.load(x_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    tl.store(row_sums_ptr + rows, tl.sum(x, axis=1), mask=rows < n_rows)
    x = tl.where(inside, x, -float("inf"))
    tl.store(column_maxima_ptr + cols, tl.max(x, axis=0), mask=cols < n_cols)


@triton.jit
def row_sums_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    # One program per row. Each step loads the next tile of the row and adds it to
    # total, lane by lane; one tl.sum at the end folds the lanes.
    row = tl.program_id(0).to(tl.int64)
    total = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        total += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(total, axis=0))


@triton.jit
def row_sums_prefetch_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    # row_sums_kernel with each load issued one step early: a load does not wait for
    # its data until the data is used, so the next tile travels while this one is
    # added. After the last tile, a tile past the row is asked for and masked off
    # entirely (no memory is read), so that the loop needs no special last step.
    row = tl.program_id(0).to(tl.int64)
    total = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    cols = tl.arange(0, BLOCK_SIZE)
    upcoming = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    for start in range(0, n_cols, BLOCK_SIZE):
        x = upcoming
        cols = start + BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        upcoming = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        total += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(total, axis=0))


@triton.jit
def row_sums_pipelined_kernel(
    x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr, STAGES: tl.constexpr
):
    # row_sums_kernel with tl.range in place of range: the compiler issues the loads
    # of the next STAGES - 1 steps ahead, into buffers in shared memory.
    row = tl.program_id(0).to(tl.int64)
    total = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in tl.range(0, n_cols, BLOCK_SIZE, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        total += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(total, axis=0))


# Values per step: 1024 two-byte values are 16 bytes for each of 4 warps' 128 threads
# (one vector load each), and the loop runs many steps over the benchmark's rows.
BLOCK_SIZE = 1024
# Steps in flight for the pipelined kernel (tl.range's num_stages).
STAGES = 3
KERNELS = {
    "loop": row_sums_kernel,
    "prefetch": row_sums_prefetch_kernel,
    "pipelined": row_sums_pipelined_kernel,
}


# The most values reduce_tile puts in its one program's tile.
MAX_TILE = 4096


def _matrix(x: object, operation: str) -> torch.Tensor:
    # The lesson's launchers take a contiguous float matrix and give no gradient.
    x = check_rows("x", x, SUPPORTED_DTYPES)
    if x.dim() != 2:
        raise ValueError(f"x has shape {tuple(x.shape)}; it must be a matrix")
    check_no_grad("x", x, f"{operation} records no gradient")
    return x


def reduce_tile(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The float32 sum of each row and maximum of each column of the small matrix ``x``,
    by :func:`reduce_tile_kernel` in one program (at most MAX_TILE values in all)."""
    x = _matrix(x, "reduce_tile")
    n_rows, n_cols = x.shape
    block_rows, block_cols = row_block(max(n_rows, 1)), row_block(n_cols)
    if block_rows * block_cols > MAX_TILE:
        raise ValueError(
            f"x has shape {tuple(x.shape)}: one tile of {block_rows} x {block_cols} "
            f"values is too many for one program here (at most {MAX_TILE})"
        )
    row_sums = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    column_maxima = torch.empty(n_cols, dtype=torch.float32, device=x.device)
    if n_rows:
        launch(reduce_tile_kernel, (1,), x, row_sums, column_maxima, n_rows, n_cols,
               BLOCK_ROWS=block_rows, BLOCK_COLS=block_cols)  # fmt: skip
    return row_sums, column_maxima


def row_sums(
    x: torch.Tensor, kernel: str = "pipelined", out: torch.Tensor | None = None
) -> torch.Tensor:
    """The float32 sum of each row of the matrix ``x``, by one of the three loops:
    ``kernel`` is ``"loop"``, ``"prefetch"`` or ``"pipelined"`` (see the module).

    ``x``: a contiguous float16, bfloat16 or float32 matrix on the kernel device. No
    gradient: the lesson's kernels run forward only. ``out``, if given, is a contiguous
    float32 vector of one value per row, and receives the sums."""
    x = _matrix(x, "row_sums")
    if kernel not in KERNELS:
        raise ValueError(
            f"kernel is {kernel!r}; it must be one of {', '.join(KERNELS)}"
        )
    n_rows, n_cols = x.shape
    if out is None:
        out = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    else:
        check_tensor("out", out, (torch.float32,))
        if out.shape != (n_rows,):
            raise ValueError(
                f"out has shape {tuple(out.shape)}; it must hold one value per row of x "
                f"({n_rows},)"
            )
        check_no_partial_overlap(("out", "x"), out, x)
        check_no_grad("out", out, "row_sums with out= records no gradient")
    if n_rows == 0:
        return out
    stages = {"STAGES": STAGES} if kernel == "pipelined" else {}
    launch(KERNELS[kernel], (n_rows,), x, out, n_cols, BLOCK_SIZE=BLOCK_SIZE, **stages)
    # A kernel's store is invisible to autograd: count it as PyTorch counts an in-place
    # write, so that a graph which saved ``out`` refuses to use the new values.
    torch.autograd.graph.increment_version(out)
    return out


def compiled_loads(
    kernel: str, num_stages: int, stages: int = STAGES
) -> dict[str, int]:
    """What the loop of row-sum kernel ``kernel`` (a key of KERNELS) compiles to for an
    H100 or H200 (sm_90), launched on bfloat16 rows with ``num_stages`` (the launch
    option; the pipelined kernel's own tl.range takes ``stages``): how many ``cp.async``
    (an asynchronous copy from memory to shared memory, which a loop can issue steps
    ahead of its use) and ``ld.global`` (a load from memory into registers) its PTX
    holds."""
    signature = {"x_ptr": "*bf16", "out_ptr": "*fp32", "n_cols": "i32"}
    constexprs = {"BLOCK_SIZE": BLOCK_SIZE}
    if kernel == "pipelined":
        constexprs["STAGES"] = stages
    signature |= dict.fromkeys(constexprs, "constexpr")
    ptx = compile_for_gpu(
        f"{__name__}:{KERNELS[kernel].__name__}",
        signature,
        constexprs,
        ("x_ptr", "out_ptr", "n_cols"),
        num_stages=num_stages,
    )["ptx"]
    return {
        "cp.async": len(re.findall(r"\bcp\.async\.c[ag]\.shared\.global", ptx)),
        "ld.global": len(re.findall(r"\bld\.global\b", ptx)),
    }


def torch_row_sums(x: torch.Tensor) -> torch.Tensor:
    """The PyTorch reference: ``x.sum(dim=1)``, accumulated and returned in float32."""
    return x.sum(dim=1, dtype=torch.float32)


# Columns of the benchmark's rows: 64 KB of bfloat16 each, 32 steps of the loop. The
# interpreter, on the CPU, sums shorter rows that no tile divides.
GPU_COLUMNS = 32768
INTERPRETER_COLUMNS = 2500


def make_inputs(
    n_rows: int,
    dtype: torch.dtype,
    device: torch.device,
    generator: torch.Generator,
) -> tuple[torch.Tensor]:
    """A random matrix of ``n_rows`` rows (GPU_COLUMNS columns on a GPU)."""
    columns = GPU_COLUMNS if device.type == "cuda" else INTERPRETER_COLUMNS
    return (
        torch.randn(n_rows, columns, dtype=dtype, device=device, generator=generator),
    )


def bytes_moved(n_rows: int, dtype: torch.dtype) -> int:
    """The fewest bytes one call moves: each value read once, one float32 sum written
    per row."""
    return n_rows * (GPU_COLUMNS * dtype.itemsize + 4)


BENCHMARK = BenchmarkSpec(
    name="row_sums_loops",
    metric="GB/s",
    x_name="rows",
    dtype=torch.bfloat16,
    # From fewer rows than an H100 or H200 has multiprocessors (one program each) to
    # many programs on each.
    gpu_sizes=(32, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
    interpreter_sizes=(1, 3),
    make_inputs=make_inputs,
    triton=row_sums,
    torch_eager=torch_row_sums,
    work=bytes_moved,
    baselines={
        "plain loop": lambda x: row_sums(x, "loop"),
        "prefetch by hand": lambda x: row_sums(x, "prefetch"),
        "PyTorch": torch_row_sums,
    },
    details={"columns": GPU_COLUMNS, "block_size": BLOCK_SIZE, "stages": STAGES},
)


# The lesson's loops: forward only, they refuse inputs that need a gradient.
FAMILY = Family(
    launchers=(
        Launcher(
            row_sums,
            lambda device: tiny_randn((3, 7), dtype=torch.float32, device=device),
            (0,),
            derivatives=0,
        ),
        Launcher(
            reduce_tile,
            lambda device: tiny_randn((3, 7), dtype=torch.float32, device=device),
            (0,),
            derivatives=0,
        ),
    ),
)

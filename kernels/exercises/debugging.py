"""Exercises of lesson 4 (debugging): find the bug in three kernels that look right."""

import torch
import triton

from .model import N_, Case, Exercise, KernelTask, Launch, Layout


def _ramp(n: int) -> torch.Tensor:
    return torch.arange(n, dtype=torch.float64) * 0.5 + 1.0


def _copy_cases() -> tuple[Case, ...]:
    def case(name: str, n: int, block: int) -> Case:
        return Case(
            name, {"x": _ramp(n)}, (n,), params={"BLOCK_SIZE": block}, tile=(block,)
        )

    return (
        case(N_("6 elements in tiles of 4"), 6, 4),
        case(N_("64 elements in tiles of 16: a whole number of tiles"), 64, 16),
        case(N_("one element"), 1, 4),
        case(N_("100 elements in tiles of 32"), 100, 32),
    )


def _launch_copy(kernel: object, launch: Launch) -> None:
    n, block = launch.out.numel(), launch.params["BLOCK_SIZE"]
    kernel[(triton.cdiv(n, block),)](
        launch.inputs["x"], launch.out, n, BLOCK_SIZE=block
    )


OFF_BY_ONE = Exercise(
    id="debugging-off-by-one",
    lesson="debugging",
    kind="find-the-bug",
    title=N_("A copy that looks right"),
    statement=N_(
        "This kernel doubles a vector, and its output looks right. It has a bug that the "
        "output does not show. Find it, the way the lesson does: the checker places the "
        "vectors inside larger buffers and looks at the margins afterwards.\n\n"
        'Check your fix with `check("debugging-off-by-one", double_kernel)`.'
    ),
    starter="""\
@triton.jit
def double_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets <= n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, 2 * x, mask=mask)
""",
    hints=(
        N_("Run the starter through the checker and read where it wrote."),
        N_(
            "The offsets of a vector of `n_elements` elements run from 0 to "
            "`n_elements - 1`. Which lanes does the mask let through?"
        ),
        N_("`<=` lets the lane at offset `n_elements` through: one past the end."),
    ),
    solution="""\
@triton.jit
def double_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, 2 * x, mask=mask)
""",
    explanation=N_(
        "With `<=`, the last program reads one element past the end of `x` and writes one "
        "past the end of `out`. Usually nothing fails: the element after a tensor is often "
        "memory the process owns, holding another tensor's data, which the kernel then "
        "overwrites. On a vector whose length is a whole number of tiles, the extra lane "
        "is the first lane of a program that is never launched, so the bug hides there."
    ),
    entry="double_kernel",
    task=KernelTask(_copy_cases(), _launch_copy, lambda case: 2 * case.value("x")),
    starter_diagnosis="wrote_outside",
)


def _min_cases() -> tuple[Case, ...]:
    def case(name: str, x: torch.Tensor, block: int, **extra: object) -> Case:
        return Case(
            name,
            {"x": x},
            (x.shape[0],),
            layouts={"x": Layout(pad_cols=3)},
            params={"BLOCK_SIZE": block},
            tile=(1,),
            **extra,
        )  # type: ignore[arg-type]

    positive = torch.arange(20, dtype=torch.float64).reshape(4, 5) * 0.25 + 1.5
    mixed = torch.arange(-12, 12, dtype=torch.float64).reshape(3, 8) * 0.5 + 0.25
    return (
        case(N_("3 rows of 8 columns, tiles of 8"), mixed, 8),
        case(
            N_("4 rows of 5 positive numbers, tiles of 8"),
            positive,
            8,
            note=N_(
                "Every value of these rows is positive, and the tile has 3 masked "
                "lanes: they must not take part in the minimum."
            ),
        ),
        case(N_("one row of one value"), torch.tensor([[7.5]], dtype=torch.float64), 1),
    )


def _launch_min(kernel: object, launch: Launch) -> None:
    x = launch.inputs["x"]
    kernel[(x.shape[0],)](
        x, launch.out, x.shape[1], x.stride(0), BLOCK_SIZE=launch.params["BLOCK_SIZE"]
    )


MIN_OTHER = Exercise(
    id="debugging-min-other",
    lesson="debugging",
    kind="find-the-bug",
    title=N_("A minimum that is sometimes 0"),
    statement=N_(
        "This kernel finds the smallest value of each row. On some rows it is right; on "
        "rows of positive numbers shorter than the tile it returns 0, a value that is not "
        "in the row. Find the bug and fix it.\n\n"
        'Check your fix with `check("debugging-min-other", row_min_kernel)`.'
    ),
    starter="""\
@triton.jit
def row_min_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols)
    tl.store(out_ptr + row, tl.min(x, axis=0))
""",
    hints=(
        N_("Where could a 0 come from, in a row with no 0 in it?"),
        N_(
            "A masked load gives the masked lanes the value of `other=`; without it, the "
            "value is undefined, and the interpreter puts 0 there."
        ),
        N_(
            'The neutral value of a minimum is `float("inf")`: '
            '`tl.load(..., mask=cols < n_cols, other=float("inf"))`.'
        ),
    ),
    solution="""\
@triton.jit
def row_min_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=float("inf"))
    tl.store(out_ptr + row, tl.min(x, axis=0))
""",
    explanation=N_(
        "The reduction combines every lane of the tile, the masked ones too. They must "
        "hold a value that cannot change the result: 0 for a sum, `-inf` for a maximum, "
        "`inf` for a minimum. A row that fills the tile exactly has no masked lane, which "
        "is how the bug hides."
    ),
    entry="row_min_kernel",
    task=KernelTask(
        _min_cases(), _launch_min, lambda case: case.value("x").amin(dim=1)
    ),
    starter_diagnosis="wrong_values",
)


def _start_cases() -> tuple[Case, ...]:
    def case(name: str, rows: list[int], stride: int) -> Case:
        values = torch.tensor(rows, dtype=torch.int32)
        return Case(
            name,
            {"rows": values},
            (len(rows),),
            out_dtype=torch.int64,
            params={"row_stride": stride},
            tile=(len(rows),),
        )

    return (
        case(N_("small rows: 0 to 7, stride 1000"), list(range(8)), 1000),
        case(
            N_("rows of 65536 tokens' logits over a vocabulary of 50257"),
            [0, 1, 42730, 42731, 50000, 60000, 65534, 65535],
            50257,
        ),
    )


def _launch_starts(kernel: object, launch: Launch) -> None:
    rows = launch.inputs["rows"]
    kernel[(1,)](rows, launch.out, launch.params["row_stride"], BLOCK_SIZE=rows.numel())


INT32_OVERFLOW = Exercise(
    id="debugging-int32-overflow",
    lesson="debugging",
    kind="find-the-bug",
    title=N_("Where a row starts"),
    statement=N_(
        "A kernel over the logits of 65536 tokens, each a row of 50257 values, computes "
        "where its rows start: `row * row_stride`. This small kernel does just that for a "
        "tile of row numbers (int32, the type of `tl.program_id`) and stores the starts as "
        "int64. It is right for small rows and wrong for some large ones. Find the bug.\n\n"
        'Check your fix with `check("debugging-int32-overflow", row_start_kernel)`.'
    ),
    starter="""\
@triton.jit
def row_start_kernel(rows_ptr, out_ptr, row_stride, BLOCK_SIZE: tl.constexpr):
    idx = tl.arange(0, BLOCK_SIZE)
    rows = tl.load(rows_ptr + idx)
    starts = rows * row_stride
    tl.store(out_ptr + idx, starts.to(tl.int64))
""",
    hints=(
        N_("Compare 42731 * 50257 with 2**31 - 1, the largest int32."),
        N_(
            "An int32 times an int32 is an int32, even when the result is stored as int64 "
            "afterwards: by then it has wrapped around."
        ),
        N_("Widen before multiplying: `rows.to(tl.int64) * row_stride`."),
    ),
    solution="""\
@triton.jit
def row_start_kernel(rows_ptr, out_ptr, row_stride, BLOCK_SIZE: tl.constexpr):
    idx = tl.arange(0, BLOCK_SIZE)
    rows = tl.load(rows_ptr + idx)
    starts = rows.to(tl.int64) * row_stride
    tl.store(out_ptr + idx, starts)
""",
    explanation=N_(
        "42731 * 50257 = 2147531867 is larger than 2**31 - 1 = 2147483647, so in 32 bits "
        "the product wraps around to a negative number; `.to(tl.int64)` afterwards keeps "
        "the wrong value. Converted first, the multiplication is done in 64 bits. A real "
        "kernel would have added the wrapped offset to a pointer and read or written "
        "somewhere else entirely."
    ),
    entry="row_start_kernel",
    task=KernelTask(
        _start_cases(),
        _launch_starts,
        lambda case: case.value("rows") * case.params["row_stride"],
    ),
    starter_diagnosis="overflow",
)

EXERCISES = (OFF_BY_ONE, MIN_OTHER, INT32_OVERFLOW)

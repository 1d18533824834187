"""Exercises of the gallery's softmax page: the row maximum, the padding lanes, and a
kernel made faster by working on a tile instead of one value at a time."""

import torch

from ..operations.softmax import softmax
from .model import N_, Case, Exercise, KernelTask, Launch
from .speed import rows_speed


def _rows(
    rows: int, cols: int, *, offset: float = 0.0, spread: float = 1.0
) -> torch.Tensor:
    # Distinct values with a sign that varies along a row, shifted by offset.
    values = torch.arange(rows * cols, dtype=torch.float64).reshape(rows, cols)
    return ((values * 0.37) % 5.0 - 2.5) * spread + offset


def _cases() -> tuple[Case, ...]:
    def case(name: str, x: torch.Tensor, block: int, **extra: object) -> Case:
        return Case(
            name,
            {"x": x},
            tuple(x.shape),
            params={"BLOCK_SIZE": block},
            tile=(1, block),
            **extra,
        )  # type: ignore[arg-type]

    return (
        case(N_("6 rows of 64 small values, tiles of 64"), _rows(6, 64), 64),
        case(N_("6 rows of 50 small values, tiles of 64"), _rows(6, 50), 64),
        case(
            N_("rows of values from 900 to 1100"),
            _rows(4, 50, offset=1000.0, spread=40.0),
            64,
            note=N_(
                "`exp(1000)` is infinity in float32: the exponent must not be large."
            ),
        ),
        case(
            N_("rows of values from -1100 to -900"),
            _rows(4, 50, offset=-1000.0, spread=40.0),
            64,
            note=N_(
                "`exp(-1000)` is 0 in float32: if every exponent of a row is that small, "
                "the sum is 0 and every output 0 / 0."
            ),
        ),
        case(N_("one row of one value"), _rows(1, 1), 16),
    )


def _launch(kernel: object, launch: Launch) -> None:
    x = launch.inputs["x"]
    kernel[(x.shape[0],)](
        x, launch.out, x.shape[1], BLOCK_SIZE=launch.params["BLOCK_SIZE"]
    )


def _reference(case: Case) -> torch.Tensor:
    return torch.softmax(case.value("x"), dim=1)


TASK = KernelTask(_cases(), _launch, _reference)
SPEED = rows_speed(softmax, lambda x: torch.softmax(x, dim=-1))

ROW_MAX = Exercise(
    id="softmax-row-max",
    lesson="softmax",
    kind="fill-in",
    title=N_("The row maximum"),
    statement=N_(
        "The softmax kernel of this page, one program per row, with the maximum of the row "
        "left out: the placeholder shifts by 0. Mathematically any shift gives the same "
        "softmax; in float32, only a shift by the row's maximum keeps every exponent at "
        "most 0 and at least one of them exactly 0. Write that line.\n\n"
        'Check it with `check("softmax-row-max", softmax_kernel)`: the cases include rows '
        "of values near 1000 and near -1000."
    ),
    starter="""\
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    row_max = 0.0  # TODO: the largest value of the row
    numerator = tl.exp(x - row_max)
    out = numerator / tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * n_cols + cols, out, mask=mask)
""",
    hints=(
        N_(
            "With values near 1000, `exp(x)` is infinity and the output infinity over "
            "infinity, NaN. What shift makes the largest exponent 0?"
        ),
        N_(
            "The padding lanes hold -inf, so a maximum over the whole tile is the maximum "
            "of the row."
        ),
        N_("`row_max = tl.max(x, axis=0)`."),
    ),
    solution="""\
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    row_max = tl.max(x, axis=0)
    numerator = tl.exp(x - row_max)
    out = numerator / tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * n_cols + cols, out, mask=mask)
""",
    explanation=N_(
        "After the shift every exponent is at most 0, so no `exp` overflows, and the "
        "largest is exactly 0, so the sum is at least 1 and never 0. A shift by the "
        "largest absolute value would avoid the overflow too, but the padding lanes make "
        "it infinity, and even without them a row of large negative values would "
        "underflow to 0 everywhere, and the output would be 0 / 0."
    ),
    entry="softmax_kernel",
    task=TASK,
    speed=SPEED,
    starter_diagnosis="not_finite",
)


PADDING = Exercise(
    id="softmax-padding",
    lesson="softmax",
    kind="find-the-bug",
    title=N_("What the padding lanes hold"),
    statement=N_(
        "This softmax kernel is right when a row fills its tile, and wrong on rows of 50 "
        "values in tiles of 64. Find the bug and fix it.\n\n"
        'Check it with `check("softmax-padding", softmax_kernel)`.'
    ),
    starter="""\
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    numerator = tl.exp(x - tl.max(x, axis=0))
    out = numerator / tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * n_cols + cols, out, mask=mask)
""",
    hints=(
        N_(
            "The 14 padding lanes of a tile are not stored, but they take part in the "
            "maximum and in the sum. What does each of them add to the sum?"
        ),
        N_(
            "A padding lane should neither win the maximum nor add anything to the sum: "
            "`exp` of what is 0?"
        ),
        N_('Load the padding lanes as `-inf`: `other=-float("inf")`.'),
    ),
    solution="""\
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    numerator = tl.exp(x - tl.max(x, axis=0))
    out = numerator / tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * n_cols + cols, out, mask=mask)
""",
    explanation=N_(
        "With `other=0.0` each padding lane adds `exp(0 - max)` to the sum, and on a row "
        "of negative values 0 also becomes the maximum. A padding lane of `-inf` adds "
        "`exp(-inf) = 0` and never wins the maximum. Zeroing the lanes after `exp` fixes "
        "the sum but not the maximum: a row of values near -1000 then underflows to 0 / 0."
    ),
    entry="softmax_kernel",
    task=TASK,
    speed=SPEED,
    starter_diagnosis="wrong_values",
)


FASTER = Exercise(
    id="softmax-faster",
    lesson="softmax",
    kind="faster",
    title=N_("One value at a time"),
    statement=N_(
        "This softmax kernel is right on every case, and slow: it walks its row one value "
        "at a time, three times (for the maximum, for the sum, for the output). Rewrite "
        "it to work on the whole row as one tile of `BLOCK_SIZE` values: the checker "
        "launches one program per row, with `BLOCK_SIZE` a power of two at least the "
        "row's length.\n\n"
        'Check it with `check("softmax-faster", softmax_kernel)`.'
    ),
    starter="""\
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    start = x_ptr + row * n_cols
    row_max = tl.load(start)
    for i in range(1, n_cols):
        row_max = tl.maximum(row_max, tl.load(start + i))
    total = tl.exp(tl.load(start) - row_max)
    for i in range(1, n_cols):
        total += tl.exp(tl.load(start + i) - row_max)
    for i in range(n_cols):
        tl.store(
            out_ptr + row * n_cols + i, tl.exp(tl.load(start + i) - row_max) / total
        )
""",
    hints=(
        N_(
            "Each `tl.load` of one value is a trip to memory that the next one waits for, "
            "and the row is read three times. A tile's load asks for all its values at "
            "once, spread over the program's threads."
        ),
        N_(
            "`cols = tl.arange(0, BLOCK_SIZE)` are the tile's columns: load the row under "
            "the mask `cols < n_cols`, with the padding lanes at `-inf`, then reduce it "
            "with `tl.max` and `tl.sum`."
        ),
        N_(
            "The answer is the kernel of the exercise \u201cThe row maximum\u201d with its "
            "missing line written."
        ),
    ),
    solution=ROW_MAX.solution,
    explanation=N_(
        "Still one program per row, but its threads load the row together, several values "
        "each in 16-byte vectors, once, and the maximum and the sum are reductions across "
        "the threads. The slow kernel's threads all ran the same scalar loop: every value "
        "was a separate request, waited for before the next was made."
    ),
    entry="softmax_kernel",
    task=TASK,
    speed=SPEED,
    speed_goal=0.8,
    starter_diagnosis="too_slow",
)

EXERCISES = (ROW_MAX, PADDING, FASTER)

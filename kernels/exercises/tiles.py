"""Exercises of lesson 3 (tiles in two dimensions): row sums, 2-D tiles, a row max."""

import torch
import triton

from ..figures.tile_map import map_tiles
from .model import N_, AnswerTask, Case, Exercise, KernelTask, Launch, Layout


def _matrix(rows: int, cols: int, *, negative: bool = False) -> torch.Tensor:
    # Distinct values with a sign that varies along a row; all negative on request.
    values = torch.arange(rows * cols, dtype=torch.float64).reshape(rows, cols)
    values = (values % 7 - 3.25) * 0.5 + values * 0.001
    return -values.abs() - 0.25 if negative else values


def _with_infinity(rows: int, cols: int) -> torch.Tensor:
    values = _matrix(rows, cols)
    values[0, 1] = float("inf")
    values[rows - 1, 0] = -float("inf")
    return values


def _row_cases(*, negative_rows: bool) -> tuple[Case, ...]:
    def case(
        name: str, x: torch.Tensor, block: int, pad: int = 0, **extra: object
    ) -> Case:
        return Case(
            name,
            {"x": x},
            (x.shape[0],),
            layouts={"x": Layout(pad_cols=pad)},
            params={"BLOCK_SIZE": block},
            tile=(1,),
            **extra,
        )  # type: ignore[arg-type]

    cases = [
        case(N_("6 rows of 50 columns, tiles of 64"), _matrix(6, 50), 64),
        case(
            N_("5 rows of 50 columns inside a matrix 64 columns wide (row stride 64)"),
            _matrix(5, 50),
            64,
            pad=14,
        ),
        case(N_("one row of one column"), _matrix(1, 1), 1),
        case(N_("infinities in the rows"), _with_infinity(4, 9), 16),
    ]
    if negative_rows:
        cases.insert(
            1,
            case(
                N_("rows of negative numbers, 50 columns, tiles of 64"),
                _matrix(4, 50, negative=True),
                64,
                note=N_(
                    "Every value of these rows is negative, and the masked "
                    "lanes of a tile must not take part in the maximum."
                ),
            ),
        )
    return tuple(cases)


def _launch_rows(kernel: object, launch: Launch) -> None:
    x = launch.inputs["x"]
    n_rows, n_cols = x.shape
    kernel[(n_rows,)](
        x, launch.out, n_cols, x.stride(0), BLOCK_SIZE=launch.params["BLOCK_SIZE"]
    )


ROW_SUM = Exercise(
    id="tiles-row-sum",
    lesson="tiles",
    kind="plan",
    title=N_("A masked row sum"),
    statement=N_(
        "Write `row_sum_kernel`: program `row` adds up the `n_cols` values of row `row` of "
        "`x` and stores the sum at `out_ptr + row`. Row `row` starts `row * row_stride` "
        "elements after the start of `x` (the stride can be larger than `n_cols`, as in a "
        "slice of a wider matrix), and a row fits in one tile of `BLOCK_SIZE` lanes, a "
        "power of two that can be larger than `n_cols`.\n\n"
        'Check it with `check("tiles-row-sum", row_sum_kernel)`.'
    ),
    starter="""\
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    # 1. row: this program's row, from tl.program_id
    # 2. cols: the lanes of the tile, and a mask for those inside the row
    # 3. load the row from x_ptr + row * row_stride + cols, with 0 in masked lanes
    # 4. store tl.sum(..., axis=0) at out_ptr + row
    pass
""",
    hints=(
        N_(
            "One program per row: `row = tl.program_id(axis=0)`, and the tile's lanes are "
            "`tl.arange(0, BLOCK_SIZE)`."
        ),
        N_(
            "`other=0.0` gives masked lanes the value 0, which adds nothing to the sum."
        ),
        N_(
            "`x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=0.0)`, "
            "then `tl.store(out_ptr + row, tl.sum(x, axis=0))`."
        ),
    ),
    solution="""\
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))
""",
    explanation=N_(
        "The stride says where a row starts; the mask says which lanes of the tile are in "
        "the row; `other=0.0` makes the masked lanes harmless to the sum. With "
        "`row * n_cols` instead of `row * row_stride`, only a contiguous matrix would work."
    ),
    entry="row_sum_kernel",
    task=KernelTask(
        _row_cases(negative_rows=False),
        _launch_rows,
        lambda case: case.value("x").sum(dim=1),
    ),
    starter_diagnosis="not_written",
)


def _relu_cases() -> tuple[Case, ...]:
    out_guard = {"out": Layout(pad_cols=5)}

    def case(
        name: str, values: torch.Tensor, tile: tuple[int, int], x: Layout | None = None
    ) -> Case:
        layouts = {**out_guard, "x": x} if x else out_guard
        return Case(
            name,
            {"x": values},
            tuple(values.shape),
            layouts=layouts,
            params={"BLOCK_ROWS": tile[0], "BLOCK_COLS": tile[1]},
            tile=tile,
        )

    return (
        case(
            N_("50 x 70 in tiles of 16 x 32: partial tiles on both edges"),
            _matrix(50, 70),
            (16, 32),
        ),
        case(N_("one element, in a tile of 16 x 32"), _matrix(1, 1), (16, 32)),
        case(
            N_("x stored column by column (a transposed view), 20 x 30"),
            _matrix(20, 30),
            (8, 16),
            x=Layout(transposed=True),
        ),
        case(N_("infinities, 5 x 9"), _with_infinity(5, 9), (4, 4)),
    )


def _launch_relu(kernel: object, launch: Launch) -> None:
    x, out, params = launch.inputs["x"], launch.out, launch.params
    n_rows, n_cols = x.shape
    grid = (
        triton.cdiv(n_rows, params["BLOCK_ROWS"]),
        triton.cdiv(n_cols, params["BLOCK_COLS"]),
    )
    kernel[grid](
        x,
        out,
        n_rows,
        n_cols,
        x.stride(0),
        x.stride(1),
        out.stride(0),
        out.stride(1),
        BLOCK_ROWS=params["BLOCK_ROWS"],
        BLOCK_COLS=params["BLOCK_COLS"],
    )


RELU_2D = Exercise(
    id="tiles-relu-2d",
    lesson="tiles",
    kind="plan",
    title=N_("ReLU of a matrix, by 2-D tiles"),
    statement=N_(
        "Write `relu_2d_kernel`: on a 2-D grid, program `(pid_m, pid_n)` computes "
        "`max(x, 0)` for its tile of `BLOCK_ROWS x BLOCK_COLS` elements and stores it in "
        "`out`. Both matrices come with their strides (element `(r, c)` of `x` is at "
        "`r * x_row_stride + c * x_col_stride`), and the tiles at the bottom and right "
        "edges are partial.\n\n"
        'Check it with `check("tiles-relu-2d", relu_2d_kernel)`.'
    ),
    starter="""\
@triton.jit
def relu_2d_kernel(x_ptr, out_ptr, n_rows, n_cols,
                   x_row_stride, x_col_stride, out_row_stride, out_col_stride,
                   BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    # 1. rows and cols: the indices of this tile, from tl.program_id(0) and (1)
    # 2. a 2-D mask: rows[:, None] < n_rows and cols[None, :] < n_cols
    # 3. load x at rows[:, None] * x_row_stride + cols[None, :] * x_col_stride
    # 4. store tl.maximum(x, 0.0) at the same place in out, with out's strides
    pass
""",
    hints=(
        N_(
            "`rows = pid_m * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)`, and the same for the "
            "columns with `pid_n`."
        ),
        N_(
            "`[:, None]` makes the rows a column and `[None, :]` the columns a row; added or "
            "combined with `&`, they broadcast to the whole tile."
        ),
        N_(
            "`mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)`; each matrix gets "
            "its own offsets, built from its own strides."
        ),
    ),
    solution="""\
@triton.jit
def relu_2d_kernel(x_ptr, out_ptr, n_rows, n_cols,
                   x_row_stride, x_col_stride, out_row_stride, out_col_stride,
                   BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.program_id(1) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :] * x_col_stride,
                mask=mask)
    out = tl.maximum(x, 0.0)
    tl.store(out_ptr + rows[:, None] * out_row_stride + cols[None, :] * out_col_stride,
             out, mask=mask)
""",
    explanation=N_(
        "The mask needs both tests: a tile on the right edge runs past the last column, "
        "one at the bottom past the last row. The strides make the same kernel work on a "
        "transposed view, and on an output whose rows are longer in memory than the "
        "matrix is wide, as the checker's is."
    ),
    entry="relu_2d_kernel",
    task=KernelTask(
        _relu_cases(), _launch_relu, lambda case: case.value("x").clamp_min(0.0)
    ),
    starter_diagnosis="not_written",
)


ROW_MAX = Exercise(
    id="tiles-row-max",
    lesson="tiles",
    kind="fill-in",
    title=N_("The row max"),
    statement=N_(
        "`row_max_kernel` finds the largest value of each row, one program per row, as the "
        "first step of a softmax does. The load is written; the maximum is missing. Fill "
        "it in, and make sure that the masked lanes of the tile cannot win.\n\n"
        'Check it with `check("tiles-row-max", row_max_kernel)`.'
    ),
    starter="""\
@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols)
    row_max = 0.0  # TODO: the largest value of the row
    tl.store(out_ptr + row, row_max)
""",
    hints=(
        N_("A reduction such as `tl.max(x, axis=0)` turns a tile into one value."),
        N_(
            "Masked lanes take the value of the load's `other=`; for a maximum it must be a "
            "value that never wins."
        ),
        N_('Load with `other=-float("inf")`, then `row_max = tl.max(x, axis=0)`.'),
    ),
    solution="""\
@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(
        x_ptr + row * row_stride + cols, mask=cols < n_cols, other=-float("inf")
    )
    row_max = tl.max(x, axis=0)
    tl.store(out_ptr + row, row_max)
""",
    explanation=N_(
        "Without `other`, a masked lane's value is undefined (the interpreter puts 0 "
        "there), and a 0 beats every value of a row of negative numbers. `-inf` is the "
        "neutral value of a maximum: it never wins against a value of the row."
    ),
    entry="row_max_kernel",
    task=KernelTask(
        _row_cases(negative_rows=True),
        _launch_rows,
        lambda case: case.value("x").amax(dim=1),
    ),
    starter_diagnosis="wrong_values",
)


def _tile_of_last_element() -> tuple[int, int]:
    ids = map_tiles(50, 70, 16, 32).ids
    return int(ids.max()) + 1, int(ids[49, 69])


PREDICT_TILE = Exercise(
    id="tiles-predict-tile",
    lesson="tiles",
    kind="predict",
    title=N_("Which program writes the corner?"),
    statement=N_(
        "The lesson's `tiles_kernel` covers a 50 x 70 matrix with tiles of 16 x 32 on the "
        "grid `(triton.cdiv(50, 16), triton.cdiv(70, 32))`, and numbers its programs row by "
        "row of the grid: `pid = pid_m * tl.num_programs(1) + pid_n`. Predict: how many "
        "programs does the grid launch, and which number has the program that writes "
        "the last element, `(49, 69)`?\n\n"
        'Check your answer with `check("tiles-predict-tile", answer)`: the checker runs '
        "the kernel and reads its tile map."
    ),
    starter="answer = (..., ...)  # (programs, the number of the program that writes (49, 69))\n",
    hints=(
        N_(
            "The grid has `triton.cdiv(50, 16)` rows of `triton.cdiv(70, 32)` programs."
        ),
        N_(
            "Element `(49, 69)` is in the last row of tiles and the last column of tiles; "
            "number the programs row by row from 0."
        ),
    ),
    solution="answer = (12, 11)\n",
    explanation=N_(
        "The grid is 4 x 3: 12 programs. Row 49 is in row 3 of tiles (rows 48 to 63) and "
        "column 69 in column 2 (columns 64 to 95), so the program is 3 * 3 + 2 = 11, the "
        "last one; of its tile only 2 rows and 6 columns are inside the matrix."
    ),
    entry="answer",
    task=AnswerTask(_tile_of_last_element),
    starter_diagnosis="no_answer",
)

EXERCISES = (ROW_SUM, RELU_2D, ROW_MAX, PREDICT_TILE)

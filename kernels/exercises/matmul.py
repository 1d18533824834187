"""Exercises of the gallery's matmul page: the mask of the K loop, and the grouped order
of the tiles."""

import torch
import triton

from ..operations.matmul import tile_order
from .model import N_, AnswerTask, Case, Exercise, KernelTask, Launch, Layout

BLOCK = 16


def _matrix(rows: int, cols: int, start: int = 0) -> torch.Tensor:
    # Multiples of 1/4 between -2 and 2: every product and sum is exact in float32.
    values = torch.arange(start, start + rows * cols, dtype=torch.float64).reshape(
        rows, cols
    )
    return (values * 7 % 17 - 8) * 0.25


def _cases() -> tuple[Case, ...]:
    def case(name: str, m: int, n: int, k: int, **extra: object) -> Case:
        inputs = {"a": _matrix(m, k), "b": _matrix(k, n, start=5)}
        return Case(name, inputs, (m, n), tile=(BLOCK, BLOCK), **extra)  # type: ignore[arg-type]

    return (
        case(N_("20 x 16 times 16 x 24: K is one whole tile"), 20, 24, 16),
        case(
            N_("20 x 40 times 40 x 24: the last step along K is partial"),
            20,
            24,
            40,
            note=N_("K = 40 is two whole tiles of 16 and a partial one of 8."),
        ),
        case(N_("K = 5, less than one tile"), 17, 18, 5),
        case(
            N_("A stored column by column (a transposed view), 16 x 20 times 20 x 16"),
            16,
            16,
            20,
            layouts={"a": Layout(transposed=True)},
        ),
    )


def _launch(kernel: object, launch: Launch) -> None:
    a, b, c = launch.inputs["a"], launch.inputs["b"], launch.out
    (m, k), n = a.shape, b.shape[1]
    grid = (triton.cdiv(m, BLOCK), triton.cdiv(n, BLOCK))
    kernel[grid](
        a,
        b,
        c,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=BLOCK,
        BLOCK_N=BLOCK,
        BLOCK_K=BLOCK,
    )


_KERNEL = """\
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                  stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K  # values of K still to come, from this step on
        {a_line}
        {b_line}
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
"""

K_MASK = Exercise(
    id="matmul-k-mask",
    lesson="matmul",
    kind="fill-in",
    title=N_("The mask of the K loop"),
    statement=N_(
        "A tiled matrix product, one program per 16 x 16 tile of `C`: the loop walks "
        "along K in steps of `BLOCK_K`, loading a tile of `A` and one of `B` each step. "
        "The loads mask the rows of `A` past M and the columns of `B` past N, but not yet "
        "the values past K, where the last step runs over the edge when K is not a "
        "multiple of `BLOCK_K`. Complete the two masks.\n\n"
        'Check it with `check("matmul-k-mask", matmul_kernel)`: the checker launches a grid '
        "of `(triton.cdiv(M, 16), triton.cdiv(N, 16))` programs with tiles of 16."
    ),
    starter=_KERNEL.format(
        a_line="a = tl.load(a_ptrs, mask=rows[:, None] < M, other=0.0)  # TODO: past K too",
        b_line="b = tl.load(b_ptrs, mask=cols[None, :] < N, other=0.0)  # TODO: past K too",
    ),
    hints=(
        N_(
            "The columns of the `A` tile are `ks`, and the rows of the `B` tile are `ks` "
            "too; this step covers the values `k * BLOCK_K + ks` of K."
        ),
        N_(
            "A lane of this step is inside K when `ks < k_left`. Padding with 0 adds "
            "nothing to the dot product."
        ),
        N_(
            "`mask=(rows[:, None] < M) & (ks[None, :] < k_left)` for `a`, and "
            "`mask=(ks[:, None] < k_left) & (cols[None, :] < N)` for `b`."
        ),
    ),
    solution=_KERNEL.format(
        # Each load on three lines, to fit the page's 88 columns inside the loop.
        a_line="a = tl.load(\n"
        "            a_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < k_left), other=0.0\n"
        "        )",
        b_line="b = tl.load(\n"
        "            b_ptrs, mask=(ks[:, None] < k_left) & (cols[None, :] < N), other=0.0\n"
        "        )",
    ),
    explanation=N_(
        "Past K, a row of `A` runs into the next row, and `B` past its last row runs out "
        "of the tensor: the products would add values that are not in the matrices. The "
        "mask compares with what is left of K from this step, `K - k * BLOCK_K`; "
        "`ks < K` lets the last step's padding through whenever K is more than one tile. "
        "The page's kernel "
        "needs no row and column masks on its loads: it wraps them around with `% M` and "
        "`% N` and masks only the store."
    ),
    entry="matmul_kernel",
    task=KernelTask(_cases(), _launch, lambda case: case.value("a") @ case.value("b")),
    starter_diagnosis="read_outside",
)


def _order() -> tuple[int, int]:
    order = tile_order(4, 4, 2).cpu()
    return int(order[0, 1]), int(order[2, 0])


PREDICT_ORDER = Exercise(
    id="matmul-predict-order",
    lesson="matmul",
    kind="predict",
    title=N_("Which program computes which tile?"),
    statement=N_(
        "`C` is split into 4 x 4 tiles, and the programs take them in the page's grouped "
        "order with `GROUP_M = 2`: program after program down a group of two tile rows, "
        "column by column, then on to the next group. Predict the number of the program "
        "that computes tile (0, 1), in row 0 and column 1, and of the one that computes "
        "tile (2, 0).\n\n"
        'Write both in `answer` and check them with `check("matmul-predict-order", answer)`: '
        "the checker runs `grouped_tile` through `tile_order(4, 4, 2)`."
    ),
    starter="answer = (..., ...)  # programs of tiles (0, 1) and (2, 0)\n",
    hints=(
        N_(
            "Programs 0 and 1 take tiles (0, 0) and (1, 0): down the first column of the "
            "first group."
        ),
        N_("The first group has 2 rows of 4 tiles: programs 0 to 7."),
    ),
    solution="answer = (2, 8)\n",
    explanation=N_(
        "Down the column first: program 2 is the first of the group's second column, "
        "tile (0, 1). The first group ends with program 7 at tile (1, 3), so program 8 "
        "starts the second group at tile (2, 0). In row-major order tile (0, 1) would be "
        "program 1: consecutive programs would share a tile of `A` but need new tiles of "
        "`B` every time."
    ),
    entry="answer",
    task=AnswerTask(_order),
    starter_diagnosis="no_answer",
)

EXERCISES = (K_MASK, PREDICT_ORDER)

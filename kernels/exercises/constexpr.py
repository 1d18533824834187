"""Exercises of lesson 2 (compile-time constants): a constexpr flag, a tile size."""

import torch
import triton
import triton.language as tl

from .model import N_, Case, Exercise, KernelTask, Launch, LauncherTask


def _values(n: int) -> torch.Tensor:
    # Negative and positive values, none zero, with both infinities among them.
    values = torch.arange(n, dtype=torch.float64) * 0.75 - n * 0.3
    values[values == 0] = 0.5
    if n > 8:
        values[[3, 7]] = torch.tensor(
            [float("inf"), -float("inf")], dtype=torch.float64
        )
    return values


def _scale_cases() -> tuple[Case, ...]:
    def case(name: str, n: int, relu: bool, **extra: object) -> Case:
        params = {"BLOCK_SIZE": 128, "RELU": relu, "scale": 2.5}
        return Case(name, {"x": _values(n)}, (n,), params=params, tile=(128,), **extra)  # type: ignore[arg-type]

    return (
        case(N_("RELU=False, 300 elements"), 300, False),
        case(
            N_("RELU=True, 300 elements with both infinities"),
            300,
            True,
            note=N_("With RELU=True, every negative result must become 0."),
        ),
        case(N_("RELU=True, one element"), 1, True),
        case(N_("RELU=False, float16"), 200, False, dtype=torch.float16),
    )


def _launch_scale(kernel: object, launch: Launch) -> None:
    out, params = launch.out, launch.params
    grid = (triton.cdiv(out.numel(), params["BLOCK_SIZE"]),)
    kernel[grid](
        launch.inputs["x"],
        out,
        out.numel(),
        params["scale"],
        BLOCK_SIZE=params["BLOCK_SIZE"],
        RELU=params["RELU"],
    )


def _scale_reference(case: Case) -> torch.Tensor:
    out = case.value("x") * case.params["scale"]
    return out.clamp_min(0.0) if case.params["RELU"] else out


RELU_FLAG = Exercise(
    id="constexpr-relu-flag",
    lesson="constexpr",
    kind="plan",
    title=N_("One source, two kernels"),
    statement=N_(
        "Write `scale_kernel`: it multiplies `x` by `scale`, and when its constexpr flag "
        "`RELU` is true it also replaces every negative result by 0 (a ReLU). Because "
        "`RELU` is a `tl.constexpr`, the branch is decided when compiling: the kernel "
        "compiled with `RELU=False` has no trace of the ReLU.\n\n"
        'Check it with `check("constexpr-relu-flag", scale_kernel)`.'
    ),
    starter="""\
@triton.jit
def scale_kernel(x_ptr, out_ptr, n_elements, scale,
                 BLOCK_SIZE: tl.constexpr, RELU: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    out = tl.load(x_ptr + offsets, mask=mask) * scale
    # TODO: if RELU, replace the negative values of out by 0
    tl.store(out_ptr + offsets, out, mask=mask)
""",
    hints=(
        N_("An `if` on a constexpr is an ordinary Python `if` in the kernel's source."),
        N_(
            "`tl.maximum(a, b)` takes the larger of two tiles, or of a tile and a number, "
            "lane by lane."
        ),
        N_("`if RELU:` then `out = tl.maximum(out, 0.0)`."),
    ),
    solution="""\
@triton.jit
def scale_kernel(x_ptr, out_ptr, n_elements, scale,
                 BLOCK_SIZE: tl.constexpr, RELU: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    out = tl.load(x_ptr + offsets, mask=mask) * scale
    if RELU:
        out = tl.maximum(out, 0.0)
    tl.store(out_ptr + offsets, out, mask=mask)
""",
    explanation=N_(
        "Triton compiles one kernel for `RELU=False` and another for `RELU=True`; in each, "
        "the `if` is already decided, so neither pays for a branch at run time. The same "
        "mechanism lets one source hold several variants of a kernel."
    ),
    entry="scale_kernel",
    task=KernelTask(_scale_cases(), _launch_scale, _scale_reference),
    starter_diagnosis="wrong_values",
)


@triton.jit
def scale_rows_kernel(x_ptr, out_ptr, n_cols, scale, BLOCK_SIZE: tl.constexpr):
    # One program per row of a contiguous matrix; a row must fit in one tile.
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x * scale, mask=mask)


def _rows_cases() -> tuple[Case, ...]:
    def case(name: str, rows: int, cols: int, **extra: object) -> Case:
        return Case(
            name,
            {"x": _values(rows * cols).reshape(rows, cols)},
            (rows, cols),
            params={"scale": 2.5},
            **extra,
        )  # type: ignore[arg-type]

    return (
        case(N_("4 rows of 64 columns"), 4, 64),
        case(N_("5 rows of 50 columns"), 5, 50),
        case(N_("3 rows of 100 columns"), 3, 100),
        case(N_("one row of one column"), 1, 1),
        case(N_("float16, 2 rows of 300 columns"), 2, 300, dtype=torch.float16),
    )


def _call_rows(
    launcher: object, inputs: dict[str, torch.Tensor], params: object
) -> object:
    return launcher(inputs["x"], params["scale"])  # type: ignore[index, operator]


def _rows_reference(case: Case) -> torch.Tensor:
    return case.value("x") * case.params["scale"]


BLOCK_SIZE_FOR_ROWS = Exercise(
    id="constexpr-block-size",
    lesson="constexpr",
    kind="fill-in",
    title=N_("A tile size for any row"),
    statement=N_(
        "`scale_rows_kernel` (shown in the starter's comment) multiplies a matrix by a "
        "number, one program per row, each row in one tile of `BLOCK_SIZE` lanes. Its "
        "launcher must choose `BLOCK_SIZE`, a constexpr, for rows of any length: a tile's "
        "length must be a power of two, and the tile must cover the whole row.\n\n"
        "Complete the launcher and check it with "
        '`check("constexpr-block-size", scale_rows)`.'
    ),
    starter="""\
# @triton.jit
# def scale_rows_kernel(x_ptr, out_ptr, n_cols, scale, BLOCK_SIZE: tl.constexpr):
#     row = tl.program_id(axis=0)
#     cols = tl.arange(0, BLOCK_SIZE)
#     mask = cols < n_cols
#     x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
#     tl.store(out_ptr + row * n_cols + cols, x * scale, mask=mask)

def scale_rows(x, scale):
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    BLOCK_SIZE = n_cols  # TODO: a power of two, at least n_cols
    scale_rows_kernel[(n_rows,)](x, out, n_cols, scale, BLOCK_SIZE=BLOCK_SIZE)
    return out
""",
    hints=(
        N_("Rows of 64 columns work; rows of 50 do not. What is special about 64?"),
        N_(
            "Round the row's length up to a power of two: the mask switches the extra lanes off."
        ),
        N_("`BLOCK_SIZE = triton.next_power_of_2(n_cols)`."),
    ),
    solution="""\
def scale_rows(x, scale):
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    scale_rows_kernel[(n_rows,)](x, out, n_cols, scale, BLOCK_SIZE=BLOCK_SIZE)
    return out
""",
    explanation=N_(
        "`tl.arange(0, BLOCK_SIZE)` is a shape, and Triton's shapes are powers of two. "
        "`triton.next_power_of_2` rounds up (50 to 64, 100 to 128, 1 stays 1), and each "
        "new value compiles a new kernel: rows of similar length share one."
    ),
    entry="scale_rows",
    task=LauncherTask(_rows_cases(), _call_rows, _rows_reference),
    starter_diagnosis="error",
    names={"scale_rows_kernel": scale_rows_kernel},
)

EXERCISES = (RELU_FLAG, BLOCK_SIZE_FOR_ROWS)

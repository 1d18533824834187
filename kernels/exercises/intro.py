"""Exercises of lesson 1 (the tile model): the mask, strides, the launcher, the grid."""

import torch
import triton

from ..figures.tile_map import UNTOUCHED, map_blocks
from ..operations.vector_add import add, add_kernel
from .model import (
    N_,
    AnswerTask,
    Case,
    Exercise,
    KernelTask,
    Launch,
    LauncherTask,
    Layout,
    Speed,
)

# The timed case of the additions: two vectors of 64 MiB each, far more than the L2 holds.
TIMED_ELEMENTS = 2**24


def _timed_vectors(device: torch.device) -> dict[str, torch.Tensor]:
    generator = torch.Generator(device=device).manual_seed(0)
    return {
        name: torch.randn(TIMED_ELEMENTS, device=device, generator=generator)
        for name in "xy"
    }


ADD_SPEED = Speed(
    name=N_("two vectors of 2**24 float32 values"),
    make_inputs=_timed_vectors,
    out_shape=(TIMED_ELEMENTS,),
    out_dtype=torch.float32,
    course=lambda inputs: add(inputs["x"], inputs["y"]),
    pytorch=lambda inputs: inputs["x"] + inputs["y"],
    params={"BLOCK_SIZE": 1024},
)


def _ramp(n: int, start: float = 1.0) -> torch.Tensor:
    # Distinct, exactly representable values: a wrong element never equals a right one.
    return torch.arange(n, dtype=torch.float64) * 0.5 + start


def _special(n: int) -> torch.Tensor:
    values = _ramp(n)
    values[[1, 5, 9]] = torch.tensor(
        [float("nan"), float("inf"), -float("inf")], dtype=torch.float64
    )
    return values


def _add_cases(block: int) -> tuple[Case, ...]:
    def case(name: str, n: int, **extra: object) -> Case:
        inputs = extra.pop("inputs", None) or {"x": _ramp(n), "y": _ramp(n, 100.0)}
        return Case(
            name, inputs, (n,), params={"BLOCK_SIZE": block}, tile=(block,), **extra
        )  # type: ignore[arg-type]

    return (
        case(N_("512 elements, a whole number of tiles"), 512),
        case(N_("1000 elements: the last tile is partial"), 1000),
        case(N_("one element"), 1),
        case(
            N_("NaN and infinities, which x + y keeps"),
            37,
            inputs={"x": _special(37), "y": _ramp(37)},
        ),
        case(N_("float16, 100 elements"), 100, dtype=torch.float16),
    )


def _launch_add(kernel: object, launch: Launch) -> None:
    x, y, out = launch.inputs["x"], launch.inputs["y"], launch.out
    block = launch.params["BLOCK_SIZE"]
    kernel[(triton.cdiv(out.numel(), block),)](x, y, out, out.numel(), BLOCK_SIZE=block)


def _sum_reference(case: Case) -> torch.Tensor:
    return case.value("x") + case.value("y")


ADD_MASK = Exercise(
    id="intro-add-mask",
    lesson="intro",
    kind="fill-in",
    title=N_("The mask of the last tile"),
    statement=N_(
        "The vector addition of this lesson, with its mask left out: the placeholder "
        "`offsets >= 0` lets every lane through. Write the mask, so that the kernel adds "
        "vectors of any length, also one that is not a whole number of tiles.\n\n"
        'Check it with `check("intro-add-mask", add_kernel)`: the checker launches it with '
        "`triton.cdiv(n_elements, BLOCK_SIZE)` programs."
    ),
    starter="""\
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets >= 0  # TODO: true only for the lanes inside the vectors
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
    hints=(
        N_(
            "Only the last program's tile can run past the end. Which of its lanes are "
            "inside the vectors?"
        ),
        N_("A lane is inside when its offset is smaller than the number of elements."),
        N_(
            "`mask = offsets < n_elements`: offsets run from 0, so `<=` would let one lane "
            "too many through."
        ),
    ),
    solution="""\
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
    explanation=N_(
        "The mask is a tile of booleans, one per lane. With 1000 elements in tiles of 256, "
        "the fourth program's lanes 1000 to 1023 are switched off: they are neither read "
        "nor written. Without the mask they would write past the end of `out`, into "
        "memory that belongs to something else."
    ),
    entry="add_kernel",
    task=KernelTask(_add_cases(256), _launch_add, _sum_reference),
    speed=ADD_SPEED,
    starter_diagnosis="wrote_outside",
)


def _strided_cases() -> tuple[Case, ...]:
    def case(name: str, n: int, block: int, x_step: int = 1, y_step: int = 1) -> Case:
        layouts = {"x": Layout(step=x_step), "y": Layout(step=y_step)}
        return Case(
            name,
            {"x": _ramp(n), "y": _ramp(n, 100.0)},
            (n,),
            layouts=layouts,
            params={"BLOCK_SIZE": block},
            tile=(block,),
        )

    return (
        case(N_("contiguous vectors of 300 elements"), 300, 128),
        case(
            N_("x is every other element of a larger tensor (stride 2)"),
            300,
            128,
            x_step=2,
        ),
        case(N_("y is every third element (stride 3), 77 elements"), 77, 32, y_step=3),
        case(N_("one element, strides 2 and 3"), 1, 16, x_step=2, y_step=3),
    )


def _launch_strided(kernel: object, launch: Launch) -> None:
    x, y, out = launch.inputs["x"], launch.inputs["y"], launch.out
    block, n = launch.params["BLOCK_SIZE"], out.numel()
    kernel[(triton.cdiv(n, block),)](
        x, y, out, n, x.stride(0), y.stride(0), BLOCK_SIZE=block
    )


ADD_STRIDE = Exercise(
    id="intro-add-stride",
    lesson="intro",
    kind="plan",
    title=N_("Vector addition with strides"),
    statement=N_(
        "Write a kernel that adds two vectors that need not be contiguous: element `i` of "
        "`x` is `x_stride` elements after element `i - 1` in memory (as for `t[::2]`, whose "
        "stride is 2), and likewise for `y`. The output `out` is contiguous.\n\n"
        "Follow the plan in the starter's comments, then check it with "
        '`check("intro-add-stride", add_strided_kernel)`.'
    ),
    starter="""\
@triton.jit
def add_strided_kernel(x_ptr, y_ptr, out_ptr, n_elements, x_stride, y_stride,
                       BLOCK_SIZE: tl.constexpr):
    # 1. offsets: the indices of this program's tile, as in add_kernel
    # 2. mask: the indices inside the vectors
    # 3. load x at x_ptr + offsets * x_stride, and y with y_stride
    # 4. store x + y at out_ptr + offsets
    pass
""",
    hints=(
        N_(
            "Steps 1, 2 and 4 are those of `add_kernel`; only the addresses of the loads change."
        ),
        N_(
            "Element `i` of `x` is at `x_ptr + i * x_stride`. The offsets are a tile of "
            "indices, so one multiplication gives a tile of addresses."
        ),
        N_(
            "`x = tl.load(x_ptr + offsets * x_stride, mask=mask)`, and the same for `y`; "
            "the store uses `out_ptr + offsets`."
        ),
    ),
    solution="""\
@triton.jit
def add_strided_kernel(x_ptr, y_ptr, out_ptr, n_elements, x_stride, y_stride,
                       BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets * x_stride, mask=mask)
    y = tl.load(y_ptr + offsets * y_stride, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
    explanation=N_(
        "A stride turns an index into a distance in memory. A kernel that takes the "
        "strides works on views such as `t[::2]` without a copy; one that assumes stride "
        "1 reads the elements in between, which the checker fills with NaN."
    ),
    entry="add_strided_kernel",
    task=KernelTask(_strided_cases(), _launch_strided, _sum_reference),
    starter_diagnosis="not_written",
)


def _launcher_cases() -> tuple[Case, ...]:
    return (
        Case(
            N_("1000 float32 elements"),
            {"x": _ramp(1000), "y": _ramp(1000, 100.0)},
            (1000,),
            tile=(256,),
        ),
        Case(
            N_("float16 inputs: the output is float16 too"),
            {"x": _ramp(300), "y": _ramp(300, 100.0)},
            (300,),
            dtype=torch.float16,
            tile=(256,),
        ),
        Case(
            N_("a 7 x 9 matrix: the output has the input's shape"),
            {"x": _ramp(63).reshape(7, 9), "y": _ramp(63, 100.0).reshape(7, 9)},
            (7, 9),
        ),
    )


def _call_add(
    launcher: object, inputs: dict[str, torch.Tensor], params: object
) -> object:
    return launcher(inputs["x"], inputs["y"])  # type: ignore[operator]


ADD_LAUNCHER = Exercise(
    id="intro-add-launcher",
    lesson="intro",
    kind="fill-in",
    title=N_("The launcher"),
    statement=N_(
        "A kernel needs a launcher: a Python function that allocates the output, chooses "
        "the grid and launches. Complete `add(x, y)` for the course's `add_kernel` (in a "
        "clone of the course: "
        "`from kernels.operations.vector_add import add_kernel`), with tiles of 256 elements. "
        "It must work for any number of elements and any shape, and return "
        "a result of the inputs' dtype and shape.\n\n"
        'Check it with `check("intro-add-launcher", add)`.'
    ),
    starter="""\
def add(x, y):
    out = torch.empty(x.shape)  # TODO: the dtype and the device of x, too
    BLOCK_SIZE = 256
    grid = (1,)  # TODO: one program per tile of BLOCK_SIZE elements
    add_kernel[grid](x, y, out, x.numel(), BLOCK_SIZE=BLOCK_SIZE)
    return out
""",
    hints=(
        N_(
            "Count the tiles: 1000 elements in tiles of 256 need more than one program, "
            "and more than 1000 // 256 of them."
        ),
        N_(
            "`triton.cdiv(a, b)` divides and rounds up. `torch.empty_like(x)` allocates a "
            "tensor with the shape, dtype and device of `x`."
        ),
        N_(
            "`out = torch.empty_like(x)` and `grid = (triton.cdiv(x.numel(), BLOCK_SIZE),)`."
        ),
    ),
    solution="""\
def add(x, y):
    out = torch.empty_like(x)
    BLOCK_SIZE = 256
    grid = (triton.cdiv(x.numel(), BLOCK_SIZE),)
    add_kernel[grid](x, y, out, x.numel(), BLOCK_SIZE=BLOCK_SIZE)
    return out
""",
    explanation=N_(
        "The grid must cover every element, so the division rounds up; the last tile's "
        "mask switches off the lanes past the end. `torch.empty_like` gives the output "
        "the input's dtype, shape and device; a contiguous matrix is one long vector to "
        "this kernel."
    ),
    entry="add",
    task=LauncherTask(_launcher_cases(), _call_add, _sum_reference),
    speed=ADD_SPEED,
    starter_diagnosis="not_written",
    names={"add_kernel": add_kernel},
)


def _grid_of_1000() -> tuple[int, int]:
    ids = map_blocks(1000, 256).ids
    return int(ids.max()) + 1, int((ids == UNTOUCHED).sum())


PREDICT_GRID = Exercise(
    id="intro-predict-grid",
    lesson="intro",
    kind="predict",
    title=N_("How many programs?"),
    statement=N_(
        "A launch adds vectors of 1000 elements with `add_kernel` in tiles of 256 "
        "elements, with the grid `(triton.cdiv(1000, 256),)`. Predict, before running "
        "anything: how many programs does the grid launch, and how many lanes of the last "
        "program's tile does the mask switch off?\n\n"
        "Write both numbers in `answer` and check them with "
        '`check("intro-predict-grid", answer)`: the checker runs the launch and counts.'
    ),
    starter="answer = (..., ...)  # (programs, lanes switched off)\n",
    hints=(
        N_("Four tiles of 256 lanes cover 1024 positions."),
        N_(
            "`triton.cdiv(1000, 256)` is 1000 / 256 rounded up; the lanes past element 999 "
            "are switched off."
        ),
    ),
    solution="answer = (4, 24)\n",
    explanation=N_(
        "1000 / 256, rounded up, is 4 programs. Their tiles cover 4 * 256 = 1024 "
        "lanes, so the mask of the fourth switches off the last 1024 - 1000 = 24."
    ),
    entry="answer",
    task=AnswerTask(_grid_of_1000),
    starter_diagnosis="no_answer",
)

EXERCISES = (ADD_MASK, ADD_STRIDE, ADD_LAUNCHER, PREDICT_GRID)

"""Exercises of the gallery's vector addition page: a fused one-pass kernel, bytes moved,
and a launcher made faster."""

import torch
import triton

from ..operations.vector_add import add_kernel, bytes_moved
from .intro import ADD_LAUNCHER, ADD_SPEED
from .model import N_, AnswerTask, Case, Exercise, KernelTask, Launch


def _ramp(n: int, start: float = 1.0) -> torch.Tensor:
    return torch.arange(n, dtype=torch.float64) * 0.5 + start


def _axpy_cases() -> tuple[Case, ...]:
    def case(name: str, n: int, block: int, alpha: float, **extra: object) -> Case:
        return Case(
            name,
            {"x": _ramp(n), "y": _ramp(n, -50.0)},
            (n,),
            params={"alpha": alpha, "BLOCK_SIZE": block},
            tile=(block,),
            **extra,
        )  # type: ignore[arg-type]

    return (
        case(N_("1000 elements in tiles of 256, alpha = 2.5"), 1000, 256, 2.5),
        case(N_("one element, alpha = -1"), 1, 16, -1.0),
        case(
            N_("float16, 100 elements, alpha = 0.5"), 100, 64, 0.5, dtype=torch.float16
        ),
    )


def _launch_axpy(kernel: object, launch: Launch) -> None:
    x, y, out, params = (
        launch.inputs["x"],
        launch.inputs["y"],
        launch.out,
        launch.params,
    )
    n, block = out.numel(), params["BLOCK_SIZE"]
    kernel[(triton.cdiv(n, block),)](x, y, out, n, params["alpha"], BLOCK_SIZE=block)


AXPY = Exercise(
    id="vector-add-axpy",
    lesson="vector_add",
    kind="plan",
    title=N_("A fused multiply-add in one pass"),
    statement=N_(
        "In PyTorch, `alpha * x + y` is two passes over memory: one kernel writes "
        "`alpha * x` to a temporary tensor, a second reads it back and adds `y`. Write "
        "`axpy_kernel`, which computes `alpha * x + y` in one pass, as `add_kernel` on this "
        "page adds: each program handles one tile of `BLOCK_SIZE` elements, and the last "
        "tile may be partial. `alpha` is a plain number.\n\n"
        'Check it with `check("vector-add-axpy", axpy_kernel)`: the checker launches it with '
        "`triton.cdiv(n_elements, BLOCK_SIZE)` programs."
    ),
    starter="""\
@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n_elements, alpha, BLOCK_SIZE: tl.constexpr):
    # 1. offsets: this program's tile of indices; mask: those inside the vectors
    # 2. load x and y under the mask
    # 3. store alpha * x + y at out_ptr + offsets, under the mask
    pass
""",
    hints=(
        N_("Steps 1 and 2 are those of `add_kernel`; only the value stored changes."),
        N_(
            "`offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)` and "
            "`mask = offsets < n_elements`."
        ),
        N_("`tl.store(out_ptr + offsets, alpha * x + y, mask=mask)`."),
    ),
    solution="""\
@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n_elements, alpha, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, alpha * x + y, mask=mask)
""",
    explanation=N_(
        "The multiplication happens in registers, between the loads and the store, so the "
        "kernel moves the same bytes as the addition: two reads and a write per element. "
        "Two PyTorch calls move five: the temporary is written once and read once more. "
        "For a kernel limited by memory, that is the whole difference in time."
    ),
    entry="axpy_kernel",
    task=KernelTask(
        _axpy_cases(),
        _launch_axpy,
        lambda case: case.params["alpha"] * case.value("x") + case.value("y"),
    ),
    starter_diagnosis="not_written",
)


PREDICT_BYTES = Exercise(
    id="vector-add-predict-bytes",
    lesson="vector_add",
    kind="predict",
    title=N_("How many bytes does one call move?"),
    statement=N_(
        "The page turns a time into GB/s by dividing the bytes that one call must move by "
        "the time it takes. Predict that number of bytes for one addition of two vectors "
        "of 2**20 elements in bfloat16 (2 bytes an element), as the page's benchmark "
        "counts them.\n\n"
        'Write it in `answer` and check it with `check("vector-add-predict-bytes", '
        "answer)`: the checker asks the page's benchmark specification."
    ),
    starter="answer = ...  # bytes moved by one call\n",
    hints=(
        N_("Count the tensors that one call reads and the ones it writes."),
        N_(
            "x and y are read once and out is written once: three vectors of 2**20 "
            "elements, 2 bytes each."
        ),
    ),
    solution="answer = 3 * 2**20 * 2\n",
    explanation=N_(
        "Three vectors of 2**20 elements of 2 bytes: 6,291,456 bytes. This is the least a "
        "call can move; a kernel that reads something twice still counts it once, so "
        "such a waste shows as a lower rate, never as a higher one."
    ),
    entry="answer",
    task=AnswerTask(lambda: bytes_moved(2**20, torch.bfloat16)),
    starter_diagnosis="no_answer",
)

FASTER_LAUNCHER = Exercise(
    id="vector-add-faster",
    lesson="vector_add",
    kind="faster",
    title=N_("A launcher that slows its kernel down"),
    statement=N_(
        "This launcher of the course's `add_kernel` is right on every case, and slower "
        "on a GPU than the course's `add`: two of its choices cost time. Find them and "
        "change them; leave the kernel as it is.\n\n"
        'Check it with `check("vector-add-faster", add)`. The time counted is all the GPU '
        "work that one call launches."
    ),
    starter="""\
def add(x, y):
    out = torch.zeros_like(x)
    BLOCK_SIZE = 32
    grid = (triton.cdiv(x.numel(), BLOCK_SIZE),)
    add_kernel[grid](x, y, out, x.numel(), BLOCK_SIZE=BLOCK_SIZE)
    return out
""",
    hints=(
        N_(
            "Count the kernels a call launches: `torch.zeros_like` is one too, and it "
            "writes every byte of `out` before `add_kernel` writes them again."
        ),
        N_(
            "A tile of 32 float32 values is 128 bytes: a program of 4 warps (128 threads) "
            "has work for a quarter of its threads, and 2**24 / 32 = 524,288 programs each "
            "pay for starting."
        ),
        N_("`out = torch.empty_like(x)` and `BLOCK_SIZE = 1024`."),
    ),
    solution="""\
def add(x, y):
    out = torch.empty_like(x)
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(x.numel(), BLOCK_SIZE),)
    add_kernel[grid](x, y, out, x.numel(), BLOCK_SIZE=BLOCK_SIZE)
    return out
""",
    explanation=N_(
        "`torch.empty_like` allocates without writing, so a call moves three vectors' "
        "bytes, not four. With tiles of 1,024 values every thread has 8 values to move, "
        "in 16-byte vectors, and 16,384 programs start instead of 524,288."
    ),
    entry="add",
    # The same cases as lesson 1's launcher: a faster launcher must stay right.
    task=ADD_LAUNCHER.task,
    speed=ADD_SPEED,
    speed_goal=0.8,
    starter_diagnosis="too_slow",
    names={"add_kernel": add_kernel},
)

EXERCISES = (AXPY, PREDICT_BYTES, FASTER_LAUNCHER)

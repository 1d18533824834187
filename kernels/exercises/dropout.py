"""Exercises of the gallery's dropout page: the keep mask, and a mask regenerated from
a seed and each element's own counter."""

import torch
import triton
import triton.language as tl

from ..triton_helpers.runtime import kernel_device
from .model import N_, Case, Exercise, KernelTask, Launch


@triton.jit
def _uniform_kernel(out_ptr, n_elements, seed, BLOCK_SIZE: tl.constexpr):
    # The draw of element i: tl.rand(seed, i), as the exercises' kernels must make it.
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, tl.rand(seed, offsets), mask=offsets < n_elements)


def _uniform(n: int, seed: int) -> torch.Tensor:
    """The uniform draws ``tl.rand(seed, i)`` for ``i < n``, in float64 on the CPU."""
    out = torch.empty(n, dtype=torch.float32, device=kernel_device())
    _uniform_kernel[(triton.cdiv(n, 128),)](out, n, seed, BLOCK_SIZE=128)
    return out.cpu().double()


def _reference(case: Case) -> torch.Tensor:
    p, seed = case.params["p"], case.params["seed"]
    x = case.value("x")
    keep = _uniform(x.numel(), seed) >= p
    return torch.where(keep, x / (1 - p), torch.zeros_like(x))


def _cases() -> tuple[Case, ...]:
    def case(
        name: str, n: int, block: int, p: float, seed: int, **extra: object
    ) -> Case:
        x = torch.arange(n, dtype=torch.float64) * 0.25 + 1.0
        return Case(
            name,
            {"x": x},
            (n,),
            params={"p": p, "seed": seed, "BLOCK_SIZE": block},
            tile=(block,),
            **extra,
        )  # type: ignore[arg-type]

    return (
        case(N_("1000 elements, p = 0.5, seed 123, tiles of 256"), 1000, 256, 0.5, 123),
        case(N_("the same 1000 elements in tiles of 64"), 1000, 64, 0.5, 123),
        case(N_("p = 0: every element is kept"), 300, 128, 0.0, 7),
        case(N_("p = 0.9, seed 2024, 500 elements"), 500, 128, 0.9, 2024),
    )


def _launch(kernel: object, launch: Launch) -> None:
    x, out, params = launch.inputs["x"], launch.out, launch.params
    n, block = out.numel(), params["BLOCK_SIZE"]
    kernel[(triton.cdiv(n, block),)](
        x, out, n, params["p"], params["seed"], BLOCK_SIZE=block
    )


KEEP_MASK = Exercise(
    id="dropout-keep-mask",
    lesson="dropout",
    kind="fill-in",
    title=N_("The keep mask"),
    statement=N_(
        "Dropout keeps each element with probability `1 - p`, scaled by `1 / (1 - p)` so "
        "that the expected value is unchanged, and zeroes the others. The kernel below "
        "draws one uniform number in [0, 1) per element, but its mask keeps everything. "
        "Write the line that makes `keep`: true for an element kept, with probability "
        "exactly `1 - p`, and true for every element when `p = 0`.\n\n"
        'Check it with `check("dropout-keep-mask", dropout_kernel)`. The checker compares '
        "the output with the draws `tl.rand(seed, i)` of each element `i`, regenerated "
        "from the same seed: the mask must be exactly this one."
    ),
    starter="""\
@triton.jit
def dropout_kernel(x_ptr, out_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)  # one uniform draw in [0, 1) per element
    keep = random >= 0.0  # TODO: kept with probability 1 - p
    tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=mask)
""",
    hints=(
        N_("A uniform draw in [0, 1) is below `p` with probability `p`."),
        N_(
            "Keep the elements whose draw is not below `p`. A draw can be exactly 0, so "
            "with `>` instead of `>=` the case `p = 0` could drop one."
        ),
        N_("`keep = random >= p`."),
    ),
    solution="""\
@triton.jit
def dropout_kernel(x_ptr, out_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    keep = random >= p
    tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=mask)
""",
    explanation=N_(
        "The mask is never stored: it is a comparison of a draw that the seed and the "
        "element's index determine, so the backward pass makes the same mask again from "
        "the same seed. `random < p` would keep the dropped elements instead, with "
        "probability `p`."
    ),
    entry="dropout_kernel",
    task=KernelTask(_cases(), _launch, _reference),
    starter_diagnosis="wrong_values",
)


COUNTERS = Exercise(
    id="dropout-counters",
    lesson="dropout",
    kind="find-the-bug",
    title=N_("A mask that depends on the tile size"),
    statement=N_(
        "This dropout kernel gives a different mask when it is launched with another "
        "`BLOCK_SIZE`, although the seed is the same. The backward pass, or a launch "
        "tuned for another GPU, would then drop other elements than the forward pass did. "
        "Find the bug and fix it: the draw of element `i` must depend only on the seed "
        "and on `i`.\n\n"
        'Check it with `check("dropout-counters", dropout_kernel)`: the checker runs it '
        "with tiles of 256 and of 64 elements and compares both with the draws "
        "`tl.rand(seed, i)`."
    ),
    starter="""\
@triton.jit
def dropout_kernel(x_ptr, out_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    lanes = tl.arange(0, BLOCK_SIZE)
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + lanes
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    keep = tl.rand(seed, lanes) >= p
    tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=mask)
""",
    hints=(
        N_(
            "Philox is counter-based: `tl.rand(seed, counters)` gives one draw per counter, "
            "and the same counter always gives the same draw."
        ),
        N_(
            "Which counters does program 1 use, and which does program 0? Compare the "
            "elements they stand for."
        ),
        N_("Draw with the element's index: `keep = tl.rand(seed, offsets) >= p`."),
    ),
    solution="""\
@triton.jit
def dropout_kernel(x_ptr, out_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    lanes = tl.arange(0, BLOCK_SIZE)
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + lanes
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    keep = tl.rand(seed, offsets) >= p
    tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=mask)
""",
    explanation=N_(
        "With the lane as the counter, every program draws the same numbers: the mask "
        "repeats from tile to tile, and its period is the tile size. With the element's "
        "index as the counter, the draw belongs to the element, whoever computes it. "
        "Mixing the program id into the seed instead repeats nothing, but still changes "
        "the mask with the tile size."
    ),
    entry="dropout_kernel",
    task=KernelTask(_cases(), _launch, _reference),
    starter_diagnosis="wrong_values",
)

EXERCISES = (KEEP_MASK, COUNTERS)

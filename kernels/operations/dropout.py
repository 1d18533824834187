"""Low-memory dropout: the mask is regenerated from a seed, never stored.

Dropout zeroes each element with probability ``p`` and scales the survivors by
``1 / (1 - p)``. PyTorch's dropout draws a random mask, writes the output and also
keeps the mask (one byte per element) for the backward pass. This kernel draws its
random numbers from Triton's counter-based Philox generator, seeded by one integer:
the same seed gives the same mask, so the backward pass recomputes it instead of
reading it back, and nothing but the seed is kept.
"""

import torch
import triton
import triton.language as tl

from ..declarations.family import (
    ODD_LENGTHS,
    TINY_ELEMENTS,
    Family,
    LaunchCase,
    Launcher,
    bare_launch,
    describe_inputs,
    tiny_randn,
)
from ..declarations.spec import BenchmarkSpec
from ..triton_helpers.checks import check_integer, check_real, check_tensor, needs_grad
from ..triton_helpers.direct_launch import launch
from ..triton_helpers.first_order import first_order_only
from ..triton_helpers.launch import cdiv

# Not float64: Triton passes p and the scale 1 / (1 - p) to the kernel as float32
# numbers, so a float64 result would carry float32's rounding error.
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# One Philox call gives four 32-bit random numbers: each program draws BLOCK_SIZE / 4
# of them and uses each for four elements, a quarter of the tile apart.
BLOCK_SIZE = 2048
MAX_ELEMENTS = 2**31 - 1


@triton.jit
def _dropout_quarter(
    x_ptr, out_ptr, offsets, n_elements, random_bits, p, scale, MASKED: tl.constexpr
):
    # MASKED: the quarter may run past the end. Unmasked, its loads and stores are
    # vectors whatever the length (see add_tail_apart_kernel in
    # kernels/operations/vector_add.py).
    if MASKED:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
    else:
        x = tl.load(x_ptr + offsets)
    # Kept where the uniform draw is at least p: with probability 1 - p, and always for
    # p = 0 (the draw can be exactly 0, which "> p" would drop).
    keep = tl.uint_to_uniform_float(random_bits) >= p
    y = tl.where(keep, x.to(tl.float32) * scale, 0.0).to(out_ptr.dtype.element_ty)
    if MASKED:
        tl.store(out_ptr + offsets, y, mask=mask)
    else:
        tl.store(out_ptr + offsets, y)


@triton.jit
def dropout_kernel(
    x_ptr, out_ptr, n_elements, p, scale, seed, BLOCK_SIZE: tl.constexpr
):
    QUARTER: tl.constexpr = BLOCK_SIZE // 4
    pid = tl.program_id(0)
    # Philox is counter-based: the random numbers of a counter depend only on the seed
    # and the counter, so any program can regenerate any part of the mask.
    counters = pid * QUARTER + tl.arange(0, QUARTER)
    r0, r1, r2, r3 = tl.randint4x(seed, counters)
    first = pid.to(tl.int64) * BLOCK_SIZE
    start = first + tl.arange(0, QUARTER)
    # Only a tile that runs past the end needs masks: every other takes the branch
    # without them, which loads and stores in vectors even for an odd length.
    if first + BLOCK_SIZE <= n_elements:
        _dropout_quarter(x_ptr, out_ptr, start, n_elements, r0, p, scale, False)
        _dropout_quarter(
            x_ptr, out_ptr, start + QUARTER, n_elements, r1, p, scale, False
        )
        _dropout_quarter(
            x_ptr, out_ptr, start + 2 * QUARTER, n_elements, r2, p, scale, False
        )
        _dropout_quarter(
            x_ptr, out_ptr, start + 3 * QUARTER, n_elements, r3, p, scale, False
        )
    else:
        _dropout_quarter(x_ptr, out_ptr, start, n_elements, r0, p, scale, True)
        _dropout_quarter(
            x_ptr, out_ptr, start + QUARTER, n_elements, r1, p, scale, True
        )
        _dropout_quarter(
            x_ptr, out_ptr, start + 2 * QUARTER, n_elements, r2, p, scale, True
        )
        _dropout_quarter(
            x_ptr, out_ptr, start + 3 * QUARTER, n_elements, r3, p, scale, True
        )


def _check_p_and_seed(p: object, seed: object) -> tuple[float, int]:
    p, seed = check_real("p", p), check_integer("seed", seed)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability between 0 and 1, got {p!r}")
    if not 0 <= seed < 2**63:
        raise ValueError(f"seed must be an integer from 0 to 2**63 - 1, got {seed!r}")
    return p, seed


def _launch(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = x.numel()
    if n_elements:
        scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
        grid = (cdiv(n_elements, BLOCK_SIZE),)
        launch(
            dropout_kernel,
            grid,
            x,
            out,
            n_elements,
            p,
            scale,
            seed,
            BLOCK_SIZE=BLOCK_SIZE,
        )
    return out


class DropoutFunction(torch.autograd.Function):
    """Autograd wiring: the backward pass applies the same mask, regenerated from the
    seed."""

    @staticmethod
    def forward(ctx, x, p, seed):
        ctx.p, ctx.seed = p, seed
        return _launch(x, p, seed)

    @staticmethod
    @first_order_only("dropout")
    def backward(ctx, dy):
        return _launch(dy.contiguous(), ctx.p, ctx.seed), None, None


def dropout(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    """Zero each element of ``x`` with probability ``p`` and scale the rest by ``1/(1-p)``.

    ``x``: contiguous float16, bfloat16 or float32 tensor on the Triton device, fewer
    than 2**31 elements; ``p``: a number between 0 and 1; ``seed``: an integer from 0 to
    2**63 - 1, which fixes the mask.
    """
    check_tensor("x", x, SUPPORTED_DTYPES)
    p, seed = _check_p_and_seed(p, seed)
    if x.numel() > MAX_ELEMENTS:
        raise ValueError(
            f"x has {x.numel()} elements; this kernel takes at most {MAX_ELEMENTS}"
        )
    if needs_grad(x):
        return DropoutFunction.apply(x, p, seed)
    return _launch(x, p, seed)


# A reference Philox4x32-10 in PyTorch integer arithmetic, independent of Triton: it
# reproduces the kernel's mask bit for bit, so the kernel can be checked exactly.
_MASK32 = 0xFFFFFFFF
_ROUND_A, _ROUND_B = 0xD2511F53, 0xCD9E8D57
_KEY_A, _KEY_B = 0x9E3779B9, 0xBB67AE85


def _mul_wide(a: torch.Tensor, b: int) -> tuple[torch.Tensor, torch.Tensor]:
    # The high and low 32 bits of a * b for 32-bit a and b, in 16-bit pieces so that no
    # int64 product overflows.
    a_lo, a_hi = a & 0xFFFF, a >> 16
    b_lo, b_hi = b & 0xFFFF, b >> 16
    lo_lo, lo_hi, hi_lo, hi_hi = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    middle = (lo_lo >> 16) + (lo_hi & 0xFFFF) + (hi_lo & 0xFFFF)
    low = ((middle & 0xFFFF) << 16) | (lo_lo & 0xFFFF)
    high = hi_hi + (lo_hi >> 16) + (hi_lo >> 16) + (middle >> 16)
    return high, low


def philox4x32(
    counter: torch.Tensor, seed: int, rounds: int = 10
) -> tuple[torch.Tensor, ...]:
    """Philox4x32 of counters ``(counter, 0, 0, 0)`` and key ``seed``, as int64 tensors."""
    c0, c1 = counter.to(torch.int64), torch.zeros_like(counter, dtype=torch.int64)
    c2, c3 = torch.zeros_like(c0), torch.zeros_like(c0)
    k0, k1 = seed & _MASK32, (seed >> 32) & _MASK32
    for _ in range(rounds):
        high_b, low_b = _mul_wide(c2, _ROUND_B)
        high_a, low_a = _mul_wide(c0, _ROUND_A)
        c0, c1, c2, c3 = high_b ^ c1 ^ k0, low_b, high_a ^ c3 ^ k1, low_a
        k0, k1 = (k0 + _KEY_A) & _MASK32, (k1 + _KEY_B) & _MASK32
    return c0, c1, c2, c3


def _uniform(bits: torch.Tensor) -> torch.Tensor:
    # Triton's uint_to_uniform_float: read the bits as int32, fold negatives, scale.
    signed = torch.where(bits >= 2**31, bits - 2**32, bits)
    folded = torch.where(signed < 0, -signed - 1, signed)
    return folded.to(torch.float32) * torch.tensor(
        4.6566127342e-10, dtype=torch.float32
    )


def keep_mask(
    n_elements: int, p: float, seed: int, device: torch.device
) -> torch.Tensor:
    """The elements :func:`dropout` keeps for ``seed``, computed without Triton."""
    quarter = BLOCK_SIZE // 4
    offsets = torch.arange(n_elements, device=device)
    tile, within = offsets // BLOCK_SIZE, offsets % BLOCK_SIZE
    counters = tile * quarter + within % quarter
    streams = torch.stack(philox4x32(counters, seed))
    bits = streams.gather(0, (within // quarter).unsqueeze(0)).squeeze(0)
    return keeps(bits, p)


def keeps(bits: torch.Tensor, p: float) -> torch.Tensor:
    """Whether :func:`dropout_kernel` keeps the elements whose random words are ``bits``."""
    return _uniform(bits) >= torch.tensor(p, dtype=torch.float32)


P = 0.5
SEED = 1234


def reference_dropout(x: torch.Tensor) -> torch.Tensor:
    """Dropout of ``x`` with the benchmark's ``p`` and seed, mask from :func:`keep_mask`."""
    keep = keep_mask(x.numel(), P, SEED, x.device).view_as(x)
    return torch.where(keep, x / (1 - P), torch.zeros_like(x))


def triton_dropout(x: torch.Tensor) -> torch.Tensor:
    """The benchmarked call: :func:`dropout` with the benchmark's ``p`` and seed."""
    return dropout(x, P, SEED)


def torch_dropout(x: torch.Tensor) -> torch.Tensor:
    """PyTorch's dropout in training mode (it also writes the mask it keeps for backward)."""
    return torch.nn.functional.dropout(x, P, training=True)


def make_inputs(
    n_elements: int,
    dtype: torch.dtype,
    device: torch.device,
    generator: torch.Generator,
) -> tuple[torch.Tensor]:
    """One random vector."""
    return (torch.randn(n_elements, dtype=dtype, device=device, generator=generator),)


def bytes_moved(n_elements: int, dtype: torch.dtype) -> int:
    """Read x once and write the output once: the mask itself never touches memory."""
    return 2 * n_elements * dtype.itemsize


# Every other power of two, and two odd lengths: no tile size divides those.
SIZES = (2**16, 2**18, 2**20, 3_000_001, 2**22, 2**24, 2**26, 100_000_001, 2**28)

BENCHMARK = BenchmarkSpec(
    name="dropout",
    metric="GB/s",
    x_name="N",
    dtype=torch.float32,
    gpu_sizes=SIZES,
    interpreter_sizes=(1, 1000, 4097),
    make_inputs=make_inputs,
    triton=triton_dropout,
    torch_eager=torch_dropout,
    reference=reference_dropout,
    work=bytes_moved,
    # PyTorch draws other random numbers: only the Triton kernel is checked, exactly.
    check_baselines=False,
    details={"p": P},
)


def launch_cost_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.dropout.dropout` against ``torch.nn.functional.dropout``."""
    (x,) = tiny_randn((TINY_ELEMENTS,), dtype=torch.float32, device=device)
    p, seed = P, SEED
    out = torch.empty_like(x)
    grid = (triton.cdiv(TINY_ELEMENTS, BLOCK_SIZE),)
    bare = bare_launch(
        dropout_kernel,
        grid,
        x,
        out,
        TINY_ELEMENTS,
        p,
        1.0 / (1.0 - p),
        seed,
        BLOCK_SIZE=BLOCK_SIZE,
    )
    return LaunchCase(
        inputs=describe_inputs(x=x) + f", p={p}",
        triton=lambda: dropout(x, p, seed),
        bare=bare,
        torch=lambda: torch.nn.functional.dropout(x, p, training=True),
        bare_out=out,
    )


FAMILY = Family(
    launchers=(
        Launcher(
            dropout,
            lambda device: tiny_randn((100,), dtype=torch.float32, device=device),
            (0,),
            {"p": 0.3, "seed": 2},
        ),
    ),
    launch_costs={"dropout": launch_cost_case},
    model_shapes={"dropout": ODD_LENGTHS},
)

"""Fused cross-entropy, forward and backward, that never holds the softmax in memory.

``loss = mean over rows of (logsumexp(logits) - logits[target])``. In PyTorch,
``cross_entropy`` computes ``log_softmax`` of the whole (rows, vocabulary) matrix, keeps
it for the backward pass, and then picks one value per row: for a large vocabulary that
matrix is as big as the logits themselves. The forward kernel here streams each row
once, keeping a running maximum and sum (the online logsumexp), and stores two numbers
per row; the backward kernel reads the logits again and writes the gradient
``softmax(logits) - onehot(target)`` directly, scaled by the upstream gradient.
"""

import dataclasses
import functools
import math

import torch
import triton
import triton.language as tl

from ..declarations.family import (
    TINY_COLS,
    TINY_ROWS,
    VOCABULARIES,
    Family,
    LaunchCase,
    Launcher,
    bare_launch,
    describe_inputs,
    tiny_randn,
)
from ..declarations.spec import BenchmarkSpec
from ..triton_helpers.aligned_rows import align_for, row_parts
from ..triton_helpers.checks import (
    check_bool,
    check_integer,
    check_rows,
    check_tensor,
    needs_grad,
)
from ..triton_helpers.direct_launch import launch
from ..triton_helpers.first_order import first_order_only
from ..triton_helpers.launch import benchmark_rows
from ..triton_helpers.online_softmax import (
    online_max_and_sum,
    online_max_and_sum_unaligned,
)

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
IGNORE_INDEX = -100
# Each program walks its row in tiles of BLOCK_SIZE logits. Warps, and how many tiles
# Triton prefetches, were chosen by sweeps on an H200 (prefetching did not pay here).
BLOCK_SIZE = 8192
FORWARD_WARPS = 4
FORWARD_STAGES = 1
BACKWARD_WARPS = 8
# The mean of the row losses is one program's work; with 16 warps it reads 4096 rows at
# once, which took about 3 us off a call on an H200 (a 4-warp, 1024-row loop took 7 us).
MEAN_BLOCK = 4096
MEAN_WARPS = 16


@triton.jit
def cross_entropy_forward_kernel(
    logits_ptr,
    targets_ptr,
    losses_ptr,
    max_ptr,
    log_sum_ptr,
    n_cols,
    ignore_index,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    EVEN: tl.constexpr,
    ALIGN: tl.constexpr,
    STATS: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * n_cols
    # Online logsumexp: one pass over the row, nothing row-sized is stored. EVEN: the
    # row is a whole number of tiles, so the loads need no mask. ALIGN > 1: rows do not
    # all start on a 16-byte boundary (a vocabulary of 50,257), and are walked in three
    # parts so that most loads are vectors (kernels/triton_helpers/aligned_rows.py).
    if ALIGN > 1:
        running_max, running_sum = online_max_and_sum_unaligned(
            logits_ptr, row * n_cols, n_cols, ACC, BLOCK_SIZE, ALIGN, ""
        )
    else:
        running_max, running_sum = online_max_and_sum(
            row_ptr, n_cols, ACC, BLOCK_SIZE, NUM_STAGES, "", EVEN
        )
    # logsumexp = max + log(sum). The two are kept apart: with logits near 1e6 their sum
    # rounds to a multiple of 1/16 in float32, which would shift every probability by up
    # to 3%, while (logit - max) + log(sum) keeps the digits that matter.
    log_sum = tl.log(running_sum)
    target = tl.load(targets_ptr + row)
    valid = target != ignore_index
    # Never read outside the row: an unchecked out-of-range target gives a NaN loss.
    in_range = (target >= 0) & (target < n_cols)
    target_logit = tl.load(
        row_ptr + target, mask=valid & in_range, other=float("nan")
    ).to(ACC)
    tl.store(
        losses_ptr + row, tl.where(valid, (running_max - target_logit) + log_sum, 0.0)
    )
    # STATS: there will be a backward pass, which needs the two parts of the logsumexp.
    if STATS:
        tl.store(max_ptr + row, running_max)
        tl.store(log_sum_ptr + row, log_sum)


@triton.jit
def mean_loss_kernel(
    losses_ptr,
    targets_ptr,
    loss_ptr,
    n_valid_ptr,
    n_rows,
    ignore_index,
    BLOCK_SIZE: tl.constexpr,
):
    # One program: the sum of the row losses over the number of rows that count.
    total = tl.zeros((BLOCK_SIZE,), losses_ptr.dtype.element_ty)
    count = tl.zeros((BLOCK_SIZE,), tl.int32)
    for start in range(0, n_rows, BLOCK_SIZE):
        rows = start + tl.arange(0, BLOCK_SIZE)
        mask = rows < n_rows
        total += tl.load(losses_ptr + rows, mask=mask, other=0.0)
        targets = tl.load(targets_ptr + rows, mask=mask, other=ignore_index)
        count += (targets != ignore_index).to(tl.int32)
    n_valid = tl.sum(count, axis=0)
    # None (a compile-time constant) when no backward pass needs the count.
    if n_valid_ptr is not None:
        tl.store(n_valid_ptr, n_valid)
    tl.store(loss_ptr, tl.sum(total, axis=0) / n_valid)


@triton.jit
def _gradient_part(
    logits_ptr,
    dlogits_ptr,
    base,
    offsets,
    first_col,
    mask,
    target,
    row_max,
    log_sum,
    scale,
    ACC: tl.constexpr,
):
    # The gradient of the values at base + offsets, columns first_col + offsets of the
    # row. Padding lanes read -inf, whose exponential is 0: 0 there could overflow exp()
    # when the row's logits are far below 0.
    x = tl.load(logits_ptr + base + offsets, mask=mask, other=-float("inf")).to(ACC)
    # x - max is exact for nearby values, and at most 0: exp() cannot overflow.
    probability = tl.exp((x - row_max) - log_sum)
    grad = (probability - tl.where(first_col + offsets == target, 1.0, 0.0)) * scale
    tl.store(
        dlogits_ptr + base + offsets, grad.to(dlogits_ptr.dtype.element_ty), mask=mask
    )


@triton.jit
def cross_entropy_backward_kernel(
    logits_ptr,
    targets_ptr,
    max_ptr,
    log_sum_ptr,
    grad_loss_ptr,
    n_valid_ptr,
    dlogits_ptr,
    n_cols,
    ignore_index,
    ACC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    ALIGN: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    target = tl.load(targets_ptr + row)
    row_max = tl.load(max_ptr + row)
    log_sum = tl.load(log_sum_ptr + row)
    # d(mean loss)/d(logit) = (softmax - onehot) / n_valid, times the upstream gradient;
    # both scalars are read on the device, so the host never waits for them.
    scale = tl.load(grad_loss_ptr).to(ACC) / tl.load(n_valid_ptr).to(ACC)
    scale = tl.where(target != ignore_index, scale, 0.0)
    row_offset = row * n_cols
    if ALIGN > 1:
        # Rows that do not start on a 16-byte boundary: head, body in vectors, tail.
        head, body_start, body_len, tail_len = row_parts(row_offset, n_cols, ALIGN)
        edge = tl.arange(0, ALIGN)
        _gradient_part(
            logits_ptr,
            dlogits_ptr,
            row_offset,
            edge,
            0,
            edge < head,
            target,
            row_max,
            log_sum,
            scale,
            ACC,
        )
        for start in range(0, body_len, BLOCK_SIZE):
            body_mask = start + cols < body_len
            _gradient_part(
                logits_ptr,
                dlogits_ptr,
                body_start + start,
                cols,
                head + start,
                body_mask,
                target,
                row_max,
                log_sum,
                scale,
                ACC,
            )
        _gradient_part(
            logits_ptr,
            dlogits_ptr,
            body_start + body_len,
            edge,
            head + body_len,
            edge < tail_len,
            target,
            row_max,
            log_sum,
            scale,
            ACC,
        )
    else:
        for start in range(0, n_cols, BLOCK_SIZE):
            _gradient_part(
                logits_ptr,
                dlogits_ptr,
                row_offset + start,
                cols,
                start,
                start + cols < n_cols,
                target,
                row_max,
                log_sum,
                scale,
                ACC,
            )


def _accumulator(dtype: torch.dtype) -> tuple[torch.dtype, tl.dtype]:
    return (
        (torch.float64, tl.float64)
        if dtype == torch.float64
        else (torch.float32, tl.float32)
    )


@functools.cache
def forward_options(dtype: torch.dtype, n_cols: int, stats: bool) -> dict[str, object]:
    """The compile-time arguments of :func:`cross_entropy_forward_kernel` for rows of
    ``n_cols`` logits of ``dtype``; ``stats``: store each row's maximum and log-sum."""
    return {
        "ACC": _accumulator(dtype)[1],
        "BLOCK_SIZE": BLOCK_SIZE,
        "NUM_STAGES": FORWARD_STAGES,
        "EVEN": n_cols % BLOCK_SIZE == 0,
        "ALIGN": align_for(dtype, n_cols),
        "STATS": stats,
        "num_warps": FORWARD_WARPS,
    }


def _forward(
    logits: torch.Tensor, targets: torch.Tensor, ignore_index: int, stats: bool = True
) -> tuple[torch.Tensor, ...]:
    """The mean loss, then (``stats``) what the backward pass needs besides the logits
    and targets: each row's maximum and log-sum, and the number of rows that count.
    Without ``stats`` those three are not computed, nor allocated (each allocation is
    a microsecond or two of the host's time), and come back as None."""
    n_rows, n_cols = logits.shape
    acc_torch = _accumulator(logits.dtype)[0]
    device = logits.device
    losses = torch.empty(n_rows, dtype=acc_torch, device=device)
    loss = torch.empty((), dtype=acc_torch, device=device)
    row_max = log_sum = n_valid = None
    if stats:
        row_max = torch.empty(n_rows, dtype=acc_torch, device=device)
        log_sum = torch.empty(n_rows, dtype=acc_torch, device=device)
        n_valid = torch.empty((), dtype=torch.int32, device=device)
    launch(
        cross_entropy_forward_kernel,
        (n_rows,),
        logits,
        targets,
        losses,
        row_max if stats else losses,
        log_sum if stats else losses,
        n_cols,
        ignore_index,
        **forward_options(logits.dtype, n_cols, stats),
    )
    launch(
        mean_loss_kernel,
        (1,),
        losses,
        targets,
        loss,
        n_valid,
        n_rows,
        ignore_index,
        BLOCK_SIZE=MEAN_BLOCK,
        num_warps=MEAN_WARPS,
    )
    return loss, row_max, log_sum, n_valid


class CrossEntropyFunction(torch.autograd.Function):
    """Autograd wiring: keeps the logits (in memory already), a logsumexp per row."""

    @staticmethod
    def forward(ctx, logits, targets, ignore_index):
        loss, row_max, log_sum, n_valid = _forward(logits, targets, ignore_index)
        ctx.save_for_backward(logits, targets, row_max, log_sum, n_valid)
        ctx.ignore_index = ignore_index
        return loss

    @staticmethod
    @first_order_only("cross_entropy")
    def backward(ctx, grad_loss):
        logits, targets, row_max, log_sum, n_valid = ctx.saved_tensors
        n_rows, n_cols = logits.shape
        dlogits = torch.empty_like(logits)
        launch(
            cross_entropy_backward_kernel,
            (n_rows,),
            logits,
            targets,
            row_max,
            log_sum,
            grad_loss,
            n_valid,
            dlogits,
            n_cols,
            ctx.ignore_index,
            ACC=_accumulator(logits.dtype)[1],
            BLOCK_SIZE=BLOCK_SIZE,
            ALIGN=align_for(logits.dtype, n_cols),
            num_warps=BACKWARD_WARPS,
        )
        return dlogits, None, None


def cross_entropy(
    logits: torch.Tensor,
    targets: torch.Tensor,
    ignore_index: int = IGNORE_INDEX,
    *,
    check_targets: bool = True,
) -> torch.Tensor:
    """Mean cross-entropy of ``logits`` (rows, classes) against ``targets`` (rows,).

    Rows whose target is ``ignore_index`` count for nothing, as in PyTorch. The loss is
    returned in float32 (float64 for float64 logits). ``logits``: contiguous float
    matrix on the Triton device; ``targets``: int64 class indices on the same device.

    ``check_targets`` raises ``ValueError`` for a target outside ``0..classes-1``; the
    check waits for the GPU once per call. A training loop that trusts its targets can
    turn it off: an out-of-range target then gives a NaN loss, never a read outside
    the row.
    """
    check_rows("logits", logits, SUPPORTED_DTYPES)
    check_tensor("targets", targets, (torch.int64,))
    ignore_index = check_integer("ignore_index", ignore_index)
    if not -(2**63) <= ignore_index < 2**63:
        # As PyTorch: a target is an int64, and so is what it is compared with.
        raise ValueError(
            f"ignore_index must fit in int64, the targets' dtype, got {ignore_index}"
        )
    check_targets = check_bool("check_targets", check_targets)
    if logits.dim() != 2:
        raise ValueError(
            f"logits has shape {tuple(logits.shape)}; it must be (rows, classes)"
        )
    if targets.dim() != 1 or targets.shape[0] != logits.shape[0]:
        raise ValueError(
            f"targets has shape {tuple(targets.shape)}; it must be ({logits.shape[0]},), "
            "one class index per row of logits"
        )
    if needs_grad(logits):
        loss = CrossEntropyFunction.apply(logits, targets, ignore_index)
    else:
        loss = _forward(logits, targets, ignore_index, stats=False)[0]
    # The kernel reads a target outside the row as a NaN logit, so a bad target makes the
    # loss NaN: reading the loss back (the one wait for the GPU) clears all the targets
    # at once, and only a NaN loss, from a bad target or from the logits, has the targets
    # looked at one by one.
    if check_targets and math.isnan(loss.item()):
        _check_target_range(targets, ignore_index, logits.shape[1])
    return loss


def _check_target_range(
    targets: torch.Tensor, ignore_index: int, n_classes: int
) -> None:
    out_of_range = (targets != ignore_index) & ((targets < 0) | (targets >= n_classes))
    if bool(out_of_range.any()):
        bad = targets[out_of_range][0].item()
        raise ValueError(
            f"targets holds {bad}, outside 0..{n_classes - 1} (and not ignore_index)"
        )


def torch_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """PyTorch's ``torch.nn.functional.cross_entropy`` (mean over rows)."""
    return torch.nn.functional.cross_entropy(logits, targets, ignore_index=IGNORE_INDEX)


ROWS = 4096


def make_inputs(
    n_classes: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits for ROWS tokens over ``n_classes`` classes, and random targets."""
    rows = benchmark_rows(device, ROWS)
    logits = torch.randn(
        rows, n_classes, dtype=dtype, device=device, generator=generator
    )
    targets = torch.randint(0, n_classes, (rows,), device=device, generator=generator)
    return logits, targets


def make_backward_inputs(
    n_classes: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, ...]:
    """The forward inputs, and the upstream gradient of the (scalar) loss."""
    logits, targets = make_inputs(n_classes, dtype, device, generator)
    return logits, targets, torch.rand((), device=device, generator=generator) + 0.5


def training_step(loss_fn, inputs: tuple[torch.Tensor, ...]) -> None:
    """Forward and backward through ``loss_fn``: what the peak-memory figure measures."""
    logits, targets = inputs
    loss_fn(logits.detach().requires_grad_(), targets).backward()


def forward_bytes(n_classes: int, dtype: torch.dtype) -> int:
    """Read the logits once (the targets and the per-row results are small)."""
    return ROWS * n_classes * dtype.itemsize


def backward_bytes(n_classes: int, dtype: torch.dtype) -> int:
    """Read the logits once and write their gradient once."""
    return 2 * ROWS * n_classes * dtype.itemsize


# Powers of two and the vocabularies of LLaMA 2 (32000), GPT-2 (50257), LLaMA 3 (128256)
# and Qwen 2 (151936).
SIZES = (1024, 4096, 32000, 32768, 50257, 65536, 128256, 151936)


def triton_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The benchmarked call: targets are known to be in range, as PyTorch assumes on a GPU."""
    return cross_entropy(logits, targets, check_targets=False)


BENCHMARK = BenchmarkSpec(
    name="cross_entropy",
    metric="GB/s",
    x_name="V",
    dtype=torch.bfloat16,
    gpu_sizes=SIZES,
    interpreter_sizes=(1, 1000, 5000),
    make_inputs=make_inputs,
    triton=triton_cross_entropy,
    torch_eager=torch_cross_entropy,
    work=forward_bytes,
    peak_memory_step=training_step,
    details={"rows": ROWS},
    peer_baselines={"Liger": "cross_entropy"},
)

BACKWARD_BENCHMARK = dataclasses.replace(
    BENCHMARK,
    name="cross_entropy_backward",
    gpu_sizes=(4096, 32000, 50257, 65536, 128256, 151936),
    make_inputs=make_backward_inputs,
    work=backward_bytes,
    grad_inputs=(0,),
    peak_memory_step=None,
    peer_baselines={"Liger": "cross_entropy_backward_alone"},
)

FP16_BENCHMARK = dataclasses.replace(
    BENCHMARK,
    name="cross_entropy_fp16",
    dtype=torch.float16,
    gpu_sizes=(32000, 50257, 128256, 151936),
    interpreter_sizes=(1000,),
    peak_memory_step=None,
)


def launch_cost_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.cross_entropy.cross_entropy` against its PyTorch namesake. The
    launcher is called as the benchmarks call it, ``check_targets=False``: by default it
    checks the targets, which waits for the GPU once per call. Two kernels: the rows'
    losses, then their mean."""
    (logits,) = tiny_randn((TINY_ROWS, TINY_COLS), dtype=torch.float32, device=device)
    targets = torch.arange(TINY_ROWS, device=device) * (
        TINY_COLS // TINY_ROWS
    )  # one class per row, in range
    acc_torch = _accumulator(logits.dtype)[0]
    losses = torch.empty(TINY_ROWS, dtype=acc_torch, device=device)
    loss = torch.empty((), dtype=acc_torch, device=device)
    ignore = IGNORE_INDEX
    # Without a gradient to compute, the launcher keeps no statistics: nor does this.
    row_losses = bare_launch(
        cross_entropy_forward_kernel,
        (TINY_ROWS,),
        logits,
        targets,
        losses,
        losses,
        losses,
        TINY_COLS,
        ignore,
        **forward_options(logits.dtype, TINY_COLS, stats=False),
    )
    mean_loss = bare_launch(
        mean_loss_kernel,
        (1,),
        losses,
        targets,
        loss,
        None,
        TINY_ROWS,
        ignore,
        BLOCK_SIZE=MEAN_BLOCK,
        num_warps=MEAN_WARPS,
    )

    def bare() -> None:
        row_losses()
        mean_loss()

    return LaunchCase(
        inputs=describe_inputs(logits=logits, targets=targets),
        triton=lambda: cross_entropy(logits, targets, check_targets=False),
        bare=bare,
        torch=lambda: torch.nn.functional.cross_entropy(logits, targets),
        bare_out=loss,
    )


def _tiny_logits_and_targets(device: torch.device) -> tuple[torch.Tensor, ...]:
    (logits,) = tiny_randn((3, 7), dtype=torch.float32, device=device)
    return logits, torch.tensor([1, 0, 6], device=device)


FAMILY = Family(
    launchers=(Launcher(cross_entropy, _tiny_logits_and_targets, (0,)),),
    launch_costs={"cross_entropy": launch_cost_case},
    model_shapes={
        "cross_entropy": VOCABULARIES,
        "cross_entropy_backward": VOCABULARIES,
        "cross_entropy_fp16": VOCABULARIES,
    },
)

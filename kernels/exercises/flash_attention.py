"""Exercises of the gallery's FlashAttention page: the online-softmax correction, and the
mask of the keys past the end of a ragged sequence."""

import math

import torch
import triton

from .model import N_, Case, Exercise, KernelTask, Launch

BLOCK, HEAD_DIM = 16, 16


def _values(rows: int, start: int, scale: float) -> torch.Tensor:
    index = torch.arange(start, start + rows * HEAD_DIM, dtype=torch.float64)
    return torch.sin(index * 0.731).reshape(rows, HEAD_DIM) * scale


def _case(name: str, seq_len: int, **extra: object) -> Case:
    inputs = {
        "q": _values(seq_len, 0, 2.0),
        "k": _values(seq_len, 1000, 2.0),
        "v": _values(seq_len, 3000, 1.0),
    }
    return Case(name, inputs, (seq_len, HEAD_DIM), tile=(BLOCK, HEAD_DIM), **extra)  # type: ignore[arg-type]


def _launch(kernel: object, launch: Launch) -> None:
    q, k, v = launch.inputs["q"], launch.inputs["k"], launch.inputs["v"]
    seq_len = q.shape[0]
    kernel[(triton.cdiv(seq_len, BLOCK),)](
        q,
        k,
        v,
        launch.out,
        seq_len,
        1 / math.sqrt(HEAD_DIM),
        HEAD_DIM=HEAD_DIM,
        BLOCK_M=BLOCK,
        BLOCK_N=BLOCK,
    )


def _reference(case: Case) -> torch.Tensor:
    q, k, v = case.value("q"), case.value("k"), case.value("v")
    return torch.softmax(q @ k.T / math.sqrt(HEAD_DIM), dim=1) @ v


_KERNEL = """\
@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr, seq_len, scale,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + rows[:, None] * HEAD_DIM + dims[None, :],
                mask=rows[:, None] < seq_len, other=0.0)
    row_max = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    row_sum = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + cols[None, :] * HEAD_DIM + dims[:, None],
                    mask=cols[None, :] < seq_len, other=0.0)
        scores = tl.dot(q, k) * scale
{mask_lines}        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        p = tl.exp(scores - new_max[:, None])
        {correction_line}
        row_sum = row_sum * correction + tl.sum(p, axis=1)
        acc = acc * correction[:, None]
        v = tl.load(v_ptr + cols[:, None] * HEAD_DIM + dims[None, :],
                    mask=cols[:, None] < seq_len, other=0.0)
        acc = tl.dot(p, v, acc)
        row_max = new_max
    tl.store(out_ptr + rows[:, None] * HEAD_DIM + dims[None, :], acc / row_sum[:, None],
             mask=rows[:, None] < seq_len)
"""
_KEY_MASK = (
    "        # Keys past the end of the sequence take no part in the softmax.\n"
    '        scores = tl.where(cols[None, :] < seq_len, scores, -float("inf"))\n'
)
_CORRECTION = "correction = tl.exp(row_max - new_max)"

CORRECTION = Exercise(
    id="flash-attention-correction",
    lesson="flash_attention",
    kind="fill-in",
    title=N_("The online-softmax correction"),
    statement=N_(
        "An attention kernel in the page's way, for one head: a program takes 16 queries "
        "and walks the keys 16 at a time, keeping for each query the running maximum of "
        "its scores, the running sum of their exponentials and the running output. When a "
        "block of keys raises the maximum, what was summed under the old maximum must be "
        "rescaled; the placeholder rescales by 1. Write the line that computes "
        "`correction`, one factor per query.\n\n"
        'Check it with `check("flash-attention-correction", attention_kernel)`: the checker '
        "runs sequences of 16 to 48 tokens with a head dimension of 16."
    ),
    starter=_KERNEL.format(
        mask_lines=_KEY_MASK,
        correction_line="correction = tl.full((BLOCK_M,), 1.0, tl.float32)  # TODO",
    ),
    hints=(
        N_(
            "A term summed so far is `exp(s - row_max)`; under the new maximum it should "
            "be `exp(s - new_max)`. By what factor do the two differ?"
        ),
        N_(
            "`exp(s - new_max) = exp(s - row_max) * exp(row_max - new_max)`. At the first "
            "block `row_max` is -inf and the factor is 0, which is right: nothing was "
            "summed yet."
        ),
        N_("`correction = tl.exp(row_max - new_max)`."),
    ),
    solution=_KERNEL.format(mask_lines=_KEY_MASK, correction_line=_CORRECTION),
    explanation=N_(
        "The new maximum is never smaller than the old one, so the factor is at most 1 and "
        "nothing overflows; it rescales the sum and the output alike, and the division at "
        "the end uses the sum of the same scale. `exp(new_max - row_max)` is the inverse, "
        "and at the first block `exp(inf)`, which turns the output into NaN. The page's "
        "kernel does the same in base 2, with `exp2`, folding `log2(e)` into the scale."
    ),
    entry="attention_kernel",
    task=KernelTask(
        (
            _case(N_("16 tokens: one block of keys"), 16),
            _case(
                N_("48 tokens: three blocks of keys"),
                48,
                note=N_(
                    "The running maximum of a query changes from one block of keys to the next."
                ),
            ),
        ),
        _launch,
        _reference,
    ),
    starter_diagnosis="wrong_values",
)

KEY_MASK = Exercise(
    id="flash-attention-key-mask",
    lesson="flash_attention",
    kind="find-the-bug",
    title=N_("A sequence that ends inside a block"),
    statement=N_(
        "This attention kernel is right for sequences of 16, 32 or 48 tokens and wrong "
        "for one of 40, whose last block of keys is partial. Its loads are masked, so it "
        "reads nothing outside the tensors. Find the bug and fix it.\n\n"
        'Check it with `check("flash-attention-key-mask", attention_kernel)`.'
    ),
    starter=_KERNEL.format(mask_lines="", correction_line=_CORRECTION),
    hints=(
        N_(
            "The padding keys load as zeros. What score does a query get against a key "
            "of zeros, and what weight does the softmax give it?"
        ),
        N_(
            "A score of 0 is a score like any other: the padding keys take part in the "
            "maximum and the sum. A key that must take no part needs the score -inf."
        ),
        N_(
            'After the scores: `scores = tl.where(cols[None, :] < seq_len, scores, -float("inf"))`.'
        ),
    ),
    solution=_KERNEL.format(mask_lines=_KEY_MASK, correction_line=_CORRECTION),
    explanation=N_(
        "A masked load keeps the kernel inside memory but gives the padding keys a value, "
        "0, and a score computed from it. The softmax must not see them: a score of -inf "
        "has the weight `exp(-inf) = 0`. Setting the padding scores to 0 instead is the "
        "same bug again. The page's kernel skips this `tl.where` when the sequence is a "
        "whole number of blocks (`EVEN`), and uses the same one for the causal mask."
    ),
    entry="attention_kernel",
    task=KernelTask(
        (
            _case(N_("32 tokens: two whole blocks of keys"), 32),
            _case(
                N_("40 tokens: the last block of keys holds 8"),
                40,
                note=N_(
                    "The 8 padding keys of the last block are not part of the sequence."
                ),
            ),
        ),
        _launch,
        _reference,
    ),
    starter_diagnosis="wrong_values",
)

EXERCISES = (CORRECTION, KEY_MASK)

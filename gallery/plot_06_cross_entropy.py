"""
Fused cross-entropy
===================

How much memory and time does a language model's loss take when the softmax over the
vocabulary is never written down?

A language model reads a sequence of tokens, pieces of text from a fixed vocabulary,
and at each position predicts the next one. Its last layer produces, for each position,
one logit (an unnormalised score) per token of the vocabulary: with 4096 positions and
a vocabulary of 131072 tokens, 2**29 logits, 1 GiB in bfloat16. The loss is the mean,
over positions, of ``logsumexp(logits) - logits[target]``, where ``target`` is the token
that actually comes next and ``logsumexp(x) = log(sum(exp(x)))``.

``torch.nn.functional.cross_entropy`` computes ``log_softmax`` of the whole matrix and
then picks one value per row (``cross_entropy_loss`` in PyTorch's
``aten/src/ATen/native/LossNLL.cpp``), and autograd keeps that ``log_softmax`` matrix
for the backward pass: a second matrix as big as the logits, written, kept and read
again.
"""

# %%
# The plan
# --------
#
# A row's loss needs only two numbers from the row: its logsumexp and the logit of its
# target. The logsumexp is a reduction, and the :doc:`softmax page <plot_03_softmax>`
# showed how to compute it in one read of the row, however long: *online softmax*. Keep
# the largest logit seen so far, ``m``, and the sum ``s`` of ``exp(x - m)`` over the
# logits seen so far. When a tile of logits raises the maximum, multiply ``s`` by
# ``exp(m_old - m_new)`` first, so that every term is measured against the same
# maximum. After the last tile, ``logsumexp = m + log(s)``.
#
# .. code-block:: text
#
#    forward, program r:
#        m, s = online max and sum over row r, tile by tile    # one read
#        store loss[r] = (m - logits[r, target[r]]) + log(s)
#        if a backward pass will follow: store m[r] and log(s)[r]
#
#    backward, program r:
#        for each tile of row r:                                # one read
#            p = exp((logits - m[r]) - log(s)[r])               # softmax, recomputed
#            store (p - onehot(target)) * scale                 # one write
#
# The forward kernel
# ------------------
#
# Each program streams one row in tiles of ``BLOCK_SIZE`` logits. The running maximum
# and sum come from the helper that the softmax page's kernel for long rows uses:
#
# .. literalinclude:: /kernels/triton_helpers/online_softmax.py
#    :pyobject: online_max_and_sum
#
# Some vocabularies need one more step. A GPU thread loads 16 bytes in one instruction
# (8 bfloat16 logits) only from an address that is a multiple of 16. Row ``r`` starts
# at element ``r * n_cols``: when ``n_cols`` is not a multiple of 8, as with GPT-2's
# 50257 tokens, most rows start between two such boundaries, the compiler cannot prove
# any load aligned, and it loads one value per instruction. (It cannot prove it either
# for a multiple of 8 that is not one of 16: Triton tells the compiler about multiples
# of 16 only.) For rows of any length that is not a multiple of 16, ``ALIGN`` is
# the number of values in 16 bytes, and the kernel calls
# ``online_max_and_sum_unaligned`` instead, which walks the row in three parts: a short
# masked *head* up to the first boundary, a *body* that starts on a boundary and is a
# whole number of vectors long, so that its loads are vectors, and a short masked
# *tail*. The :doc:`softmax page <plot_03_softmax>` walks its long rows the same way,
# and ``kernels/triton_helpers/aligned_rows.py`` explains the split. When ``n_cols`` is a multiple
# of 16, ``ALIGN`` is 1 and the plain helper runs.
#
# Then the program looks up its target's logit and stores the row's loss. When a
# backward pass will follow (``STATS``), it also stores the row's logsumexp in two
# parts, ``m`` and ``log(s)`` (the comment in the kernel says why they are not added
# up); on logits that need no gradient, nothing would read them, so they are neither
# stored nor allocated. Rows whose target is ``ignore_index`` (``-100``, as in PyTorch)
# get a loss of 0 and do not count in the mean:
#
# .. literalinclude:: /kernels/operations/cross_entropy.py
#    :pyobject: cross_entropy_forward_kernel
#
# ``EVEN``, ``ALIGN`` and ``STATS`` are compile-time constants (``tl.constexpr``), so
# each combination compiles to its own kernel, without the branches it does not take.
# The launcher works them out from the dtype and the row length:
#
# .. literalinclude:: /kernels/operations/cross_entropy.py
#    :pyobject: forward_options
#
# A second kernel, run as a single program, adds up the row losses and divides by the
# number of rows that count. It also stores that count for the backward pass; without
# one, ``n_valid_ptr`` is ``None``, which Triton also treats as a compile-time constant,
# so the store is left out:
#
# .. literalinclude:: /kernels/operations/cross_entropy.py
#    :pyobject: mean_loss_kernel
#
# The backward kernel
# -------------------
#
# The gradient of the loss with respect to a logit is the softmax probability of its
# token, minus one at the target, divided by the number of rows that count, times the
# gradient that arrives from after the loss (1 when the loss is the last step). With the
# two parts of the logsumexp saved, the probability is ``exp((x - m) - log(s))``: the
# backward kernel reads the logits once and writes the gradient once, and no softmax
# matrix ever exists.
#
# One helper computes and stores the gradient of a piece of a row: the values at
# ``base + offsets``, whose first is column ``first_col`` of the row (which is how it
# finds the target):
#
# .. literalinclude:: /kernels/operations/cross_entropy.py
#    :pyobject: _gradient_part
#
# The kernel calls it once per tile. With ``ALIGN`` above 1 it walks the row as the
# forward pass does: the head, the body tile by tile, then the tail.
#
# .. literalinclude:: /kernels/operations/cross_entropy.py
#    :pyobject: cross_entropy_backward_kernel
#
# The gradient goes into a new buffer, ``dlogits``, as big as the logits: the
# ``autograd.Function`` below allocates it with ``torch.empty_like(logits)``. Two
# known designs avoid that buffer, and this kernel uses neither. Liger-Kernel computes
# the gradient during the forward pass and writes it over the logits themselves (an
# in-place gradient; the logits are then gone, which is fine when nothing else needs
# them). A fused linear cross-entropy (Liger-Kernel's
# ``LigerFusedLinearCrossEntropyLoss``, Apple's Cut Cross-Entropy) goes further: it
# computes the logits from the last hidden states and the output weights piece by
# piece, inside the loss, so the full logit matrix itself is never stored.
#
# .. literalinclude:: /kernels/operations/cross_entropy.py
#    :pyobject: CrossEntropyFunction
#
# As on the :doc:`dropout page <plot_02_dropout>`, ``first_order_only`` refuses a
# second derivative by name: the backward kernel's output cannot be differentiated.

# %%
# Run it and check it
# -------------------

import torch

from kernels.harness.bench import check
from kernels.operations import cross_entropy
from kernels.text.messages import kernels_run_on
from kernels.triton_helpers.runtime import kernel_device

print(kernels_run_on())
for n_classes in (1, 1000, 5000):
    print(check(cross_entropy.BENCHMARK, n_classes))
    print(check(cross_entropy.BACKWARD_BENCHMARK, n_classes))

# %%
# Rows whose target is ``-100`` are ignored, as in PyTorch, and a target outside the
# vocabulary is refused by name instead of reading another row's logits:

logits = torch.randn(
    4, 10, device=kernel_device(), dtype=torch.float64, requires_grad=True
)
targets = torch.tensor([3, -100, 9, 0], device=kernel_device())
print(
    "gradcheck:",
    torch.autograd.gradcheck(
        lambda z: cross_entropy.cross_entropy(z, targets), (logits,)
    ),
)
try:
    cross_entropy.cross_entropy(
        logits, torch.tensor([3, 10, 9, 0], device=kernel_device())
    )
except ValueError as error:
    print(f"ValueError: {error}")

# %%
# That check of the targets waits for the GPU once per call. On a GPU, PyTorch makes no
# such check on the host: its kernel tests each target itself, and a bad one trips a
# device-side assertion, after which the process can no longer use the GPU. So the
# benchmark calls our kernel with ``check_targets=False``, which turns a bad target
# into a NaN loss and never into a read outside the row.
#
# Measure it
# ----------
#
# 4096 rows (token positions) in bfloat16. The vocabularies are the powers of two 1024,
# 4096, 32768 and 65536, and those of four models: 32000 (LLaMA 2), 50257 (GPT-2), 128256
# (LLaMA 3) and 151936 (Qwen 2). The forward rate counts one read of the logits; the
# backward rate a read of the logits and a write of their gradient.
#
# Besides PyTorch and ``torch.compile``, the ``Liger`` line is Liger-Kernel's
# cross-entropy (``liger_cross_entropy``), in the forward pass only: with logits that
# require a gradient, its forward pass also computes the gradient, as described above,
# and its backward pass only scales it, so there is no backward pass of its own to
# time. The lines under each table say where a baseline has no rate, and why.

from kernels.figures.plotting import plot_measurement, plot_peak_memory
from kernels.figures.report import print_peak_memory, results_table
from kernels.harness.bench import measure_or_load

forward = measure_or_load(cross_entropy.BENCHMARK)
figure = plot_measurement(forward)
table = results_table(forward, ceiling_goal=0.85, baseline_goal=1.0)
table

# %%
backward = measure_or_load(cross_entropy.BACKWARD_BENCHMARK)
figure = plot_measurement(backward)
table = results_table(backward, baseline_goal=1.0)
table

# %%
# The forward pass in float16, recorded in a file of its own, at the four vocabularies:

fp16 = measure_or_load(cross_entropy.FP16_BENCHMARK)
fp16_table = results_table(fp16, ceiling_goal=0.85, baseline_goal=1.0)
fp16_table

# %%
# Memory
# ------
#
# Memory is why people use such kernels. The figure shows the peak GPU memory that one
# training step (forward and backward) allocates beyond the logits themselves, measured
# with ``torch.cuda.max_memory_allocated`` in the same run.

figure = plot_peak_memory(forward)
print_peak_memory(forward)

# %%
# PyTorch, ``torch.compile`` and the Triton kernel allocate the gradient of the
# logits, as big as the logits; the fused kernel allocates nothing else of that size,
# while PyTorch eager also holds the ``log_softmax`` matrix and, during the backward
# pass, the gradient with respect to it: two more matrices as big as the logits. For
# the Triton kernel the peak is, by design, that gradient buffer (4096 rows times the
# vocabulary, two bytes each) and a few numbers per row: the memory that Liger-Kernel's
# in-place gradient, written over the logits, is designed to save.
#
# On speed, the goals are the arguments of ``results_table``: for the forward pass
# a share of the copy ceiling and a ratio to the fastest baseline, for the backward pass
# the ratio alone. Each table's header states them, and the lines under it say where
# the run recorded here met them. The "copy" column is a copy of as many bytes as one
# call, timed the same way.
#
# .. dropdown:: Engineering notes
#
#    **The forward call is two kernels**: the row losses, then their mean, which one
#    program computes. Reading 4096 rows at once with 16 warps, instead of looping over
#    1024 rows at a time with 4, shortened the mean kernel in a sweep on an H200 (the
#    comment beside ``MEAN_BLOCK`` in ``kernels/operations/cross_entropy.py`` records by how much).
#
#    **Where the forward kernel falls short of the ceiling goal** (the line under the
#    forward table says where; on the H200, though not in the H100's table above, at
#    32K to 50K logits a row): the first
#    kernel only reads, so its limit is the read rate of a kernel of its shape. In
#    sweeps on an H200 at 32K, the row-loss kernel alone ran faster than the pair, and
#    a probe with the same tiles that only sums the logits faster still. What separates
#    the probe from the kernel is the online logsumexp's arithmetic, whose steps (the
#    maximum, then ``exp``, then the sum, then the next tile) depend on one another.
#    Keeping a running maximum and sum per lane instead, with one reduction at the
#    end, needed a second ``exp`` per logit (or a ``where`` on every lane) and was
#    slower.
#
#    **The host** is not what holds 32K back: the main lines are the GPU's time alone.
#    The lighter lines add the Python side of a call (checks, two launches, the
#    allocations of the results), which weighs at small vocabularies. That is one
#    reason for ``STATS``: a call without a backward pass allocates only the row losses
#    and the loss.
#
# Exercises
# ---------
#
# .. exercises:: cross_entropy
#
# Quiz
# ----
#
# .. quiz:: cross_entropy

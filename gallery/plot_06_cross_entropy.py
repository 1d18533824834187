"""
Fused cross-entropy
===================

How much memory and time does a language model's loss take when the softmax over the
vocabulary is never written down?

The last layer of a language model produces, for each token, one logit per word of the
vocabulary: with 4096 tokens and a vocabulary of 128K words, 512M logits, a gigabyte in
bfloat16. The loss is
``mean over tokens of (logsumexp(logits) - logits[target])``.
``torch.nn.functional.cross_entropy`` computes ``log_softmax`` of the whole matrix,
keeps it for the backward pass, and then picks one value per row: a second matrix as
big as the logits, written, kept and read again.
"""

# %%
# The forward kernel
# ------------------
#
# Each program streams one row in tiles, keeping a running maximum and a running sum of
# ``exp(x - max)`` that it rescales when the maximum grows: the *online logsumexp*. At
# the end it looks up the target's logit and stores two numbers per row: the loss and
# the logsumexp.
#
# .. literalinclude:: /kernels/cross_entropy.py
#    :pyobject: cross_entropy_forward_kernel
#
# The running maximum and sum come from a helper that the softmax page's kernel for
# very long rows shares:
#
# .. literalinclude:: /kernels/online_softmax.py
#    :pyobject: online_max_and_sum
#
# The backward kernel
# -------------------
#
# The gradient of the loss with respect to a logit is the softmax probability, minus
# one at the target, divided by the number of rows that count. With the logsumexp saved,
# the probability is ``exp(x - lse)``: the backward kernel reads the logits once and
# writes the gradient once, and no softmax matrix ever exists.
#
# .. literalinclude:: /kernels/cross_entropy.py
#    :pyobject: cross_entropy_backward_kernel
#
# .. literalinclude:: /kernels/cross_entropy.py
#    :pyobject: CrossEntropyFunction

# %%
# Run it and check it
# -------------------

import torch

from kernels import cross_entropy
from kernels.bench import check
from kernels.runtime import describe_device, kernel_device

print(f"Kernels run on {describe_device()}.")
for n_classes in (1, 1000, 5000):
    print(check(cross_entropy.BENCHMARK, n_classes))
    print(check(cross_entropy.BACKWARD_BENCHMARK, n_classes))

# %%
# Rows whose target is ``-100`` are ignored, as in PyTorch, and a target outside the
# vocabulary is refused by name instead of reading another row's logits:

logits = torch.randn(4, 10, device=kernel_device(), dtype=torch.float64, requires_grad=True)
targets = torch.tensor([3, -100, 9, 0], device=kernel_device())
print("gradcheck:", torch.autograd.gradcheck(
    lambda z: cross_entropy.cross_entropy(z, targets), (logits,)))  # fmt: skip
try:
    cross_entropy.cross_entropy(logits, torch.tensor([3, 10, 9, 0], device=kernel_device()))
except ValueError as error:
    print(f"ValueError: {error}")

# %%
# That check of the targets waits for the GPU once per call. PyTorch does not wait on a
# GPU either (a bad target stops the whole program there), so the benchmark calls the
# kernel with ``check_targets=False``, which turns a bad target into a NaN loss and
# never into a read outside the row.
#
# Measure it
# ----------
#
# 4096 tokens; the vocabulary grows from 1K to 128K, in bfloat16. The forward rate counts
# one read of the logits; the backward rate a read of the logits and a write of their
# gradient.

from kernels.bench import measure_or_load
from kernels.plotting import plot_measurement, plot_peak_memory
from kernels.report import print_large_sizes, print_peak_memory

forward = measure_or_load(cross_entropy.BENCHMARK)
figure = plot_measurement(forward)
large = print_large_sizes(forward, ceiling_goal=0.85, baseline_goal=1.0)

# %%
backward = measure_or_load(cross_entropy.BACKWARD_BENCHMARK)
figure = plot_measurement(backward)
large = print_large_sizes(backward, baseline_goal=1.0)

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
# Every provider must allocate the gradient of the logits, as big as the logits; the
# fused kernel allocates nothing else of that size, while PyTorch eager also holds the
# ``log_softmax`` matrix and more. ``torch.compile`` fuses the loss too, and at most
# sizes needs no more memory than the Triton kernel.
#
# On speed, the fused kernels are more than twice as fast as PyTorch eager at large
# vocabularies and ahead of ``torch.compile``. The lines under the forward table say
# where the forward kernel reaches our 85% ceiling goal; at 32K logits a row it has
# fallen short in every build so far. What we measured of the reasons, in sweeps on an
# H200:
#
# * a call is two kernels: the row losses, then their mean, which one program
#   computes. At 32K logits the first alone ran at 80% of the ceiling and the pair at
#   74%; reading 4096 rows at once with 16 warps, instead of looping over 1024 rows with
#   4, took the mean from about 7 to about 4 microseconds;
# * the first kernel only reads, so its limit is the read rate of a kernel with its
#   shape. A probe with the same tiles that only sums the logits reached 87% of the
#   ceiling at 32K and 94 to 97% at 64K; the rest is the online logsumexp itself, whose
#   steps (maximum, then ``exp``, then sum, then the next tile) each wait for the one
#   before.
#   Keeping a running maximum and sum per lane instead, with one reduction at the end,
#   needed a second ``exp`` per logit (or a ``where`` on every lane) and was slower;
# * the host is not what holds 32K back: the main lines are the GPU's time alone. The
#   lighter lines add the Python side of a call (checks, autograd, two launches, four
#   allocations), which weighs at small vocabularies and not from 32K logits on;
# * the harness flushes the L2 cache by writing zeros before each timed call, and the
#   write-back of those zeros competes with the call's reads; the "copy" column shows
#   what that costs a copy of the same number of bytes.
#
# Quiz
# ----
#
# .. quiz:: cross_entropy

"""
Low-memory dropout
==================

What does it cost to regenerate a dropout mask instead of storing it?

Dropout zeroes each activation with probability ``p`` during training and scales the
survivors by ``1 / (1 - p)``. The backward pass must zero the same positions, so
PyTorch keeps the mask: one byte per element, written in the forward pass and read in
the backward. A Triton kernel can instead draw its random numbers from a
*counter-based* generator: the random number for element ``i`` is a pure function of a
seed and ``i``. Nothing needs storing but the seed.
"""

# %%
# The kernel
# ----------
#
# Triton's ``randint4x`` runs the Philox generator on a block of counters and returns
# four independent 32-bit random numbers per counter, so each program draws a quarter
# as many numbers as it has elements and uses each set for one quarter of its tile.
#
# .. literalinclude:: /kernels/dropout.py
#    :pyobject: dropout_kernel
#
# .. literalinclude:: /kernels/dropout.py
#    :pyobject: _dropout_quarter
#
# The backward pass is the same kernel applied to the incoming gradient with the same
# seed: the mask comes back bit for bit.
#
# .. literalinclude:: /kernels/dropout.py
#    :pyobject: DropoutFunction

# %%
# Run it and check it
# -------------------
#
# A random operation cannot be checked against another random operation, so the check
# is exact instead: ``keep_mask`` recomputes the Philox generator in plain PyTorch
# integer arithmetic, without Triton, and the kernel must match it bit for bit.

import torch

from kernels import dropout
from kernels.bench import check
from kernels.runtime import describe_device, kernel_device

print(f"Kernels run on {describe_device()}.")
for n_elements in (1, 1000, 4097):
    print(check(dropout.BENCHMARK, n_elements))

# %%
# The same seed gives the same mask; another seed, another mask. The share of zeros is
# close to ``p``.

x = torch.randn(1_000_000, device=kernel_device())
first = dropout.dropout(x, p=0.3, seed=42)
again = dropout.dropout(x, p=0.3, seed=42)
other = dropout.dropout(x, p=0.3, seed=43)
print("same seed, same output:", torch.equal(first, again))
print(f"another seed: {(first != other).float().mean().item():.1%} of the elements differ")
print(f"share of zeros with p = 0.3: {(first == 0).float().mean().item():.4f}")

# %%
# The memory saved
# ----------------
#
# PyTorch's dropout returns, besides its output, the mask it keeps for the backward
# pass. Its size, next to what this kernel keeps:

output, mask = torch.ops.aten.native_dropout(x, 0.3, True)
print(f"activations: {x.nbytes / 1e6:.1f} MB; PyTorch keeps a {mask.dtype} mask of "
      f"{mask.nbytes / 1e6:.1f} MB for backward; this kernel keeps one 8-byte seed")  # fmt: skip

# %%
# Measure it
# ----------
#
# One float32 vector, from 2**16 to 2**28 elements, ``p = 0.5``. The rate counts one read
# of the input and one write of the output: the bytes a dropout must move at least.
# PyTorch's dropout also writes its mask, and that is part of its time.

from kernels.bench import measure_or_load
from kernels.plotting import plot_measurement
from kernels.report import print_large_sizes

measurement = measure_or_load(dropout.BENCHMARK)
figure = plot_measurement(measurement)
large = print_large_sizes(measurement, ceiling_goal=0.85, baseline_goal=1.0)

# %%
# Generating random numbers is not free: ten rounds of Philox are some eighty integer
# instructions per counter, a fifth of that per element with four numbers per call.
# In float32, that arithmetic still fits under the time the memory traffic takes, and
# at large sizes the kernel runs close to the rate of a plain copy of the same bytes
# (the "copy" column), as the vector addition does, while it saves the mask's memory
# and traffic altogether. Both PyTorch baselines are slower; eager, for one, also
# writes the mask. Where the table notes that a copy beat the ceiling, compare the
# kernel with the "copy" column, timed beside it size by size, rather than with the
# ceiling.
#
# Quiz
# ----
#
# .. quiz:: dropout

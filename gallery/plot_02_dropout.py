"""
Low-memory dropout
==================

What does it cost to regenerate a dropout mask instead of storing it?

*Dropout* is a way to regularise a network during training: each activation is set to
zero with probability ``p``, and the survivors are multiplied by ``1 / (1 - p)`` so that
each output keeps, on average, the value of its input. In PyTorch it is
``torch.nn.functional.dropout(x, p, training=True)``.

The backward pass must zero the gradient at the same positions, so PyTorch keeps the
*mask*, which elements survived: one byte per element, written in the forward pass and
read in the backward. The kernel on this page keeps no mask at all. It draws its random
numbers in a way that can be repeated exactly, so the backward pass makes the same
mask again.
"""

# %%
# Random numbers on a GPU
# -----------------------
#
# Most random number generators, such as the Mersenne Twister behind Python's
# ``random`` module, carry a *state* that each draw updates: each number comes from the
# state the draw before it left. Thousands of GPU threads drawing at once would have to
# take turns on one such state.
#
# A *counter-based* generator has no state to update. It is a fixed function that
# scrambles two inputs into random-looking bits, much as a hash function does:
#
# .. code-block:: text
#
#    random bits = f(seed, counter)
#
# The *seed* chooses a sequence of numbers, and the *counter* chooses a position in it;
# Triton calls the counter the *offset*. Any thread can compute the number at any
# position directly, in any order, and the same seed and counter always give the same
# bits. That is what lets dropout do without a stored mask: the backward pass calls the
# function again with the same seed and counters.
#
# Triton ships *Philox4x32-10*, the generator of Salmon et al. (2011). Its input is a
# counter of four 32-bit words and a key of two 32-bit words, the low and high halves of
# a 64-bit seed. Ten rounds scramble them. Each round multiplies two of the four words
# by fixed constants, keeps both the high and the low 32 bits of each 64-bit product,
# combines the high halves with the other two words and the key by exclusive-or (XOR),
# and adds constants to the key. One call returns four 32-bit random numbers. In a
# kernel:
#
# * ``tl.randint4x(seed, offsets)`` runs Philox on a tile of counters, each
#   ``(offset, 0, 0, 0)`` for a 32-bit offset, and returns four tiles of random 32-bit
#   integers;
# * ``tl.rand(seed, offsets)`` returns one tile of floats in [0, 1), made from the first
#   of the four numbers.
#
# ``kernels/operations/dropout.py`` also holds Philox written in plain PyTorch integer arithmetic,
# ``philox4x32``, without Triton; the check below uses it. Here it shows the two
# properties that matter: a seed and a counter always give the same four numbers, and
# neighbouring counters or seeds give unrelated ones.

import torch

from kernels.operations.dropout import philox4x32
from kernels.text.messages import _, number

counters = torch.arange(3)
for seed in (42, 42, 7):
    numbers = torch.stack(philox4x32(counters, seed), dim=1)
    for counter, row in zip(counters.tolist(), numbers.tolist(), strict=True):
        words = " ".join(f"{n:08x}" for n in row)
        print(
            _("seed {seed}, counter {counter}: {words}").format(
                seed=f"{seed:>2}", counter=counter, words=words
            )
        )

# %%
# Each line is one Philox call: four 32-bit numbers, in hexadecimal. The first two
# blocks are equal, as they must be; the third, with another seed, is not.
#
# The plan
# --------
#
# Each program handles a tile of ``BLOCK_SIZE`` elements. One Philox call gives four
# numbers, so a program needs ``BLOCK_SIZE / 4`` counters. It splits its tile into four
# quarters and gives each quarter one of the four numbers of each counter:
#
# .. code-block:: text
#
#    for each program pid, in parallel:
#        counters = pid * BLOCK_SIZE/4 + [0, 1, ..., BLOCK_SIZE/4 - 1]
#        r0, r1, r2, r3 = philox(seed, counters)       # four numbers per counter
#        for q in 0, 1, 2, 3:                          # the four quarters of the tile
#            offsets = pid * BLOCK_SIZE + q * BLOCK_SIZE/4 + [0, 1, ..., BLOCK_SIZE/4 - 1]
#            keep = uniform(r_q) >= p                  # true with probability 1 - p
#            out[offsets] = x[offsets] / (1 - p) where keep, else 0
#
# The counters of program ``pid`` follow those of program ``pid - 1``, so no two
# programs use the same counter, and every element gets a number of its own.
#
# The kernel
# ----------
#
# .. literalinclude:: /kernels/operations/dropout.py
#    :pyobject: dropout_kernel
#
# ``QUARTER`` is a ``tl.constexpr`` computed from ``BLOCK_SIZE``, so its value is known
# at compile time too. ``tl.randint4x`` returns the four tiles ``r0`` to ``r3``, and the
# kernel calls a helper once per quarter. A ``@triton.jit`` function called from a
# kernel is compiled into it, so the helper costs no call at run time:
#
# .. literalinclude:: /kernels/operations/dropout.py
#    :pyobject: _dropout_quarter
#
# ``tl.uint_to_uniform_float`` turns 32 random bits into a float spread evenly over
# [0, 1); it is at least ``p`` with probability ``1 - p``, and those elements are kept
# (at least, not above: the draw can be exactly 0, which ``p = 0`` must keep).
# ``scale`` is ``1 / (1 - p)``, computed once by the launcher; ``tl.where`` picks the
# scaled value or zero lane by lane. The mask ``offsets < n_elements`` keeps the last
# tile inside the vector, as in the vector addition; it is not the dropout mask. Only
# the tile that runs past the end needs it: ``dropout_kernel`` gives every other tile
# the branch without a mask (``MASKED`` is a ``tl.constexpr``, so each branch is
# compiled on its own), which loads and stores 16 bytes at a time even when the length
# is not a multiple of 16, as ``add_tail_apart_kernel`` on the vector addition page
# does.
#
# Each element costs a quarter of a Philox call, against a whole call per element with
# ``tl.rand``. The launcher passes ``seed`` as an argument, and the backward pass runs
# the same kernel on the incoming gradient with the same seed and ``p``, which gives the
# same mask. In PyTorch this is a ``torch.autograd.Function`` (see the
# :doc:`lesson on using a kernel inside PyTorch </docs/lessons/06_inside_pytorch>`)
# that saves ``p`` and the seed instead of a mask:
#
# .. literalinclude:: /kernels/operations/dropout.py
#    :pyobject: DropoutFunction
#
# Autograd cannot differentiate what a kernel computes, so the backward pass has no
# derivative of its own. ``first_order_only`` (in ``kernels/triton_helpers/first_order.py``) makes a
# request for a second derivative (``create_graph=True``, then another backward pass)
# fail with an error that names the operation, instead of an error about some other
# tensor or a silently missing term.
#
# The same seed gives the same mask every time, so a training loop must give each call
# its own seed: two layers or two steps given one seed drop the same elements. PyTorch's own
# generator on a GPU is Philox too: it keeps a seed and an offset, and moves the offset
# forward after each call so that the next call draws new numbers. This kernel leaves
# the choice of seed to its caller.

# %%
# Run it and check it
# -------------------
#
# A random operation cannot be checked against another random operation, so the check
# is exact instead: ``keep_mask`` computes the kernel's mask with ``philox4x32``, the
# plain PyTorch version above, and the kernel's output must match the result. A single
# element dropped or kept wrongly changes the output by a whole element's value, which,
# on random inputs, puts the relative error far above the float32 tolerance.

from kernels.harness.bench import check
from kernels.operations import dropout
from kernels.text.messages import kernels_run_on
from kernels.triton_helpers.runtime import kernel_device

print(kernels_run_on())
for n_elements in (1, 1000, 4097):
    print(check(dropout.BENCHMARK, n_elements))

# %%
# The same seed gives the same mask; another seed, another mask. Two independent masks
# still agree wherever both keep or both drop an element, so they differ on about
# ``2 p (1 - p)`` of the elements, not on all of them. The share of zeros is close to
# ``p``.

x = torch.randn(2**18, device=kernel_device())
first = dropout.dropout(x, p=0.3, seed=42)
again = dropout.dropout(x, p=0.3, seed=42)
other = dropout.dropout(x, p=0.3, seed=43)
print(_("same seed, same output: {same}").format(same=torch.equal(first, again)))
differ = number(f"{(first != other).float().mean().item():.1%}")
print(_("another seed: {share} of the elements differ").format(share=differ))
zeros = number(f"{(first == 0).float().mean().item():.4f}")
print(_("share of zeros with p = 0.3: {share}").format(share=zeros))

# %%
# The memory saved
# ----------------
#
# On a GPU, PyTorch's dropout in training is ``aten.native_dropout``, which returns,
# besides its output, the mask it keeps for the backward pass. Its size, next to what
# this kernel keeps:

output, mask = torch.ops.aten.native_dropout(x, 0.3, True)
kept = _(
    "activations: {x_bytes} bytes; PyTorch keeps a {dtype} mask of {mask_bytes} bytes\n"
    "for backward; this kernel keeps only p and the seed"
)
print(
    kept.format(
        x_bytes=number(f"{x.nbytes:,}"),
        dtype=mask.dtype,
        mask_bytes=number(f"{mask.nbytes:,}"),
    )
)

# %%
# Measure it
# ----------
#
# One float32 vector, of every other power of two from 2**16 to 2**28 elements and of
# two odd lengths, 3,000,001 and 100,000,001; ``p = 0.5``, timed as on the
# :doc:`vector addition page <plot_01_vector_add>`, against PyTorch's dropout and
# ``torch.compile`` of it. The rate counts one read of the input and one write of the
# output, 8 bytes per element: the bytes a dropout must move at least. PyTorch's eager
# dropout also writes its mask, one more byte per element, and that is part of its
# time.

from kernels.figures.plotting import plot_measurement
from kernels.figures.report import results_table
from kernels.harness.bench import measure_or_load

measurement = measure_or_load(dropout.BENCHMARK)
figure = plot_measurement(measurement)
table = results_table(measurement, ceiling_goal=0.85, baseline_goal=1.0)
table

# %%
# Generating random numbers is not free: ten rounds of Philox per call, a quarter of a
# call per element. The table tells whether that arithmetic costs time. Where the
# Triton column comes close to the "copy" column, a copy of the same number of bytes
# timed beside it, the random numbers are computed in the time the memory traffic takes
# anyway, and the kernel saves the mask's memory and traffic for free. The last columns
# compare it with the faster of the two PyTorch baselines, against the goals printed
# above the table. Where the table notes that a copy beat the ceiling, compare the
# kernel with the "copy" column rather than with the ceiling.
#
# .. dropdown:: Engineering notes
#
#    **Why four quarters.** Triton's ``tl.rand`` is simpler, one random float per
#    element, but it runs a whole Philox call for each element and keeps one of the four
#    numbers. Using all four cuts the random-number work per element to a quarter. Each
#    number of a counter serves elements a quarter of a tile apart, rather than four
#    neighbours, so that each quarter is a run of consecutive elements, loaded and
#    stored as a plain tile.
#
#    **Limits.** The launcher refuses tensors of more than ``2**31 - 1`` elements
#    (``MAX_ELEMENTS`` in ``kernels/operations/dropout.py``). The counters do not set that limit:
#    they are 32-bit integers, but each serves four elements, so they stay below
#    ``2**31`` up to ``2**33`` elements, and the element offsets are 64-bit. The seed is
#    a 64-bit integer from 0 to ``2**63 - 1``. With ``p = 1`` every element is dropped
#    and the launcher passes a scale of zero instead of dividing by zero.
#
# Exercises
# ---------
#
# .. exercises:: dropout
#
# Quiz
# ----
#
# .. quiz:: dropout

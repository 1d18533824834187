"""
Fused softmax
=============

How close does a softmax that reads each row once and writes it once get to a copy?

Softmax turns a row of scores into probabilities:
``softmax(x)_i = exp(x_i - max(x)) / sum_j exp(x_j - max(x))``. Subtracting the row's
maximum changes nothing mathematically and keeps ``exp`` from overflowing.

Written out in PyTorch, each step is its own kernel and its own trip through memory:

.. literalinclude:: /kernels/operations/softmax.py
   :pyobject: naive_softmax

This unfused version reads the whole matrix five times (for the maximum, the
subtraction, ``exp``, the sum and the division) and writes it three times. A kernel that
keeps a row on the chip while it works needs one read and one write. PyTorch's own
``torch.softmax``, the baseline timed below, is a single kernel too, and for rows that
fit in its registers or in the 48 KB of shared memory a block gets by default, it also
reads each row once (see ``aten/src/ATen/native/cuda/SoftMax.cu`` in PyTorch's
source). This page asks how close a short Triton kernel gets to the speed of a plain
copy of the same bytes.
"""

# %%
# The plan
# --------
#
# One program per row: a grid of as many programs as the matrix has rows, each program
# holding its whole row as one tile, in registers.
#
# .. code-block:: text
#
#    program r:
#        x = load row r                 # the one read
#        m = max(x)
#        e = exp(x - m)
#        store e / sum(e) into row r    # the one write
#
# The two reductions, the maximum and the sum, work on values the program already holds,
# so they cost no memory traffic.
#
# The kernel
# ----------
#
# .. literalinclude:: /kernels/operations/softmax.py
#    :pyobject: softmax_kernel
#
# .. literalinclude:: /kernels/operations/softmax.py
#    :pyobject: _row_softmax
#
# Step by step:
#
# * ``tl.arange`` needs a power of two, so the tile, ``BLOCK_SIZE``, is the row length
#   rounded up to one. The mask switches off the lanes past the end of the row, and
#   ``other=-float("inf")`` gives them the value minus infinity: it never wins the
#   maximum, and ``exp(-inf) = 0`` adds nothing to the sum.
# * ``EVEN`` is a ``tl.constexpr`` that the launcher sets when the row fills the tile
#   exactly. Then ``(cols < n_cols) | EVEN`` is the constant ``True`` and the compiler
#   removes the mask (what that changes is in the Engineering notes at the end).
# * The row's offset is computed in 64-bit integers (``.to(tl.int64)``), so that
#   ``row * n_cols`` cannot overflow 32 bits on a matrix of ``2**31`` values or more.
# * The arithmetic runs in ``ACC``, float32 (float64 for float64 input), even for
#   half-precision input; the result is rounded to the output's type once, on the store.
# * ``_row_softmax`` divides once per row, ``1.0 / sum``, and multiplies every value by
#   that reciprocal.
#
# Rows longer than 16K values: a persistent kernel
# ------------------------------------------------
#
# A program runs on one *multiprocessor* (SM), one of the GPU's compute units (an H100
# SXM, the GPU of this page's records, has 132, as does an H200), and the programs
# running on a multiprocessor share its 65536 32-bit registers. A row of more than 16K
# values takes a tile of 32K, and 32K float32 values take 32768 registers, half of
# them; with the program's other values, no second program fits beside it. A program
# that holds one row does three things in turn: it waits for the row, reduces it,
# writes it. While it reduces, nothing on its multiprocessor is loading.
#
# So for these rows the launcher starts a *persistent kernel*: a fixed number of
# programs, here one per multiprocessor, each looping over many rows (its first row,
# then every ``num_programs``-th row after it) instead of one program per row. Each
# program issues the load of its next row before it reduces the current one. A GPU load
# does not stop the thread that issues it; only the first use of the loaded value does,
# so the next row can stream in while the current one is reduced and stored:
#
# .. literalinclude:: /kernels/operations/softmax.py
#    :pyobject: softmax_prefetch_kernel
#
# Longer rows: online softmax
# ---------------------------
#
# Rows of more than ``MAX_FUSED_COLS`` (32768) values do not fit in registers. The kernel
# for them walks each row in tiles and reads it twice: a first pass finds the maximum and
# the sum of exponentials, a second pass computes and writes the output. (The
# :doc:`loops lesson </docs/lessons/07_loops>` builds such a walk step by step on a
# simpler fold, the row sum, and times loads issued ahead by hand, as above, against
# ``tl.range``'s pipelining.)
#
# The first pass uses *online softmax* (Milakov and Gimelshein, 2018; FlashAttention
# uses it too): the maximum and the sum in a single read. Walking the row tile by tile,
# keep the largest value seen so far, ``m``, and the sum ``s`` of ``exp(x - m)`` over
# the values seen so far. When a tile raises the maximum to ``m'``, every term already
# in ``s`` was computed against the old ``m`` and is too large by the factor
# ``exp(m' - m)``, so
#
# .. code-block:: text
#
#    m' = max(m, max(tile))
#    s' = s * exp(m - m') + sum(exp(tile - m'))
#
# After the last tile, ``m`` is the row's maximum and ``s`` the softmax's denominator.
# In plain PyTorch, on a row of ten values taken four at a time:

import math

import torch

from kernels.text.messages import _, number

row = torch.tensor(
    [0.5, 2.0, -1.0, 1.5, 3.0, 0.0, 4.0, -2.0, 1.0, 2.5], dtype=torch.float64
)
running_max, running_sum = -math.inf, 0.0
for tile in row.split(4):
    new_max = max(running_max, tile.max().item())
    running_sum = running_sum * math.exp(running_max - new_max)
    running_sum += torch.exp(tile - new_max).sum().item()
    running_max = new_max
    print(
        _("tile {tile}: m = {m}, s = {s}").format(
            tile=tile.tolist(), m=running_max, s=f"{running_sum:.6f}"
        )
    )
whole = torch.exp(row - row.max()).sum()
print(
    _("the whole row at once:  m = {m}, s = {s}").format(
        m=row.max().item(), s=f"{whole:.6f}"
    )
)

# %%
# The Triton version of that loop is a helper shared with the cross-entropy page:
#
# .. literalinclude:: /kernels/triton_helpers/online_softmax.py
#    :pyobject: online_max_and_sum
#
# Reading the row twice need not cost two reads from memory. A row of 64K bfloat16
# values is 128 KiB; if it is still in the L2 cache (the GPU's cache in front of memory,
# shared by all multiprocessors) when the second pass comes, only the first pass reaches
# memory. *Eviction hints* on the loads (``eviction_policy``) tell the cache which lines
# to keep: ``"evict_last"`` in the first pass asks it to keep the row's lines, and
# ``"evict_first"`` in the second marks them as the first to drop, since they are done
# with.
#
# One more thing decides how the row is read: the length of the row. A thread can load
# 16 bytes with one instruction (8 bfloat16 values, 4 float32), a *vector load*, but
# only from an address that is a multiple of 16, and only when one mask value covers
# all of them. The compiler emits vector loads only where it can prove both. Row ``r``
# of the matrix starts at element ``r * n_cols``. With a vocabulary of 50,257 tokens,
# ``n_cols`` is odd, so most rows start between two 16-byte boundaries, and the mask
# ``start + cols < n_cols`` can change value inside a group of 8. The compiler can prove
# neither, and loads one value per instruction, all along the row.
#
# The fix is to walk such a row in three parts (``kernels/triton_helpers/aligned_rows.py``), with
# ``ALIGN`` the number of values in 16 bytes:
#
# * the *head*: the values before the row's first 16-byte boundary, fewer than
#   ``ALIGN``, loaded with a mask;
# * the *body*: from that boundary on, a whole number of groups of ``ALIGN`` values.
#   ``tl.multiple_of`` tells the compiler that its start is a multiple of ``ALIGN`` (a
#   promise it does not check; ``row_parts`` makes it true). Its length ``body_len`` is
#   a multiple of ``ALIGN`` too, so the mask ``start + cols < body_len`` is the same for
#   every value of a group, and the body loads in vectors;
# * the *tail*: the fewer than ``ALIGN`` values left, loaded with a mask.
#
# In bfloat16, row 1 of a matrix of 50,257 columns starts at element 50,257: its head is
# 7 values, its body starts at element 50,264 (a multiple of 8) and holds 50,248 values,
# and its tail is 2. ``row_parts`` computes the split:
#
# .. literalinclude:: /kernels/triton_helpers/aligned_rows.py
#    :pyobject: row_parts
#
# The looped kernel takes the three-part walk when the launcher passes ``ALIGN`` above 1,
# and the plain walk otherwise. In the first pass, ``online_max_and_sum_unaligned``
# (in ``kernels/triton_helpers/online_softmax.py``) runs the same recurrence over the head, the
# body's tiles and the tail; in the second, ``_softmax_part`` does the work on one part:
#
# .. literalinclude:: /kernels/operations/softmax.py
#    :pyobject: softmax_looped_kernel
#
# .. literalinclude:: /kernels/operations/softmax.py
#    :pyobject: _softmax_part
#
# The launcher
# ------------
#
# The launcher checks its input, picks one of the three kernels by row length and
# launches it. For the looped kernel, ``align_for`` gives ``ALIGN``: the values in 16
# bytes when ``n_cols`` is not a multiple of 16, 1 when it is (Triton tells the compiler
# about multiples of 16 only, so a row length that is a multiple of 8 but not of 16
# takes the walk too). ``num_warps`` sets how many *warps*, groups of 32 threads that execute
# together, run each program; the one-row kernel gives each thread about
# ``VALUES_PER_THREAD`` values of a long row, and a short row at least 4 warps.
#
# .. literalinclude:: /kernels/operations/softmax.py
#    :pyobject: softmax

# %%
# Run it and check it
# -------------------
#
# The check runs each kernel path against ``torch.softmax`` evaluated in float64: rows
# of one value, then rows whose length is not a power of two (a short odd row, a row of
# 20,000 values for the prefetching kernel, and rows long enough for the looped kernel,
# of an odd length, so that they take its three-part walk).

from kernels.harness.bench import check, relative_error
from kernels.operations import softmax
from kernels.text.messages import kernels_run_on
from kernels.triton_helpers.runtime import kernel_device

print(kernels_run_on())
for n_cols in (1, 781, 20000):
    print(check(softmax.BENCHMARK, n_cols))
long_rows = torch.randn(3, softmax.MAX_FUSED_COLS + 4465, device=kernel_device())
error = relative_error(
    softmax.softmax(long_rows), torch.softmax(long_rows.double(), dim=-1)
)
print(
    _("looped kernel, 3 rows of {n} values: relative error {error}").format(
        n=number(f"{long_rows.shape[1]:,}"), error=number(f"{error:.1e}")
    )
)

# %%
# Measure it
# ----------
#
# 4096 rows of bfloat16 values. The row lengths are powers of two between 256 and
# 262144 (2**18), and the vocabularies of four language models: 32000 (LLaMA 2), 50257
# (GPT-2), 128256 (LLaMA 3) and 151936 (Qwen 2). A model's last layer gives each
# position one score per token of its vocabulary, and a softmax over that row turns the
# scores into probabilities. The rate counts one read and one write of the matrix.
#
# Besides PyTorch and ``torch.compile``, the figure shows the softmax of Liger-Kernel,
# a library of Triton kernels for training language models (``liger_softmax``; the
# ``Liger`` line). In the release recorded here it holds each row in one tile and takes
# rows of at most 65536 values: the lines under the table say where a baseline has no
# rate, and why.

from kernels.figures.plotting import plot_measurement
from kernels.harness.bench import measure_or_load

measurement = measure_or_load(softmax.BENCHMARK)
figure = plot_measurement(measurement)

# %%
# Read the figure
# ---------------
#
# The table lists the sizes where one call moves at least 256 MB, enough work to keep
# every multiprocessor busy, so that the copy ceiling is a fair yardstick.

from kernels.figures.report import results_table

table = results_table(measurement, ceiling_goal=0.85, baseline_goal=1.0)
table

# %%
# The goals are the arguments of ``results_table``: a share of the copy ceiling and
# a ratio to the fastest baseline. The table's header states them, its last
# columns say, size by size, whether the run recorded here met them, and the two lines
# under it sum up. The "copy" column is a plain copy of as many bytes as one call, timed
# the same way: what a kernel that only moves those bytes reaches at that size.
#
# The "Triton vs it" column is measured; its cause is not, on this page. In PyTorch's
# source (``host_softmax``), its softmax reads a row once when the row fits in
# registers, or in the 48 KB of shared memory a block gets by default
# (``sharedMemPerBlock``) and its length is a multiple of the values in 16 bytes;
# otherwise it reads the row three times, for the maximum, the sum and the output (the
# second and third reads may come from L2). In bfloat16, 48 KB hold fewer than 24,576
# values, so each row length of this page from 32,000 values up takes the path of
# three reads. How much of the ratio that explains would take a profile of both
# kernels.
#
# The same benchmark in float16, recorded in a file of its own, at a power of two and
# three vocabularies:

fp16 = measure_or_load(softmax.FP16_BENCHMARK)
fp16_table = results_table(fp16, ceiling_goal=0.85, baseline_goal=1.0)
fp16_table

# %%
# The backward pass
# -----------------
#
# In training, the backward pass brings back ``dy``, the gradient of the loss with
# respect to the softmax's output, and asks for ``dx``, the gradient with respect to its
# input. For one row, with ``y = softmax(x)``, the chain rule gives
#
# .. code-block:: text
#
#    dx = y * (dy - sum(y * dy))
#
# The sum is one number per row, a reduction like the forward pass's maximum and sum.
# The formula needs the output ``y``, not ``x``, so the forward pass keeps ``y`` for
# it. The backward kernel gives each program one row, or several short rows (about
# ``BACKWARD_TILE`` values in all). With ``RELOAD`` (on by default) it reads ``y`` and
# ``dy`` once for the sum and again, from L2 thanks to the eviction hints, for ``dx``,
# so that memory sees about one read of each and one write of ``dx``:
#
# .. literalinclude:: /kernels/operations/softmax.py
#    :pyobject: softmax_backward_kernel
#
# It holds two row-length tiles, of ``y`` and of ``dy``, so rows longer than
# ``BACKWARD_MAX_FUSED_COLS`` values, and rows that leave part of their tile masked from
# ``BACKWARD_MAX_MASKED_COLS`` on, take ``softmax_backward_looped_kernel`` instead,
# which walks the row in tiles twice (once for the sum, once for ``dx``) with the
# eviction hints of the forward pass's looped kernel.
#
# The kernels reach autograd, PyTorch's automatic differentiation, through a
# ``torch.autograd.Function`` (the
# :doc:`lesson on using a kernel inside PyTorch </docs/lessons/06_inside_pytorch>`
# explains it): when ``x`` requires a gradient, ``softmax`` calls it, and
# ``loss.backward()`` runs the backward kernel. ``first_order_only`` turns a request for
# a second derivative, which the kernels cannot give, into an error that says so.
#
# .. literalinclude:: /kernels/operations/softmax.py
#    :pyobject: SoftmaxFunction
#
# The check compares the gradient with PyTorch's evaluated in float64, and
# ``torch.autograd.gradcheck`` compares the backward kernel with finite differences of
# the forward kernel, in float64.

for n_cols in (1, 781):
    print(check(softmax.BACKWARD_BENCHMARK, n_cols))
x = torch.randn(4, 37, dtype=torch.float64, device=kernel_device(), requires_grad=True)
print("gradcheck:", torch.autograd.gradcheck(softmax.softmax, (x,)))

# %%
# Measure the backward pass
# -------------------------
#
# The same 4096 rows, at eight of the forward pass's row lengths. Only the backward
# pass is timed: the forward runs once, then ``backward`` runs again and again on the same
# graph. The rate counts a read of ``y`` and ``dy`` and a write of ``dx``; the goal is
# the ratio to the fastest baseline.

backward = measure_or_load(softmax.BACKWARD_BENCHMARK)
figure = plot_measurement(backward)
table = results_table(backward, baseline_goal=1.0)
table

# %%
# .. dropdown:: Engineering notes
#
#    **The mask and registers.** ptxas, the assembler that turns the PTX Triton emits
#    into the GPU's machine code, decides how many registers each thread gets. With
#    Triton 3.6, the version of the GPU build, it gives ``softmax_kernel`` at 16K values
#    and 8 warps 113 registers a thread with the mask and 80 with ``EVEN`` (compiled for
#    sm_90). A program of 8 warps is 256 threads, so a multiprocessor's 65536 registers
#    hold two such programs at 113 registers a thread and three at 80. In a sweep on an
#    H200 the kernel without the mask was the faster at 16K values, and 8 warps (64
#    values a thread) were faster than 16, which is where ``VALUES_PER_THREAD`` comes
#    from. The counts depend on the compiler: with Triton 3.9, ptxas gives 93 and 91.
#
#    **The division.** In the PTX, ``1.0 / tl.sum(...)`` on float32 is ``div.full.f32``,
#    an approximate division (at most 2 units in the last place off, per NVIDIA's PTX
#    manual); ``tl.math.div_rn`` is the correctly rounded one. With the multiplication
#    that follows, each value can be a few float32 units in the last place away from a
#    correctly rounded quotient, far below the rounding of a bfloat16 output.
#
#    **32K and 64K values.** In earlier builds these sizes fell short of the ceiling
#    goal; the line under the table says whether they did in this one. At 64K values the
#    eviction hints matter: without them the looped kernel was slower in a sweep on an
#    H200 (its comment in ``kernels/operations/softmax.py`` records by how much).
#
#    **Rows of odd length.** The three-part walk of the looped kernel is checked when it
#    is compiled: ``tests/test_compiles_for_gpu.py`` compiles
#    ``softmax_looped_kernel`` for sm_90 on rows of bfloat16 and finds vector loads in
#    its PTX with ``ALIGN=8`` and none with ``ALIGN=1``. It is also timed: the
#    records above are of this code (their fingerprint covers
#    ``kernels/triton_helpers/aligned_rows.py``),
#    and their rows of 50,257 values are odd and longer than ``MAX_FUSED_COLS``, so the
#    looped kernel walks them this way.
#
# Exercises
# ---------
#
# .. exercises:: softmax
#
# Quiz
# ----
#
# .. quiz:: softmax

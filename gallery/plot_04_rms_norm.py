"""
RMSNorm
=======

How close does RMSNorm, the normalisation of LLaMA-style models, get to a copy?

A normalisation layer rescales each *row* of activations, the ``n`` features of one
token, to a standard size. RMSNorm divides the row by its root mean square and
multiplies it by a learned weight, one value per feature:
``y[j] = x[j] / sqrt(mean(x**2) + eps) * weight[j]``, where the mean runs over the row
and ``eps``, a small constant, keeps a row of zeros from dividing by zero. LayerNorm,
on the next page, also subtracts the row's mean and adds a learned bias; RMSNorm does
neither.
"""

# %%
# RMSNorm in PyTorch
# ------------------
#
# Written out in PyTorch, for a tensor ``x`` whose last dimension is the row:
#
# .. code-block:: python
#
#    inv_rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
#    y = x * inv_rms * weight
#
# Run eagerly, each operation is a kernel of its own. Adding ``eps`` and ``rsqrt`` (the
# inverse square root) work on one value per row. The four others make full-size passes
# over the data: ``x.pow(2)`` reads ``x`` and writes its square, ``.mean(-1)`` reads the
# square, the multiplication by the per-row ``inv_rms`` reads ``x`` and writes a
# product, and the multiplication by the weight reads that product and writes ``y``.
# That is seven full-size tensors read or written. A fused kernel, one kernel for the
# whole expression, reads ``x`` once and writes ``y`` once: two. PyTorch also has
# ``torch.nn.functional.rms_norm``; it, ``torch.compile`` of it and Liger-Kernel's
# RMSNorm are the baselines this page times.
#
# The plan
# --------
#
# Each row is held whole, in one line of a tile. A long row is work enough for a
# program; a short one is not (768 values, GPT-2's hidden size, are 1.5 KiB in
# bfloat16), so each program takes ``ROWS`` rows at once, a tile of ``ROWS`` lines of
# ``BLOCK_SIZE`` lanes, and the launcher makes ``ROWS`` larger the shorter the rows:
#
# .. code-block:: text
#
#    for each group of ROWS rows, one program each, in parallel:
#        x = the group's rows of the input                  # loaded once, a 2-D tile
#        inv_rms = 1 / sqrt(sum(x * x) / n + eps)           # one reduction per row
#        the group's rows of the output = x * inv_rms * weight
#
# The kernel
# ----------
#
# .. literalinclude:: /kernels/operations/rms_norm.py
#    :pyobject: rms_norm_kernel
#
# Step by step, leaving two details for later:
#
# * ``rows`` holds the indices of the program's rows: the program id times ``ROWS``,
#   plus ``0, 1, ..., ROWS - 1``. It is made a 64-bit integer so that
#   ``rows * n_cols``, the offset of a row's first element, cannot overflow 32 bits on
#   a large tensor.
# * ``tl.arange`` needs a power of two, so each line of the tile has ``BLOCK_SIZE``
#   lanes, the smallest power of two that holds ``n_cols`` values. The lanes past
#   ``n_cols`` are *padding lanes*: ``col_mask`` keeps them out of the loads and the
#   store. The last program can also have rows past ``n_rows``; ``mask`` combines a
#   row mask with the column mask. ``[:, None]`` makes a column of a 1-D tile and
#   ``[None, :]`` a line, which broadcast to the tile's shape; ``offsets`` is built
#   the same way (see the :doc:`lesson on tiles in 2-D </docs/lessons/03_tiles>`).
# * ``other=0.0`` loads zeros into the padding lanes. A zero adds nothing to the sum of
#   squares, and the mean divides by ``n_cols``, the true length of the row, not by
#   ``BLOCK_SIZE``.
# * ``ACC`` is the type the kernel computes in: float32, or float64 for float64 input.
#   A bfloat16 row is converted on loading, so that the sum of thousands of squares is
#   taken with float32's precision, not bfloat16's.
# * ``tl.sum(x * x, axis=1)`` reduces each line of the tile, one row, to one number;
#   the compiler combines the partial sums of the threads and warps that hold the row.
#   ``inv_rms[:, None]`` makes the ``ROWS`` results a column, so that
#   ``x * inv_rms[:, None]`` scales each row by its own number.
# * The weight is loaded once for all the program's rows, and ``weight[None, :]``
#   lines it up with every row.
# * The output is cast back to the input's type when it is stored.
# * A float32 square overflows beyond about 1.8e19, though such a row normalises to
#   ordinary values. Where a row's sum of squares comes out infinite or NaN,
#   ``overflowed`` says so, and ``_scaled_inverse_root`` takes that row's ``inv_rms``
#   again with the row divided by its largest magnitude first
#   (``kernels/triton_helpers/row_scale.py``
#   explains it). A program with no such row skips that branch, and in one that takes
#   it the other rows keep the ``inv_rms`` they had.
# * ``STATS`` is on when a backward pass will follow: the kernel then stores each row's
#   ``inv_rms`` for it (see the backward pass below).
#
# The two details: the kernel loads its rows a second time after the reduction, with
# ``eviction_policy`` hints, and its column mask has ``| EVEN`` in it. Both are
# optimisations that leave the result unchanged; read the second load as the ``x`` of
# the first, and ``EVEN`` as false. The engineering notes at the end explain them.
#
# Hidden sizes of real models are often not powers of two (768, 5120, 7168, 12288):
# a row of 5120 values sits in a tile of 8192 lanes, 3072 of them padding. The check
# below includes such a length.
#
# The launcher
# ------------
#
# The launcher checks its inputs and launches one program per ``ROWS`` rows: ``x`` is
# contiguous, so its rows lie one after another in memory, and the kernel needs only
# their length to find each one (and their number, for the row mask). The shape of
# the launch comes from ``forward_launch``, worked out once per shape
# (``functools.cache`` keeps the answer for the next call of that shape).
# ``ROWS`` is ``FORWARD_TILE // BLOCK_SIZE``, at least one, ``FORWARD_TILE`` being a
# constant of the module: rows whose ``BLOCK_SIZE`` is smaller go several to a program,
# ``FORWARD_TILE`` lanes in all, and longer rows one to a program.
# ``num_warps``, the number of warps (groups of 32 threads) per program, comes from the
# size of the whole tile, so that each thread holds a few values (``_warps`` in
# ``kernels/operations/rms_norm.py``):
#
# .. literalinclude:: /kernels/operations/rms_norm.py
#    :pyobject: forward_launch
#
# .. literalinclude:: /kernels/operations/rms_norm.py
#    :pyobject: rms_norm

# %%
# Run it and check it
# -------------------
#
# The check compares the kernel with PyTorch evaluated in float64, by the relative
# error, for rows of 1, 781 and 2048 values: a row of one, a row with padding lanes,
# and a row that fills its tile.

from kernels.harness.bench import check
from kernels.operations import rms_norm
from kernels.text.messages import kernels_run_on

print(kernels_run_on())
for n_cols in (1, 781, 2048):
    print(check(rms_norm.BENCHMARK, n_cols))

# %%
# Measure it
# ----------
#
# 16384 rows in bfloat16, timed as on the :doc:`vector addition page
# <plot_01_vector_add>`. The hidden sizes are powers of two between 1024 and 16384, and
# those of four models: 768 (GPT-2), 1600 (GPT-2 XL), 5120 (LLaMA 2 13B) and 7168
# (DeepSeek-V3). The rate counts one read of ``x`` and of the weight, and one write of
# ``y``. Besides ``rms_norm`` and ``torch.compile`` of it, the ``Liger`` line is the
# RMSNorm of Liger-Kernel, a library of Triton kernels for training language models
# (``liger_rms_norm``, with its defaults).

from kernels.figures.plotting import plot_measurement
from kernels.figures.report import results_table
from kernels.harness.bench import measure_or_load

measurement = measure_or_load(rms_norm.BENCHMARK)
figure = plot_measurement(measurement)
table = results_table(measurement, ceiling_goal=0.85, baseline_goal=1.0)
table

# %%
# Per element, RMSNorm does a square, an addition into the sum and two multiplications,
# against 4 bytes moved in bfloat16 (2 read, 2 written). That is too little arithmetic
# to keep the GPU's arithmetic units busy while memory works, so, as for the vector
# addition, memory sets the speed, and the copy ceiling is the yardstick. The "copy"
# column gives a copy of the same number of bytes for comparison, and the last columns
# compare the kernel with the fastest baseline, against the goals printed above the
# table. The lines under the table say where the run recorded here met them.
#
# Other shapes
# ------------
#
# Two more records, each in a file of its own. The first keeps the hidden size at 4096
# and changes the number of rows, from 1000, about a sixteenth of the rows above, to
# 65536, four times as many; its table starts where one call moves 16 MB and judges
# only the ratio to the fastest baseline. The second is the benchmark above in
# float16, judged against both goals.

rows = measure_or_load(rms_norm.ROW_SWEEP_BENCHMARK)
rows_table = results_table(rows, min_work=16e6, baseline_goal=1.0)
rows_table

# %%
fp16 = measure_or_load(rms_norm.FP16_BENCHMARK)
fp16_table = results_table(fp16, ceiling_goal=0.85, baseline_goal=1.0)
fp16_table

# %%
# The backward pass
# -----------------
#
# In training, the backward pass brings back ``dy``, the gradient of the loss with
# respect to ``y``, and asks for the gradients of ``x`` and of the weight. With
# ``x_hat = x * inv_rms``, the row divided by its root mean square, and
# ``g = dy * weight``:
#
# * ``dx = inv_rms * (g - x_hat * mean(g * x_hat))``, the mean over the row: a
#   reduction per row, like the forward pass;
# * ``dweight = sum over rows of dy * x_hat``: a sum over all the rows, per column.
#
# These are LayerNorm's gradients without the terms of its mean and bias, and the
# kernels follow the plan that the :doc:`LayerNorm page <plot_05_layer_norm>` explains:
# a fixed number of programs, each walking over many rows, write ``dx`` and keep
# running sums of ``dweight`` in registers; a small second kernel adds up the programs'
# partial sums. When a gradient is to be computed, the forward pass also stores each
# row's ``inv_rms``, one number per row; the backward pass reads it instead of summing
# the row's squares again, so each row costs it one reduction, not two (the comment in
# ``_backward_tile`` gives what that changed in a sweep on an H200):
#
# .. literalinclude:: /kernels/operations/rms_norm.py
#    :pyobject: rms_norm_backward_kernel
#
# The work on one tile of rows is in two helpers. ``row_tile``, which LayerNorm's
# backward kernel shares, finds the tile: its rows, their mask, and the tile's mask and
# offsets, built as in the forward kernel (RMSNorm uses all four: the rows and their
# mask read the saved ``inv_rms``):
#
# .. literalinclude:: /kernels/triton_helpers/row_tiles.py
#    :pyobject: row_tile
#
# ``_backward_tile`` takes the tile's saved ``inv_rms``, writes the tile's ``dx`` by
# the formula above and adds the tile's share of ``dweight``:
#
# .. literalinclude:: /kernels/operations/rms_norm.py
#    :pyobject: _backward_tile
#
# The kernel has two loops, and the compile-time flag ``PREFETCH`` (the module's
# ``BACKWARD_PREFETCH``, on by default) picks one. The loop under ``else`` reads as the
# plan: load a tile, work on it, go on to the next. The loop under ``if PREFETCH``
# *prefetches*: it loads the next tile of ``x`` and ``dy`` before it works on the
# current one, as the persistent kernel of the :doc:`softmax page <plot_03_softmax>`
# loads its next row. A load does not stop the thread that issues it; only the first use
# of the loaded values does. So the next tile can stream in from memory while the
# current one is reduced and its ``dx`` stored. After a program's last tile, the "next"
# tile lies past ``n_rows``: its mask is all false, and nothing is read. Two tiles of
# rows longer than ``PREFETCH_MAX_COLS`` values do not fit in registers at once: those
# take the loop under ``else``. There the flag ``RELOAD`` (the module's
# ``BACKWARD_RELOAD``, on by default) has the loop read each tile twice, the second
# time from the cache, as the forward kernel does, so that the tile is not held in
# registers through the row's sums.
#
# Rows longer than ``FUSED_BACKWARD_MAX_COLS`` values take two kernels instead, one for
# ``dx`` and one for the weight's gradient, as LayerNorm's do. When ``x`` or the weight
# requires a gradient, ``rms_norm`` goes through a ``torch.autograd.Function`` (the
# :doc:`lesson on using a kernel inside PyTorch </docs/lessons/06_inside_pytorch>`
# explains it), so ``loss.backward()`` runs these kernels.
#
# The check compares both gradients with PyTorch's evaluated in float64, and
# ``torch.autograd.gradcheck`` compares the backward kernels with finite differences of
# the forward kernel, in float64.

import torch

from kernels.triton_helpers.runtime import kernel_device

for n_cols in (3, 781):
    print(check(rms_norm.BACKWARD_BENCHMARK, n_cols))
generator = torch.Generator(device=kernel_device()).manual_seed(0)
inputs = [
    torch.randn(shape, dtype=torch.float64, device=kernel_device(), generator=generator)
    for shape in ((5, 13), (13,))
]
for tensor in inputs:
    tensor.requires_grad_()
print("gradcheck:", torch.autograd.gradcheck(rms_norm.rms_norm, inputs))

# %%
# Measure the backward pass
# -------------------------
#
# The same 16384 rows, at six of the forward pass's hidden sizes. Only the backward pass
# is timed: the forward runs once, then ``backward`` runs again and again on the same
# graph. The rate counts a read of ``x`` and ``dy`` and a write of ``dx`` (the weight
# and its gradient are small); the goal is the ratio to the fastest baseline.
# Liger-Kernel's backward pass writes ``dx`` over ``dy`` by default, one allocation
# fewer; the bytes it moves are the same.

backward = measure_or_load(rms_norm.BACKWARD_BENCHMARK)
figure = plot_measurement(backward)
table = results_table(backward, baseline_goal=1.0)
table

# %%
# .. dropdown:: Engineering notes
#
#    **Registers and occupancy.** A *register* is the fastest storage on the GPU, private
#    to one thread; the values of a tile live in the registers of the threads that hold
#    it. An SM of an H100 or an H200 has 65,536 32-bit registers and holds at most 64
#    warps at a time. The more registers each thread needs (the *register pressure*),
#    the fewer programs fit on an SM together: a program of 16 warps (512 threads) that
#    needs 32 registers per thread takes 16,384 registers, so four fit, while at 64
#    registers per thread only two do. *Occupancy* is the number of warps an SM holds
#    at once, as a share of the most it can hold. A memory-bound kernel wants enough
#    warps on each SM to keep many loads in flight while others wait for memory.
#
#    **The second load.** Without it, the rows would stay in registers from the first
#    load, through the reduction, to the output. Loading them again after the
#    reduction lets the compiler reuse those registers in between. Memory still sees
#    about one read, because the second load finds the rows in cache. Two *eviction
#    hints* make that likely: they tell the cache which data to throw out first when it
#    needs room. The first load marks the rows ``evict_last`` (keep them as long as you
#    can), the second ``evict_first`` (they will not be needed again), and the weight,
#    which every row reads, ``evict_last``. ``torch.compile``'s code generator marks
#    loads the same way when a reduction kernel reads a tensor twice (the ``load``
#    method in ``torch/_inductor/codegen/triton.py``). The double load was kept after
#    measurements on an H200, made when the kernel took one row per program; whether
#    it saves registers depends on the compiler and the tile size.
#
#    **EVEN.** When ``n_cols`` is a power of two, a line of the tile holds the row
#    exactly, the launcher sets ``EVEN``, and ``(cols < n_cols) | EVEN`` is the constant
#    ``True``. ``EVEN`` is a ``tl.constexpr``, so this case is a kernel of its own,
#    compiled without the comparison and without *predicates*, the per-thread
#    true-or-false flags that switch a masked load or store off for the lanes outside
#    the mask. The row mask stays, but it is the same all along a row, so it does not
#    stop the compiler from loading neighbouring values of a row with one wide
#    instruction.
#
#    **Rows per program.** A reduction ends with the warps of a program waiting for
#    each other while their partial sums are combined, and every program loads the
#    weight. For a short row these are a large part of a program's work; a program of
#    several rows shares them out. ``FORWARD_TILE``, the number of values a program
#    takes, and ``FORWARD_VALUES_PER_THREAD``, which sets its warps, were chosen by
#    sweeps on an H200; the comments above them in ``kernels/operations/rms_norm.py`` give what
#    each value measured.
#
#    **Prefetching.** It has a price in registers: the next tile's ``x`` and ``dy``
#    are held, in the input's type, beside the tile being worked on, which can leave
#    room for fewer programs on a multiprocessor. ``BACKWARD_PREFETCH`` keeps both
#    loops so that they can be compared. On an H200 the prefetching loop was the faster
#    one wherever two tiles fit in registers; for rows of 16384 values they do not, the
#    compiler spills them to memory, and that loop ran many times slower, hence
#    ``PREFETCH_MAX_COLS``. The module's comments give the measurements.
#
# Exercises
# ---------
#
# .. exercises:: rms_norm
#
# Quiz
# ----
#
# .. quiz:: rms_norm

"""
LayerNorm, forward and backward
===============================

Can a Triton LayerNorm, backward pass included, run at the speed of memory?

LayerNorm is :doc:`RMSNorm <plot_04_rms_norm>` with two more terms: it subtracts each
row's mean before scaling, and adds a bias per feature after. Each row of activations
is normalised to zero mean and unit variance, then scaled and shifted:
``y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias``. Composed from PyTorch
operations it is a kernel for the mean, kernels for the variance, and kernels to
centre, scale, multiply and add, each reading the whole matrix again.
``torch.nn.functional.layer_norm`` is not built that way: it runs PyTorch's own fused
CUDA code. It, ``torch.compile`` of it and the LayerNorm of Liger-Kernel, a library of
Triton kernels for training language models, are the baselines we time. In training the
backward pass runs too, and it moves more bytes than the forward pass.
"""

# %%
# The forward kernel
# ------------------
#
# As for RMSNorm, a program takes ``ROWS`` whole rows, one per line of a tile, and
# several when rows are short (the :doc:`RMSNorm page <plot_04_rms_norm>` explains
# why). This kernel loads its rows once, keeps them in registers through both
# reductions, and writes the result once.
#
# .. code-block:: text
#
#    program p, for its ROWS rows:
#        x = load the rows                              # a (ROWS, BLOCK_SIZE) tile
#        mean = sum(x) / n                              # per row
#        rstd = 1 / sqrt(sum((x - mean)**2) / n + eps)  # per row
#        store (x - mean) * rstd * weight + bias into the rows
#        if STATS: store mean and rstd      # two numbers a row, for the backward pass
#
# .. literalinclude:: /kernels/operations/layer_norm.py
#    :pyobject: layer_norm_forward_kernel
#
# The mean and the variance are two reductions, one after the other, over the values the
# program already holds: first the mean, then the mean of the squared differences from
# it. That is the *two-pass* way to a variance; both passes run over registers, so the
# row is still read from memory once. The one-pass formula ``mean(x**2) - mean(x)**2``
# could sum ``x`` and ``x**2`` together, but it subtracts two large, nearly equal numbers when
# the mean is large next to the spread, and loses precision. (A kernel that does not
# hold the whole row can use *Welford's algorithm* instead: it walks the row once,
# updating a running mean and a running sum of squared differences from it as values
# arrive. This kernel holds the row; the launcher's second forward kernel, below, walks
# it.)
#
# Three details:
#
# * Each reduction runs along a line of the tile (``axis=1``) and gives one number per
#   row. ``mean[:, None]`` makes those numbers a column, which broadcasts against the
#   tile, so each row is centred by its own mean; ``weight[None, :]`` and
#   ``bias[None, :]`` line up with every row. ``mask`` combines a row mask, for the
#   rows past ``n_rows`` in the last program, with the column mask.
# * Padding lanes load 0, and ``tl.where(mask, x - mean[:, None], 0.0)`` keeps them at
#   0 after centring, so they add nothing to the variance; the means divide by the true
#   row length ``n_cols``.
# * ``EVEN`` works as on the :doc:`softmax page <plot_03_softmax>`: when the row fills
#   its line of the tile, the column mask is the constant ``True`` and compiles away.
#   Hidden sizes are often not powers of two (768, 5120, 7168, 12288), and then the
#   mask stays.
#
# The forward kernel can store two numbers per row besides ``y``: the mean and the
# inverse standard deviation ``rstd``. With them and ``x``, the backward pass can
# rebuild the normalised row without reducing it again. They are worth storing only
# when a backward pass will come, so the flag ``STATS`` decides: when no gradient is
# to be recorded, ``layer_norm`` launches the kernel with ``STATS`` off, and nothing is
# written for them (their pointers lead to one spare value, allocated once).
#
# ``STATS`` is an ordinary argument, not a ``tl.constexpr``: the kernel tests it as it
# runs, and one compiled kernel serves both kinds of call. A compile-time flag would
# make two kernels, and the GPU's assembler may schedule two kernels differently: where
# one fuses a multiply and an add into one instruction that rounds once, the other may
# round twice. On an H200 the two results did differ in their last bits, and a result
# should not depend on whether a gradient will be asked for. The price is one test of
# a flag per program, nothing next to reading its rows. As on the RMSNorm page,
# ``forward_launch`` works out the grid and ``ROWS`` once per shape:
#
# .. literalinclude:: /kernels/operations/layer_norm.py
#    :pyobject: forward_launch
#
# Rows of 5120 or 7168 values are not a power of two: in one tile they would be padded
# to 8192 lanes, and the registers of the padding would carry nothing. Rows like them,
# a multiple of ``FORWARD_CHUNK`` values and at least four times it, go to a kernel that
# walks the row in chunks instead, twice: the first pass keeps, in each lane, a running
# mean and sum of squared differences (Welford's update), and merges the lanes at the
# end (the form of the update by Chan and others for groups of values); the second pass
# reads the row again, from the L2 cache, and writes the output:
#
# .. literalinclude:: /kernels/operations/layer_norm.py
#    :start-at: # Rows whose length is not a power of two but a multiple of this many
#    :end-at: FORWARD_CHUNK =
#
# .. literalinclude:: /kernels/operations/layer_norm.py
#    :pyobject: layer_norm_forward_chunked_kernel
#
# The backward kernel
# -------------------
#
# With ``x_hat = (x - mean) * rstd`` and ``g = dy * weight``, the gradients are
#
# * ``dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))``, means over the row: a
#   reduction per row, like the forward pass;
# * ``dweight = sum over rows of dy * x_hat`` and ``dbias = sum over rows of dy``:
#   reductions over *columns*, across all rows.
#
# The first fits the forward kernel's pattern, rows held whole in a tile. The second
# does not: if every row's contribution to ``dweight`` and ``dbias`` were written out,
# the kernel would write two row-sized arrays for them, twice as many values as for
# ``dx``. So the backward kernel is *persistent*, as on the softmax page: a fixed number
# of programs, each walking over many rows (several at a time when rows are short),
# keeps running sums of ``dweight`` and ``dbias`` in registers and writes one partial
# sum of each at the end:
#
# .. literalinclude:: /kernels/operations/layer_norm.py
#    :pyobject: layer_norm_backward_kernel
#
# The work on one tile of rows is in two helpers. ``row_tile`` finds the tile, as in
# RMSNorm's backward pass (``kernels/triton_helpers/row_tiles.py``); here the rows and their mask
# also load each row's ``mean`` and ``rstd``.
#
# ``_backward_tile`` rebuilds ``x_hat`` from the stored ``mean`` and ``rstd``, writes the
# tile's ``dx`` and adds the tile's shares of ``dweight`` and ``dbias``:
#
# .. literalinclude:: /kernels/operations/layer_norm.py
#    :pyobject: _backward_tile
#
# The ``dx`` formula is one helper, shared with a kernel below:
#
# .. literalinclude:: /kernels/operations/layer_norm.py
#    :pyobject: _input_gradient
#
# The kernel has two loops, and the compile-time flag ``PREFETCH`` (the module's
# ``BACKWARD_PREFETCH``, on by default) picks one. The loop under ``else`` loads a tile,
# works on it and goes on to the next. The loop under ``if PREFETCH`` loads the next
# tile of ``x`` and ``dy`` before it works on the current one, as the softmax page's
# persistent kernel loads its next row: a load does not stop the thread that issues it,
# only the first use of the loaded values does, so the next tile can stream in while the
# current one is reduced and its ``dx`` stored. After a program's last tile, the "next"
# tile lies past ``n_rows``: its mask is all false, and nothing is read.
#
# A second, small kernel adds up the partial sums, one strip of columns per program (it
# lives in a module of its own, since the RMSNorm backward pass uses it too):
#
# .. literalinclude:: /kernels/triton_helpers/column_sums.py
#    :pyobject: column_sums_kernel
#
# Long rows: two kernels
# ----------------------
#
# That plan has a limit. Each program's two partial sums are a row long and stay in
# registers beside the row it works on, its gradient and the weight. Past
# ``FUSED_BACKWARD_MAX_COLS`` values they no longer fit (the Engineering notes give the
# register count), so for longer rows the launcher splits the work in two: one kernel
# writes ``dx``, one row per program, and another reads ``x`` and ``dy`` a second time
# in narrow strips of columns, whose partial sums are small:
#
# .. literalinclude:: /kernels/operations/layer_norm.py
#    :pyobject: layer_norm_input_grad_kernel
#
# .. literalinclude:: /kernels/operations/layer_norm.py
#    :pyobject: layer_norm_weight_grads_kernel
#
# Reading the inputs twice moves five row-sized arrays per row instead of three (two
# reads each of ``x`` and ``dy``, one write of ``dx``). The launcher picks the plan by
# row length:
#
# .. literalinclude:: /kernels/operations/layer_norm.py
#    :pyobject: _backward
#
# The kernels are wired into autograd through a ``torch.autograd.Function``, so
# ``layer_norm(x, w, b).backward(dy)`` runs them:
#
# .. literalinclude:: /kernels/operations/layer_norm.py
#    :pyobject: LayerNormFunction
#
# As on the :doc:`dropout page <plot_02_dropout>`, ``first_order_only`` refuses a
# second derivative (which a gradient penalty, for one, needs) by name: autograd cannot
# differentiate what the backward kernels compute.

# %%
# Run it and check it
# -------------------
#
# The forward output and the three gradients are compared with PyTorch in float64, and
# ``torch.autograd.gradcheck`` compares the backward kernels with finite differences of
# the forward kernel, in float64.

import torch

from kernels.harness.bench import check
from kernels.operations import layer_norm
from kernels.text.messages import kernels_run_on
from kernels.triton_helpers.runtime import kernel_device

print(kernels_run_on())
for n_cols in (3, 781):
    print(check(layer_norm.BENCHMARK, n_cols))
    print(check(layer_norm.BACKWARD_BENCHMARK, n_cols))

generator = torch.Generator(device=kernel_device()).manual_seed(0)
inputs = [
    torch.randn(shape, dtype=torch.float64, device=kernel_device(), generator=generator)
    for shape in ((5, 13), (13,), (13,))
]
for tensor in inputs:
    tensor.requires_grad_()
print("gradcheck:", torch.autograd.gradcheck(layer_norm.layer_norm, inputs))

# %%
# Measure the forward pass
# ------------------------
#
# 16384 rows (tokens) in bfloat16. The hidden sizes are the powers of two 1024, 4096,
# 8192 and 16384, and those of four models: 768 (GPT-2), 1600 (GPT-2 XL), 5120 (LLaMA 2 13B) and
# 7168 (DeepSeek-V3).

from kernels.figures.plotting import plot_measurement
from kernels.figures.report import results_table
from kernels.harness.bench import measure_or_load

forward = measure_or_load(layer_norm.BENCHMARK)
figure = plot_measurement(forward)
table = results_table(forward, ceiling_goal=0.85, baseline_goal=1.0)
table

# %%
# Two more records of the forward pass, each in a file of its own and judged the same
# way. The first keeps the hidden size at 4096 and changes the number of rows, from
# 1000, about a sixteenth of the rows above, to 65536, four times as many; its table
# starts where one call moves 16 MB. The second is the benchmark above in float16.

rows = measure_or_load(layer_norm.ROW_SWEEP_BENCHMARK)
rows_table = results_table(rows, min_work=16e6, baseline_goal=1.0)
rows_table

# %%
fp16 = measure_or_load(layer_norm.FP16_BENCHMARK)
fp16_table = results_table(fp16, ceiling_goal=0.85, baseline_goal=1.0)
fp16_table

# %%
# Measure the backward pass
# -------------------------
#
# The same 16384 rows, at six of the forward pass's hidden sizes. Only the backward pass
# is timed: the forward runs once, then ``backward`` runs again and again on the same
# graph. The rate counts a read of ``x`` and ``dy`` and a write of ``dx`` (the weight
# and bias gradients are small).

backward = measure_or_load(layer_norm.BACKWARD_BENCHMARK)
figure = plot_measurement(backward)
table = results_table(backward, baseline_goal=1.0)
table

# %%
# Read the figures
# ----------------
#
# The goals are the arguments of ``results_table``: for the forward pass a share of
# the copy ceiling and a ratio to the fastest baseline, for the backward pass the ratio
# alone. Each table's header states them, and the lines under it say where the run
# recorded here met them.
#
# The forward kernel is one read and one write, the same shape of work as a copy, so
# the "copy" column, a copy of as many bytes as one call timed the same way, is what it
# can hope for at each size. ``torch.compile`` generates a fused kernel of its own; the
# "Triton vs it" column compares the two, size by size.
#
# The backward rate counts three row-sized arrays. At the largest hidden size the
# two-kernel plan moves five, so against that count it can reach three fifths of the
# ceiling at most: its distance from the ceiling there is by construction, and the
# comparison that counts is the one with the baselines. At small hidden sizes, compare
# the main line, the GPU's time alone, with the lighter call-time line of the same
# colour: the gap between them is the time of the host's side of a call (autograd,
# launches, allocations). The goals are judged on the GPU's time, which does not depend
# on the speed of the machine that launches the work.
#
# .. dropdown:: Engineering notes
#
#    **The mask and registers.** ptxas, the assembler that turns the PTX Triton emits
#    into the GPU's machine code, decides how many registers each thread gets. With
#    Triton 3.6, the version of the GPU build, the forward kernel at 8K values and 8
#    warps (256 threads) gets 80 registers a thread with the mask and 64 with ``EVEN``
#    (compiled for sm_90, when the kernel took one row per program): a
#    multiprocessor's 65536 registers hold three such programs with the mask and four
#    without. In a sweep on an H200 the 8K point ran faster without the mask. The kernel
#    has changed since (among other things, it now writes again the rows whose squares
#    overflow): compiled with Triton 3.9 for sm_90, at 8K values of a row length that is
#    a multiple of 16, it takes 64 registers a thread with the mask and 68 with
#    ``EVEN``. The counts depend on the compiler and on the code. The row mask is
#    another matter: it is the same all along a row, so it does not stop the compiler
#    from loading neighbouring values of a row with one wide instruction.
#
#    **Why the fused backward kernel stops at** ``FUSED_BACKWARD_MAX_COLS``. At 16384
#    values the fused kernel would run with 16 warps, 512 threads a program. All 512
#    threads of a program run on one multiprocessor at once and share its 65536
#    registers, so each can have at most 65536 / 512 = 128 (255 is the most any thread
#    can have, a limit of the instruction set, not the one that binds here). A row-sized array is
#    16384 / 512 = 32 values a thread, and ``x``, ``dy``, the weight and the two partial
#    sums already make five of them, 160 registers. ptxas (Triton 3.6) gives the kernel
#    128 registers and keeps the rest in a per-thread stack in memory, a *spill*: a
#    264-byte stack frame. In sweeps on an H200 the spilling kernel ran far below the
#    copy ceiling there, and the two-kernel plan was faster. Those counts are of the
#    loop without prefetching; the prefetching loop holds two more row-sized arrays,
#    the next tile's ``x`` and ``dy``.
#
#    **Where torch.compile's forward kernel is ahead** (the forward table's "Triton vs
#    it" column says where). We have no measured explanation. Limiting the
#    registers so that two programs share a multiprocessor, loading the next row early,
#    and reading the row twice as the RMSNorm kernel does did not close the gap in
#    sweeps on an H200.
#
#    **The launcher's choices.** Taking short rows several to a program
#    (``FORWARD_TILE``), the chunked kernel (``FORWARD_CHUNK``) and prefetching in the
#    backward kernel (``BACKWARD_PREFETCH``) were chosen by sweeps on an H200; the
#    comment above each constant in ``kernels/operations/layer_norm.py`` gives what they measured.
#    Leaving out the statistics when no backward pass follows has not been swept.
#    Prefetching has a price in registers: the next tile's ``x`` and ``dy`` are held, in
#    the input's type, beside the tile being worked on, which can leave room for fewer
#    programs on a multiprocessor. The flag keeps both loops so that they can be
#    compared.
#
# Exercises
# ---------
#
# .. exercises:: layer_norm
#
# Quiz
# ----
#
# .. quiz:: layer_norm

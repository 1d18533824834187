"""
FlashAttention
==============

Can attention run at tensor-core speed without ever storing its N x N matrix?

The attention of a transformer is *scaled dot-product attention*. Each head has three
``N x d`` matrices, one row per token of a sequence of ``N`` tokens and ``d`` numbers
per row (the *head dimension*): the queries ``Q``, the keys ``K`` and the values ``V``.
The head computes:

.. code-block:: text

   S = Q K^T / sqrt(d)          # N x N scores: s_ij = (q_i . k_j) / sqrt(d)
   P = softmax(S), row by row   # each query's scores become probabilities over the keys
   O = P V                      # row i of the output: the values weighted by row i of P

Dividing by ``sqrt(d)`` keeps the scores of order one: a dot product of ``d``
independent terms of variance one has variance ``d``. In *causal* attention, the kind
that generates text, query ``i`` attends only to the keys at or before its own
position (``j <= i``; a query attends to itself): the other scores are set to ``-inf``
before the softmax, so their probabilities are zero.

Written as PyTorch operations, attention materialises the N x N probabilities of
every head:

.. literalinclude:: /kernels/operations/attention.py
   :pyobject: attention_probabilities

.. literalinclude:: /kernels/operations/attention.py
   :pyobject: naive_attention

FlashAttention (Dao et al., 2022) computes the same result in tiles and never stores
the N x N matrix. This page builds it in Triton: the forward pass, its causal variant,
and the backward pass that training needs.
"""

# %%
# How big is the matrix?

from kernels.operations import attention
from kernels.text.messages import _, number

for seq_len in (4096, 16384):
    scores = attention.BATCH * attention.HEADS * seq_len**2
    line = _(
        "{batch} sequences x {heads} heads at {tokens} tokens: "
        "{gb} GB for one bfloat16 "
        "copy of the scores"
    )
    print(
        line.format(
            batch=attention.BATCH,
            heads=attention.HEADS,
            tokens=number(f"{seq_len:,}"),
            gb=number(f"{scores * 2 / 1e9:,.1f}"),
        )
    )

# %%
# Tiles of queries and keys
# -------------------------
#
# A program owns a block of ``BLOCK_M`` queries of one head. The grid has two axes:
# ``tl.program_id(0)`` picks the query block, ``tl.program_id(1)`` the head (batch times
# heads in all). The program visits the keys and values in blocks of ``BLOCK_N``. For
# one key block, the scores form a ``BLOCK_M x BLOCK_N`` tile, ``Q_block K_block^T``,
# small enough to live in registers, and its contribution to the output is
# ``P_block V_block``: two products on the tensor cores (the GPU's units for small
# matrix products, see the :doc:`matrix-product page <plot_07_matmul>`).
#
# The difficulty is the softmax: a row's probabilities need the row's maximum and the
# sum of its exponentials over *all* ``N`` keys, and the program has seen them only at
# the end. The :doc:`softmax page <plot_03_softmax>` meets the same problem with rows
# too long for registers and solves it with the *online softmax*: while reading a row
# in tiles, keep the largest value so far ``m`` and the sum so far ``l`` of
# ``exp(x - m)``, and when a tile raises the maximum, multiply the sum by
# ``exp(m - m_new)``, which turns every term already in it into ``exp(x - m_new)``.
# FlashAttention carries the output accumulator ``acc`` through the same rescaling.
# Per query, for each new block of scores ``s`` and its values ``v``:
#
# .. code-block:: text
#
#    m_new = max(m, max over j of s_j)
#    l     = l   * exp(m - m_new) + sum over j of exp(s_j - m_new)
#    acc   = acc * exp(m - m_new) + sum over j of exp(s_j - m_new) * v_j
#    m     = m_new
#
# After the last block, ``acc = sum over all keys of exp(s_j - m) * v_j`` and
# ``l = sum over all keys of exp(s_j - m)``, so ``acc / l`` is exactly the
# softmax-weighted sum of the values: the output row.
#
# The kernel
# ----------
#
# The inner loop folds one block of keys after another into a query block's running
# state:
#
# .. literalinclude:: /kernels/operations/attention.py
#    :pyobject: _attend_to_keys
#
# Step by step:
#
# * the tile of ``K`` is loaded transposed, ``HEAD_DIM x BLOCK_N``, so that
#   ``tile_dot(q, k, ...)`` is ``Q_block K_block^T``; ``tile_dot`` is ``tl.dot`` (only in
#   Triton's CPU interpreter does it widen the tiles first, see the matrix-product page);
# * ``qk_scale`` is ``log2(e) / sqrt(d)``: since ``exp(x) = exp2(x * log2(e))``, one
#   multiplication of the dot products ``q_i . k_j`` by it lets the kernel use ``exp2``,
#   one instruction on the GPU. ``m``, ``l`` and the log-sum-exp below are then in
#   base 2;
# * where a mask is needed, the scores it drops become ``-inf``, which never wins the
#   maximum and whose ``exp2`` is zero, as the softmax page pads its rows;
# * ``p.to(v.dtype)`` rounds the probabilities to bfloat16 for the second product; the
#   accumulator stays float32.
#
# The outer kernel loads its block of queries once, runs the loop, and divides:
#
# .. literalinclude:: /kernels/operations/attention.py
#    :pyobject: attention_forward_kernel
#
# * ``head_offset`` is computed in ``int64``, as the
#   :doc:`lesson on tiles in 2-D </docs/lessons/03_tiles>` explains, so that the
#   offset of a late head cannot overflow 32 bits;
# * ``EVEN`` is a ``tl.constexpr`` (see the
#   :doc:`constexpr lesson </docs/lessons/02_constexpr>`) that the launcher sets when the
#   sequence is a whole number of blocks: then ``_load`` and ``_store`` compile without
#   masks. When it is not (1,500 tokens, say), only the last key block runs past the
#   end: the loop runs over the whole blocks with no mask, then once more over the last,
#   partial block with one. A mask costs a comparison and a select on every score, so
#   a ragged length pays for it in one block instead of all of them;
# * besides the output, the kernel stores one number per query, the log-sum-exp of its
#   scores, ``m + log2(l)``: from it the backward pass recomputes any probability.
#
# Causal attention: skipping blocks
# ---------------------------------
#
# With a causal mask, a key block whose keys all come before the query block's first
# query is wholly visible: the kernel visits it without a mask. The key blocks that
# overlap the query block's own positions hold the diagonal ``j = i``: they are visited
# with the mask ``rows >= cols``. Key blocks after the query block's last query are never
# read. (The launch settings make ``BLOCK_M`` a multiple of ``BLOCK_N``, so these three
# kinds of block do not overlap.)
#
# The query blocks then differ in work: the last attends to every key, the first to one
# block of them. The GPU starts programs roughly in the order of their numbers, so
# ``_query_block`` gives program 0 the last query block: the longest blocks start first
# and the short ones fill the last wave, instead of the longest starting last and
# running alone while the other SMs wait.
#
# .. literalinclude:: /kernels/operations/attention.py
#    :pyobject: _query_block
#
# The cell below draws the plan for a 1,024-token
# sequence with the tiles the kernel uses on the GPU, one character per pair of a query
# block (a row) and a key block (a column).

tiles = attention.GPU_TILES[("forward", attention.HEAD_DIM)]
SEQ_LEN = 1024
visited = 0
for block_m in range(SEQ_LEN // tiles.block_m):
    diagonal = block_m * tiles.block_m  # the block's first query
    row = ""
    for start_n in range(0, SEQ_LEN, tiles.block_n):
        if start_n < diagonal:
            row += "F"  # fully visible: no mask
        elif start_n < diagonal + tiles.block_m:
            row += "M"  # holds the diagonal: masked
        else:
            row += "."  # after every query of the block: skipped
    visited += len(row) - row.count(".")
    last = diagonal + tiles.block_m - 1
    print(
        _("queries {first} to {last}: {row}").format(
            first=number(f"{diagonal:>5,}"), last=number(f"{last:>5,}"), row=row
        )
    )
pairs = (SEQ_LEN // tiles.block_m) * (SEQ_LEN // tiles.block_n)
line = _("BLOCK_M = {block_m}, BLOCK_N = {block_n}: {visited} of {pairs} pairs visited")
print(
    line.format(
        block_m=tiles.block_m, block_n=tiles.block_n, visited=visited, pairs=pairs
    )
)

# %%
# When the sequence is a whole number of blocks, only the ``M`` blocks pay for the
# comparisons, and the visited pairs approach half of all pairs as the sequence grows.
# The rate below counts causal attention as half the work of full attention: the
# visible half of the score matrix.
#
# The backward pass
# -----------------
#
# Training needs the gradients of the loss with respect to ``Q``, ``K`` and ``V``, given
# ``dO``, its gradient with respect to the output. Writing ``dX`` for the gradient with
# respect to ``X``:
#
# .. code-block:: text
#
#    dV = P^T dO
#    dP = dO V^T
#    dS = P * (dP - delta)     # element by element; delta_i = sum over j of P_ij dP_ij
#    dQ = dS K / sqrt(d)
#    dK = dS^T Q / sqrt(d)
#
# ``dS`` is the gradient of the softmax, and ``delta_i`` equals
# ``sum over d of O_id dO_id``, one number per query that a small kernel computes first
# (``attention_delta_kernel``). ``P`` is never stored: each tile of it is recomputed from
# the dot products and the log-sum-exp saved by the forward pass,
# ``P_ij = exp2((q_i . k_j) * qk_scale - lse_i)``.
#
# Two kernels share the work so that every output tile has one owner. One owns a block
# of keys (and their values), walks all query blocks, and accumulates ``dK`` and ``dV``
# in registers. Everything in it is computed transposed, keys along the rows, so that
# the products land in the shape of ``dK`` and ``dV``:
#
# .. literalinclude:: /kernels/operations/attention.py
#    :pyobject: _key_block_gradients
#
# The other owns a block of queries, walks all key blocks, and accumulates ``dQ``:
#
# .. literalinclude:: /kernels/operations/attention.py
#    :pyobject: _query_block_gradient
#
# No two programs write the same tile, so no *atomics* are needed (memory operations
# such as ``tl.atomic_add`` that stay correct when several programs add to the same
# address). The price is arithmetic. For each pair of a query block and a key block,
# the first kernel does four products (``S^T = K Q^T``, ``dV += P^T dO``,
# ``dP^T = V dO^T``, ``dK += dS^T Q``) and the second three (``S = Q K^T``,
# ``dP = dO V^T``, ``dQ += dS K``): seven, where ``S`` and ``dP`` computed once would
# make five. Causal attention skips the same blocks as in the forward pass.
#
# Run it and check it
# -------------------
#
# Against the formula in float64 (evaluated one head at a time so that it fits in
# memory at 16K tokens): the forward pass without a mask, and the gradients of causal
# attention, which run the causal forward pass first. Of the two sequence lengths, 40
# is not a multiple of any block, so the masked edges are checked too.

from kernels.harness.bench import check
from kernels.text.messages import kernels_run_on

print(kernels_run_on())
for spec in (attention.BENCHMARK, attention.CAUSAL_BACKWARD_BENCHMARK):
    for seq_len in spec.interpreter_sizes:
        print(check(spec, seq_len))

# %%
# Measure it
# ----------
#
# 4 sequences of 32 heads of dimension 128 in bfloat16, sequence length from 1K to 16K
# tokens. The baselines are PyTorch's fused attention,
# ``torch.nn.functional.scaled_dot_product_attention`` (SDPA), with each of its
# backends that runs on the machine, forced one at a time: ``flash``, which PyTorch
# has built on FlashAttention-2 since its release 2.2; ``cuDNN``, from NVIDIA's cuDNN
# library; and ``efficient``, the memory-efficient kernels.
#
# Every product of an ``N x d`` by a ``d x N`` matrix, or of ``N x N`` by ``N x d``, is
# ``2 N^2 d`` operations. The rate counts two of them per head for the forward pass,
# ``4 N^2 d`` (half of it when causal), and five for the backward pass (``S`` once,
# ``dP``, ``dV``, ``dK`` and ``dQ``): 2.5 times the forward's work, as FlashAttention's
# own benchmark script counts it. Our backward kernels execute seven products, as
# counted above, so their rate is the conventional work per second, not the arithmetic
# the GPU did. The dashed line is cuBLAS's bfloat16 matrix-product rate measured in
# the same run.

from dataclasses import replace

from kernels.figures.plotting import plot_measurement, plot_peak_memory
from kernels.figures.report import ResultTable, print_peak_memory, results_table
from kernels.harness.bench import measure_or_load
from kernels.harness.measurements import Measurement
from kernels.text.messages import _, number


def judge(measurement: Measurement, goal: float) -> ResultTable:
    """The table judging every length measured against ``goal`` times the fastest
    baseline of the run at each length (its notes say which backends did not run, and
    why), ending with a ranking of every implementation at the longest sequence."""
    table = results_table(measurement, min(measurement.work), baseline_goal=goal)
    if measurement.placeholder:
        return table
    rates = {
        name: values[-1]
        for name, values in measurement.series.items()
        if values[-1] is not None
    }
    ranking = ", ".join(sorted(rates, key=rates.get, reverse=True))
    last = _("At {tokens} tokens, fastest first (kernel time): {ranking}.").format(
        tokens=number(f"{measurement.x[-1]:,}"), ranking=ranking
    )
    return replace(table, notes=[*table.notes, last])


# %%
# Under each figure, the table judges every length measured against the goal printed
# above it, a ratio to the fastest baseline of the run at each size (the table
# names it); the line under the table says where the goal was met, and the last line
# ranks every implementation at the longest sequence. The goals are those the course
# sets itself for attention: 0.9 of the fastest baseline's rate forward, 0.85 backward.

forward = measure_or_load(attention.BENCHMARK)
figure = plot_measurement(forward)
judge(forward, goal=0.9)

# %%
# Causal
# ------

causal = measure_or_load(attention.CAUSAL_BENCHMARK)
figure = plot_measurement(causal)
judge(causal, goal=0.9)

# %%
# What each technique gives
# -------------------------
#
# For causal attention the forward kernel above does four things that a plainer kernel
# would not: it skips the key blocks right of the diagonal, masks only the blocks that
# need a mask (those on the diagonal, and the last one of a ragged sequence), starts the
# longest query blocks first, and runs with the tiles, warps and pipeline stages of a
# sweep. ``kernels/operations/attention_ablation.py`` builds the same kernel from the same pieces
# with a compile-time switch per technique. Each series below takes one thing out, or
# changes one launch setting, and keeps the rest; the first takes nothing out, to show
# that the rebuilt kernel runs as fast as the course's. The table divides each series'
# rate by the course kernel's: what that one thing was worth, at a length of whole
# 128-token blocks, a ragged one and a long one.

from kernels.figures.report import ablation_table
from kernels.operations import attention_ablation

ablation = measure_or_load(attention_ablation.ABLATION_BENCHMARK)
figure = plot_measurement(ablation)
ablation_table(ablation)

# %%
# Backward
# --------
#
# Only ``backward()`` is timed, again and again on a graph built once; the goal is
# printed above each table.

backward = measure_or_load(attention.BACKWARD_BENCHMARK)
figure = plot_measurement(backward)
judge(backward, goal=0.85)

# %%
causal_backward = measure_or_load(attention.CAUSAL_BACKWARD_BENCHMARK)
figure = plot_measurement(causal_backward)
judge(causal_backward, goal=0.85)

# %%
# Memory
# ------
#
# The peak GPU memory that one forward call allocates beyond its inputs, in the same
# run. The fused kernels need the output, and some of them a few numbers per query (the
# Triton kernel keeps no log-sum-exp when no gradient is to be computed), which grows
# with ``N``; the formula in PyTorch needs the N x N scores and probabilities of every
# head, which grow with ``N^2``. Where it does not fit, its line has a gap and the table
# says "out of memory".

figure = plot_peak_memory(forward)
print_peak_memory(forward)

# %%
# Below Triton: Gluon
# -------------------
#
# Triton chooses for us how a tile is spread over the threads, when shared memory is
# filled and when the program waits for a tensor-core product. FlashAttention-3 (Shah et
# al., 2024) gets its speed on Hopper GPUs from making these choices itself: while one
# group of warps computes the softmax of its scores, the tensor cores run the products
# of another. Triton's lower layer, *Gluon* (``triton.experimental.gluon``), lets a
# kernel say all of that. Our Gluon forward kernel, in ``kernels/operations/attention_gluon.py``,
# does the arithmetic of the Triton kernel above with FlashAttention-3's schedule:
#
# * one *loader warp* copies tiles of K and V into a ring of two slots in shared memory
#   with the Tensor Memory Accelerator (TMA), each into a slot that both warpgroups
#   have released, and each copy signals a barrier when its bytes have arrived;
# * two *warpgroups* (4 warps each) own 64 query rows apiece and take turns at the
#   tensor cores: one issues its two products, ``S = Q K^T`` for the next key block
#   and ``O += P V`` for the last one, hands the turn to the other, and runs its softmax
#   while the tensor cores work ("ping-pong");
# * ``warpgroup_mma`` returns before its product is done: ``warpgroup_mma_wait(1, ...)``
#   waits until at most one product is still running, so the scores are ready while
#   ``P V`` goes on;
# * the kernel is *persistent*: it starts one program per multiprocessor, and each
#   walks its share of the work, the loader bringing the next tile's queries and keys
#   while the warpgroups finish the last one.
#
# In a persistent kernel the order of the work matters as much as the schedule. The
# programs at work at once should share heads, so that K and V, which every query
# block of a head reads in full, come from L2 and not from memory; and under a causal
# mask, where a query block near the end of the sequence has many more key blocks than
# one near the start, every program should get the same amount of work. Both come from
# how a program's number maps to its work (the comment gives what the other orders
# measured):
#
# .. literalinclude:: /kernels/operations/attention_gluon.py
#    :pyobject: _unit
#
# One warpgroup's part:
#
# .. literalinclude:: /kernels/operations/attention_gluon.py
#    :pyobject: _attend
#
# Every tensor's layout is written out: ``NVMMADistributedLayout`` is how the tensor
# cores leave an accumulator in the threads' registers, and ``P`` enters the second
# product from registers, in the layout of its left operand. Every wait names its
# barrier and the phase it waits for. The kernel that sets up the shared memory and the
# barriers and starts the three partitions:
#
# .. literalinclude:: /kernels/operations/attention_gluon.py
#    :pyobject: attention_forward_gluon_kernel
#
# That is the price of the control: much more code than the Triton kernel, all of it
# the programmer's to get right (a barrier waited for in the wrong phase hangs the GPU
# instead of raising an error), for one generation of GPUs, and the forward pass only.
# Gluon is experimental, its names change between Triton releases, and it has no
# interpreter: on a machine without a Hopper GPU the cells below draw the recorded
# measurements, and the tests compile the kernel for the H100's architecture and check
# its PTX for the schedule. The Triton kernel stays the course's kernel.
#
# Below, the Gluon kernel is measured beside the Triton kernel and SDPA's cuDNN
# backend, full and causal, at lengths that are whole 128-token blocks and at lengths
# that are not (1,500 and 5,000 tokens). Each table judges it at every size against the
# fastest other implementation there, the Triton kernel included, with the course's
# forward goal, 0.9.

from kernels.figures.report import rival_table
from kernels.operations import attention_gluon

gluon_forward = measure_or_load(attention_gluon.GLUON_BENCHMARK)
figure = plot_measurement(gluon_forward)
rival_table(gluon_forward, "Gluon", goal=0.9)

# %%
gluon_causal = measure_or_load(attention_gluon.GLUON_CAUSAL_BENCHMARK)
figure = plot_measurement(gluon_causal)
rival_table(gluon_causal, "Gluon", goal=0.9)

# %%
# Head dimension 64
# -----------------
#
# Many models use heads of 64 dimensions. Every block of keys then costs half the
# tensor-core work of head dimension 128 for the same softmax (the same number of
# scores to exponentiate, mask and sum), so the exponentials and the bookkeeping weigh
# twice as much against the products. The same comparisons at head dimension 64, at
# the same lengths, whole 128-token blocks and not: the Gluon forward beside the
# Triton forward and cuDNN, then the Triton backward kernels against every SDPA
# backend, each table from the shortest length up.

gluon_d64 = measure_or_load(attention_gluon.GLUON_D64_BENCHMARK)
figure = plot_measurement(gluon_d64)
rival_table(gluon_d64, "Gluon", goal=0.9)

# %%
gluon_d64_causal = measure_or_load(attention_gluon.GLUON_D64_CAUSAL_BENCHMARK)
figure = plot_measurement(gluon_d64_causal)
rival_table(gluon_d64_causal, "Gluon", goal=0.9)

# %%
backward_d64 = measure_or_load(attention.D64_BACKWARD_BENCHMARK)
figure = plot_measurement(backward_d64)
judge(backward_d64, goal=0.85)

# %%
causal_backward_d64 = measure_or_load(attention.D64_CAUSAL_BACKWARD_BENCHMARK)
figure = plot_measurement(causal_backward_d64)
judge(causal_backward_d64, goal=0.85)

# %%
# What the numbers say
# --------------------
#
# The tables give, size by size, Triton's rate against the fastest of SDPA's backends,
# forward and backward, causal or not, and the verdict lines say where the goals were
# met. The ranking lines place the Triton kernels among all the implementations
# measured. The memory figure is the other half of the story:
# every fused kernel needs memory in proportion to ``N``, the formula in proportion to
# ``N^2``.
#
# .. dropdown:: Engineering notes
#
#    **Launch settings.** The tile sizes, warps and pipeline stages are fixed per
#    kernel and head dimension, chosen from sweeps (bfloat16, 4 x 32 heads) on an H200
#    for head dimension 128 and on an H100 for head dimension 64, at whole and ragged
#    lengths (the comment gives what the candidates ran):
#
#    .. literalinclude:: /kernels/operations/attention.py
#       :start-at: GPU_TILES = {
#       :end-at: }
#
#    Causal masking needs ``BLOCK_M`` to be a multiple of ``BLOCK_N`` in the forward
#    and ``dQ`` kernels, and ``BLOCK_N`` a multiple of ``BLOCK_M`` in the ``dK``/``dV``
#    kernel, so that the masked blocks are exactly those that hold the diagonal.
#
#    **Seven products or five.** A single backward kernel could compute ``S`` and
#    ``dP`` once per pair of blocks, owning a key block as our first kernel does, and
#    add each contribution to ``dQ`` in memory with atomic adds. That saves two of the
#    seven products and costs atomic traffic to ``dQ`` and an order of additions that
#    changes from run to run. We chose two kernels and no atomics; we have not measured
#    the other design on this page.
#
#    **What the Triton kernels leave out.** FlashAttention-3 (Shah et al., 2024),
#    written for Hopper, uses *warp specialisation* (some warps only load tiles while
#    others only compute), the Tensor Memory Accelerator described on the
#    matrix-product page, and a schedule that overlaps the softmax of one tile with the
#    tensor-core products of another. Our Triton kernels leave all of that to what the
#    Triton compiler does by itself; the Gluon section above writes it out for the
#    forward pass. Its backward pass is not written in Gluon here.
#
# Exercises
# ---------
#
# .. exercises:: flash_attention
#
# Quiz
# ----
#
# .. quiz:: flash_attention

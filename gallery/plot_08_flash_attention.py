"""
FlashAttention
==============

Can attention run at tensor-core speed without ever storing its N x N matrix?

Attention computes ``softmax(Q K^T / sqrt(d)) V`` for every head: each of N queries
scores all N keys, the scores of a query become probabilities, and the output is the
probability-weighted sum of the values. Written as three PyTorch operations it
materialises the N x N probabilities of every head:

.. literalinclude:: /kernels/attention.py
   :pyobject: attention_probabilities

.. literalinclude:: /kernels/attention.py
   :pyobject: naive_attention

FlashAttention (Dao et al., 2022) computes the same result in tiles and keeps the
N x N matrix out of memory altogether. Its first implementations were thousands of
lines of CUDA; this page builds it in Triton.
"""

# %%
# How big is the matrix?

from kernels import attention

for seq_len in (4096, 16384):
    scores = attention.BATCH * attention.HEADS * seq_len**2
    print(
        f"{attention.BATCH} sequences x {attention.HEADS} heads at {seq_len:,} tokens: "
        f"{scores * 2 / 1e9:,.1f} GB for one bfloat16 copy of the scores"
    )

# %%
# The online softmax
# ------------------
#
# A program owns a block of queries and visits the keys block by block. It cannot
# normalise the probabilities before it has seen every key, so it keeps, per query, the
# largest score so far ``m`` and the sum of exponentials so far ``l``, and an output
# accumulator ``acc``. For a new block of scores ``s``:
#
# .. code-block:: text
#
#    m_new   = max(m, max over j of s_j)
#    l_new   = l   * exp(m - m_new) + sum over j of exp(s_j - m_new)
#    acc_new = acc * exp(m - m_new) + sum over j of exp(s_j - m_new) * v_j
#
# Whenever the maximum grows, what was accumulated under the old one is scaled down by
# ``exp(m - m_new)``; at the end ``acc / l`` is exactly the softmax-weighted sum. It is the
# recurrence the :doc:`softmax page <plot_03_softmax>` uses for rows too long for
# registers, applied here to a matrix product.
#
# The kernel
# ----------
#
# The inner loop folds one block of keys into a query block's running state:
#
# .. literalinclude:: /kernels/attention.py
#    :pyobject: _attend_to_keys
#
# Two products per block run on tensor cores, ``Q K^T`` and ``P V``; between them the
# probabilities live in registers only. Scores are scaled by ``log2(e) / sqrt(d)`` so that
# the kernel can use ``exp2``, a single instruction on the GPU. The outer kernel loads
# its queries once and chooses which key blocks to visit:
#
# .. literalinclude:: /kernels/attention.py
#    :pyobject: attention_forward_kernel
#
# With a causal mask a query sees only the keys before it. Key blocks left of the
# diagonal are visited without any mask, the diagonal block with one, and blocks to the
# right are skipped: half the work, and no comparisons in the common case. ``EVEN`` is a
# ``tl.constexpr`` that is true when the sequence is a whole number of blocks; then the
# compiled kernel has no bounds checks at all.
#
# The backward pass
# -----------------
#
# Training needs the gradients of Q, K and V. The forward pass stores one number per
# query, the log-sum-exp of its scores, from which any probability can be recomputed
# as ``exp2(score - lse)``. With ``delta_i = sum_d out_id * dout_id``, the gradients are
# ``dV = P^T dO``, ``dS = P * (dO V^T - delta)``, ``dQ = dS K / sqrt(d)`` and
# ``dK = dS^T Q / sqrt(d)``. One kernel owns a block of keys and walks all queries to
# accumulate ``dK`` and ``dV``; another owns a block of queries and walks all keys for
# ``dQ``. Each output tile thus has one owner, and no atomics are needed.
#
# .. literalinclude:: /kernels/attention.py
#    :pyobject: _key_block_gradients
#
# Run it and check it
# -------------------
#
# Forward and backward against the formula in float64 (evaluated one head at a time so
# that it fits in memory at 16K tokens), causal and not, at sequence lengths that are
# not a multiple of the block.

from kernels.bench import check
from kernels.runtime import describe_device

print(f"Kernels run on {describe_device()}.")
for spec in (attention.BENCHMARK, attention.CAUSAL_BACKWARD_BENCHMARK):
    for seq_len in spec.interpreter_sizes:
        print(check(spec, seq_len))

# %%
# Measure it
# ----------
#
# 4 sequences of 32 heads of dimension 128 in bfloat16, sequence length from 1K to 16K
# tokens. The baselines are PyTorch's fused attention,
# ``torch.nn.functional.scaled_dot_product_attention``, with each of its backends that
# runs on the machine (flash, cuDNN, memory-efficient), forced one at a time. The rate
# counts ``4 N^2 d`` operations per head for the forward pass (half of it when causal),
# and 2.5 times that for the backward pass (five products against two). The dashed
# line is cuBLAS's bfloat16 matrix-product rate measured in the same run.

from kernels.bench import measure_or_load
from kernels.measurements import Measurement
from kernels.plotting import plot_measurement, plot_peak_memory
from kernels.report import print_large_sizes, print_peak_memory


def judge(measurement: Measurement, goal: float) -> None:
    """Say which backends did not run, and judge the sizes from 4K tokens up against
    ``goal`` times the flash backend of SDPA."""
    for backend, reason in measurement.unavailable.items():
        print(f"{backend} did not run on this machine ({reason}); its line has gaps.")
    from_4k_tokens = measurement.work[measurement.x.index(4096)]
    print_large_sizes(measurement, from_4k_tokens, baseline_goal=goal, against="SDPA flash")


# %%
# Our goal for the forward pass is 1.3 times the flash backend of SDPA from 4K tokens up.

forward = measure_or_load(attention.BENCHMARK)
figure = plot_measurement(forward)
judge(forward, goal=1.3)

# %%
# Causal
# ------

causal = measure_or_load(attention.CAUSAL_BENCHMARK)
figure = plot_measurement(causal)
judge(causal, goal=1.3)

# %%
# Backward
# --------
#
# Only ``backward()`` is timed, on a graph built once; the goal is the speed of SDPA's
# flash backend.

backward = measure_or_load(attention.BACKWARD_BENCHMARK)
figure = plot_measurement(backward)
judge(backward, goal=1.0)

# %%
causal_backward = measure_or_load(attention.CAUSAL_BACKWARD_BENCHMARK)
figure = plot_measurement(causal_backward)
judge(causal_backward, goal=1.0)

# %%
# Memory
# ------
#
# The peak GPU memory that one forward call allocates beyond its inputs, in the same run:
# the fused kernels need the output and a few numbers per query; the formula in PyTorch
# needs the N x N matrices of every head, and past some length it does not fit at all
# (a gap in its line).

figure = plot_peak_memory(forward)
print_peak_memory(forward)

# %%
# What the numbers say
# --------------------
#
# From 4K tokens up the Triton kernels are well ahead of SDPA's flash backend (which in
# PyTorch is FlashAttention-2, written for the previous GPU generation) and of the
# memory-efficient backend, forward and backward, causal or not; the tables above give
# the ratios of this run. They are not the fastest attention on this GPU: SDPA's cuDNN
# backend, NVIDIA's own kernels for Hopper, is faster still (compare the lines). Closing
# that gap takes Hopper features this page leaves out: warp specialisation (some warps
# only load tiles while others only multiply), tensor-descriptor loads as in the
# matrix-product page, and asynchronous tensor-core instructions overlapped with the
# softmax. Short sequences are slower for everyone: at 1K tokens a program walks only
# eight key blocks, too few for the loads of one block to hide behind the work on another.
#
# The memory figure is the other half of the story. Every fused kernel needs about the
# size of its output; the formula in PyTorch needs the N x N scores of every head, which
# at 16K tokens is most of the H200's 141 GB.
#
# Quiz
# ----
#
# .. quiz:: flash_attention

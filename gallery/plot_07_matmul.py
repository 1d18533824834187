"""
Matrix multiplication
=====================

How close does a Triton kernel of forty lines come to cuBLAS on tensor cores?

A product of two n x n matrices does ``2 n^3`` floating-point operations on ``3 n^2``
numbers. At n = 4096 in bfloat16 that is more than a thousand operations per byte of
input: unlike the kernels of the previous pages, a matrix product is limited by
arithmetic, not by memory, *if* each number that is loaded is used many times before
it leaves the chip. Tiles are how a kernel arranges that, and Triton makes tiles the
unit of programming.
"""

# %%
# The kernel
# ----------
#
# Each program computes one ``BLOCK_M x BLOCK_N`` tile of ``C``. It walks along the
# shared dimension in steps of ``BLOCK_K``: loads a ``BLOCK_M x BLOCK_K`` tile of ``A``
# and a ``BLOCK_K x BLOCK_N`` tile of ``B``, multiplies them with ``tl.dot`` (which the
# compiler maps to the tensor cores' matrix instructions) and adds the product to a
# float32 accumulator that stays in registers for the whole loop.
#
# .. literalinclude:: /kernels/matmul.py
#    :pyobject: matmul_kernel
#
# Each number of a loaded tile of ``A`` is used ``BLOCK_N`` times, each number of ``B``
# ``BLOCK_M`` times: with 128 x 256 tiles a byte fetched from memory feeds hundreds of
# operations. What the kernel does not say is just as telling: it never mentions shared
# memory, the tensor-core instruction shapes, or the asynchronous copies that bring the
# next tiles in while the current ones are multiplied. The compiler does all of that;
# ``num_stages`` (below) only says how many tiles ahead it may load.
#
# Three details:
#
# * rows of ``A`` and columns of ``B`` past the edge of the matrix wrap around
#   (``% M``, ``% N``), so those loads need no mask; the results they feed land outside
#   ``C`` and the masked store drops them. Only the last step along K needs a mask,
#   whose zeros add nothing to the sum;
# * ``tile_dot`` is ``tl.dot`` (on the GPU it is exactly that); in Triton's CPU
#   interpreter it widens bfloat16 tiles to float32 first, because the interpreter
#   multiplies bfloat16 tiles as raw integers:
#
#   .. literalinclude:: /kernels/tile_dot.py
#      :pyobject: tile_dot
#
# * the *epilogue*, the code after the loop, applies an activation to the float32 tile
#   before it is rounded and stored. A ReLU or GELU after a product, as in every MLP, then
#   costs no extra pass over ``C``:
#
#   .. literalinclude:: /kernels/matmul.py
#      :pyobject: gelu_tanh

#
# Tiles by copy engine: the Tensor Memory Accelerator
# ----------------------------------------------------
#
# On Hopper a tile need not be gathered by the threads at all. The Tensor Memory
# Accelerator (TMA) is a copy engine: given a *descriptor* of the matrix (its address,
# shape and strides) and the coordinates of a tile, it copies the tile into shared
# memory by itself, and it fills the parts of a tile that lie outside the matrix with
# zeros. The same kernel with descriptors has no pointer arithmetic and no masks:
#
# .. literalinclude:: /kernels/matmul.py
#    :pyobject: matmul_tma_kernel
#
# A descriptor needs each row to start on a 16-byte boundary, so the launcher uses this
# kernel when the GPU has a TMA and the matrices are aligned (any product whose K and N
# are multiples of 8, for 2-byte types), and the pointer kernel otherwise:
#
# .. literalinclude:: /kernels/matmul.py
#    :pyobject: tma_applies
#
# .. literalinclude:: /kernels/matmul.py
#    :pyobject: matmul
#
# In our sweeps on an H200 (not recorded on this page), the descriptor version was as
# fast or faster for most tile configurations, and its best configuration was a few
# percent faster than the pointer kernel's best: enough to matter when the goal is the
# speed of cuBLAS. The measurements below time the launcher, so they time this kernel.

# %%
# Run it and check it
# -------------------
#
# The check compares with the product computed in float64, at shapes that are not
# multiples of the tile and with each epilogue. The second benchmark size (45) has rows
# that no descriptor accepts, so the pointer kernel is checked too.

import torch

from kernels import matmul
from kernels.bench import check, relative_error
from kernels.runtime import describe_device, kernel_device

print(f"Kernels run on {describe_device()}.")
for n in matmul.BENCHMARK.interpreter_sizes:
    print(check(matmul.BENCHMARK, n))
generator = torch.Generator(device=kernel_device()).manual_seed(0)
a = torch.randn(77, 300, device=kernel_device(), dtype=torch.float16, generator=generator)
# Scaled so that the entries of the product are of order one, as in a network layer.
b = torch.randn(300, 45, device=kernel_device(), dtype=torch.float16, generator=generator)
b /= 300**0.5
for activation in matmul.ACTIVATIONS:
    error = relative_error(
        matmul.matmul(a, b, activation), matmul.torch_matmul(a.double(), b.double(), activation)
    )
    print(f"{activation:>5}(A @ B), 77 x 300 by 300 x 45, float16: relative error {error:.1e}")

# %%
# The order of the tiles
# ----------------------
#
# Which program computes which tile matters. A GPU runs a few hundred programs at a
# time; if they run along a row of tiles, they all need the same tiles of ``A`` but
# every column of ``B``, and the L2 cache (50 MB on an H200) cannot hold them all for
# long. Grouped ordering runs down ``GROUP_M`` tile rows before moving right, so that the
# programs in flight share a few tiles of each matrix:
#
# .. literalinclude:: /kernels/matmul.py
#    :pyobject: grouped_tile
#
# The figure below is drawn from that function itself: a small kernel calls
# ``grouped_tile`` for every program and writes the program's number into its tile.

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from kernels.plotting import TEXT_PT, set_caption, style

TILES = 9
GROUP_M = 3
IN_FLIGHT = 9  # a toy "wave": the first nine programs

fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.6), layout="constrained")
for ax, group_m in zip(axes, (1, GROUP_M), strict=True):
    order = matmul.tile_order(TILES, TILES, group_m).cpu()
    first = order < IN_FLIGHT
    ax.imshow(order, cmap="Blues_r", alpha=0.35)
    for row in range(TILES):
        for col in range(TILES):
            if first[row, col]:
                ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, color="#ff7f0e", alpha=0.6))
            ax.text(col, row, int(order[row, col]), ha="center", va="center", fontsize=TEXT_PT)
    ax.set_title(f"GROUP_M = {group_m}")
    ax.set_xticks([])
    ax.set_yticks([])
    a_tiles = int(first.any(dim=1).sum())
    b_tiles = int(first.any(dim=0).sum())
    print(
        f"GROUP_M={group_m}: the first {IN_FLIGHT} programs read tiles of A from {a_tiles} "
        f"row(s) and tiles of B from {b_tiles} column(s): {a_tiles + b_tiles} strips in all"
    )
style(fig)
set_caption(
    fig,
    f"Program numbers on a grid of {TILES} x {TILES} tiles of C, computed by "
    f"`grouped_tile` in a Triton kernel; the tiles of the first {IN_FLIGHT} programs are "
    "shaded orange.",
)

# %%
# Both orders compute the same tiles; the grouped one asks the cache for fewer of them
# at a time. The effect is largest on large matrices, whose tiles no longer all fit in L2.
#
# Choosing the tiles: ``triton.autotune``
# ---------------------------------------
#
# The best tile shape, number of warps and pipeline depth depend on the GPU and on the
# shape of the product. ``triton.autotune`` compiles each candidate configuration, times
# it on the first call with a new ``(M, N, K)`` and keeps the fastest (the
# :doc:`constexpr lesson </docs/lessons/02_constexpr>` shows why each configuration is
# its own compiled kernel). Our candidates are chosen for Hopper:
#
# .. literalinclude:: /kernels/matmul.py
#    :start-at: # Candidates for Hopper
#    :end-before: # Small tiles for the interpreter
#
# .. literalinclude:: /kernels/matmul.py
#    :start-at: tuned_matmul_kernel = triton.autotune(
#    :end-at: )(matmul_kernel)
#
# In the interpreter the candidates are pruned to one small tile, since timing
# candidates there would time Python.
#
# Measure it
# ----------
#
# Square bfloat16 products from 512 to 8192, Triton (autotuned) against cuBLAS
# (``torch.matmul``). The dashed line is the cuBLAS bfloat16 rate at 8192 measured at the
# end of the same run: on this kind of work the practical ceiling is the vendor library,
# not a datasheet number.

from kernels.bench import measure_or_load
from kernels.plotting import plot_measurement
from kernels.report import print_large_sizes

square = measure_or_load(matmul.BENCHMARK)
figure = plot_measurement(square)

# %%
# Our goal is 95% of cuBLAS's rate at 4096 and 8192; the table judges the sizes from
# 4096 up.

large = print_large_sizes(
    square,
    min_work=matmul.square_flops(4096, torch.bfloat16),
    baseline_goal=0.95,
    against="cuBLAS",
)
if square.fresh:
    print("Configurations autotune chose in this run (descriptor kernel):")
    for key, config in matmul.tuned_matmul_tma_kernel.cache.items():
        print(f"  M, N, K = {key[:3]}: {config}")

# %%
# Read the figure: small products leave most of the GPU idle (a 512 x 512 product has
# only a few dozen tiles for 132 multiprocessors), so neither library gets near the
# ceiling there. Triton is behind cuBLAS there on the GPU's time too, since tiles tuned
# for large products leave even more multiprocessors idle, and far behind in call time
# (the lighter lines): a 512 x 512 product takes microseconds, less than our Python
# launcher spends checking its inputs, building three descriptors and looking up the
# autotuned configuration, while ``torch.matmul`` dispatches from C++. From 4096 up
# the autotuned Triton kernel runs within a few percent of cuBLAS; the table
# above says by how much in this run. The dashed ceiling
# is cuBLAS at 8192 measured at the end of the run, after minutes of work have warmed the
# GPU: a smaller product measured earlier can run above it, because a hot H200 lowers its
# clock to stay within its power limit.
#
# A skinny product
# ----------------
#
# Generating text multiplies a few rows (the tokens of the current step) by large weight
# matrices. Here M grows from 16 to 4096 against a fixed 8192 x 8192 weight.

skinny = measure_or_load(matmul.SKINNY_BENCHMARK)
figure = plot_measurement(skinny)
large = print_large_sizes(skinny, min_work=0, against="cuBLAS")

# %%
# With 16 rows the product does little arithmetic per byte of the weight: it is bound by
# memory (reading 128 MB of weights), and no TFLOP/s figure near the ceiling is
# possible for anyone. Tiles of 64 or 128 rows are also mostly empty there; cuBLAS has
# kernels for such shapes (and splits the long K dimension over several programs), ours
# does not. The gap closes as M grows.
#
# Quiz
# ----
#
# .. quiz:: matmul

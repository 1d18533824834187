"""
Matrix multiplication
=====================

How close does a short Triton kernel come to cuBLAS, NVIDIA's matrix library, on
tensor cores?

The product ``C = A @ B`` of an ``M x K`` matrix ``A`` and a ``K x N`` matrix ``B`` is
the ``M x N`` matrix whose entry ``(i, j)`` is the dot product of row ``i`` of ``A`` and
column ``j`` of ``B``: ``c_ij = sum over k of a_ik * b_kj``. In PyTorch it is
``torch.matmul(a, b)``, or ``a @ b``, which on an NVIDIA GPU calls cuBLAS.

For two ``n x n`` matrices that is ``n^2`` dot products of length ``n``, a multiply and
an add per term: ``2 n^3`` floating-point operations on ``3 n^2`` numbers. At n = 4096
in bfloat16 that is more than a thousand operations per byte of the three matrices.
The kernels of the previous pages do a few operations per byte and wait on memory; a
matrix product can instead be limited by arithmetic, *if* each number that is loaded is
used many times before it leaves the chip. Tiles are how a kernel arranges that.
"""

# %%
# The plan
# --------
#
# Split ``C`` into tiles of ``BLOCK_M x BLOCK_N`` entries and give each tile to one
# *program*, one instance of the kernel; the programs together form the *grid*, here
# one program per tile. A program walks along the shared dimension ``K`` in steps of
# ``BLOCK_K``:
#
# .. code-block:: text
#
#    program for tile (tile_m, tile_n) of C:
#        acc = zeros(BLOCK_M, BLOCK_N), in float32
#        for k0 = 0, BLOCK_K, 2 * BLOCK_K, ... while k0 < K:
#            a = A[rows of the tile, k0 : k0 + BLOCK_K]      # BLOCK_M x BLOCK_K
#            b = B[k0 : k0 + BLOCK_K, columns of the tile]   # BLOCK_K x BLOCK_N
#            acc = acc + a @ b
#        C[rows, columns] = activation(acc), rounded to the output's type
#
# Each number of a loaded tile of ``A`` takes part in ``BLOCK_N`` multiply-adds, each
# number of ``B`` in ``BLOCK_M``. With 128 x 256 tiles a step loads
# ``(128 + 256) x BLOCK_K`` numbers and does ``2 x 128 x 256 x BLOCK_K`` operations:
# about 85 operations per byte of bfloat16 loaded (``128 x 256 / (128 + 256)``),
# whatever ``BLOCK_K`` is.
#
# That is fewer than an H200 needs to keep its *tensor cores* (its units for matrix
# arithmetic, below) busy on data that comes from memory: its datasheet's bfloat16
# tensor-core rate (without sparsity) divided by its memory bandwidth is about two
# hundred operations per byte. The rest of the reuse comes
# from the *L2 cache*, the on-chip cache that all programs share: every program in a row
# of tiles loads the same tiles of ``A``, every program in a column the same tiles of
# ``B``, and a load that finds its data in L2 does not go to memory. "The order of the
# tiles" below arranges for that.
#
# The kernel
# ----------
#
# The kernel is the plan in Triton. Its first line asks ``grouped_tile`` (shown in "The
# order of the tiles") which tile this program computes; for now read it as "program
# ``pid`` gets tile ``(tile_m, tile_n)``". ``rows`` are the rows of ``A`` the tile needs,
# ``cols`` the columns of ``B``; the *strides* (how many elements apart two neighbouring
# rows, or columns, are in memory) turn them into the addresses of a
# ``BLOCK_M x BLOCK_K`` tile of ``A`` and a ``BLOCK_K x BLOCK_N`` tile of ``B``, as in
# the :doc:`lesson on tiles in 2-D </docs/lessons/03_tiles>`:
#
# .. literalinclude:: /kernels/matmul.py
#    :pyobject: matmul_kernel
#
# Step by step:
#
# * ``tl.dot`` multiplies two tiles on the *tensor cores*, units of the GPU that
#   multiply small matrices in one instruction. ``tile_dot`` is ``tl.dot`` (on the GPU
#   it is exactly that); in Triton's CPU interpreter it widens the tiles to float32
#   first, because the interpreter multiplies bfloat16 tiles as raw integers:
#
#   .. literalinclude:: /kernels/tile_dot.py
#      :pyobject: tile_dot
#
# * the accumulator ``acc`` is float32 whatever the inputs are, and it stays in
#   registers for the whole loop: a sum of thousands of products kept in bfloat16 would
#   lose most of its digits;
# * rows of ``A`` and columns of ``B`` past the edge of the matrix wrap around
#   (``% M``, ``% N``), so those loads need no mask: they read real numbers, and the
#   results they feed land outside ``C``, where the masked store drops them. Only the
#   last step along ``K`` needs a mask, and its ``other=0.0`` pads with zeros, which
#   add nothing to the sum;
# * ``a_ptrs += BLOCK_K * stride_ak`` moves the tile of ``A`` one step to the right,
#   ``b_ptrs`` one step down;
# * the *epilogue*, the code after the loop, applies the activation to the float32
#   tile before it is rounded and stored. In a classic MLP a layer is a product
#   followed by an activation such as ReLU or GELU; fused here it costs no extra pass
#   over ``C`` (a gated MLP multiplies two products element by element, which this
#   epilogue does not do):
#
#   .. literalinclude:: /kernels/matmul.py
#      :pyobject: epilogue
#
#   .. literalinclude:: /kernels/matmul.py
#      :pyobject: gelu_tanh
#
# What the kernel does not say is just as telling. Each SM (streaming multiprocessor;
# the H200 has 132 of them) has a *shared memory*, a fast on-chip memory that the
# threads of a program share. The compiler stages the tiles of ``A`` and ``B`` there,
# picks the tensor-core instructions, and issues the loads of the next steps along
# ``K`` while the current step is multiplied. The kernel never mentions any of it; one
# launch setting, ``num_stages`` (below), says how many steps' tiles it may hold.

# %%
# Tiles by copy engine: the Tensor Memory Accelerator
# ----------------------------------------------------
#
# Hopper, the GPU generation of the H100 and H200, added the *Tensor Memory
# Accelerator* (TMA): a copy engine in each SM. Given a *descriptor* of a matrix
# (its address, shape and strides, and the shape of the tiles to move) and the
# coordinates of a tile's corner, it copies the tile into shared memory by itself,
# without the threads computing an address, and it fills the parts of a tile that lie
# outside the matrix with zeros. The same kernel with descriptors has no pointer
# arithmetic and no masks:
#
# .. literalinclude:: /kernels/matmul.py
#    :pyobject: matmul_tma_kernel
#
# A descriptor needs each row to start on a 16-byte boundary and the elements of a row
# to be contiguous, so the launcher uses this kernel when the GPU has a TMA and the
# matrices are aligned (with 2-byte types: any product whose ``K`` and ``N`` are
# multiples of 8), and the pointer kernel otherwise:
#
# .. literalinclude:: /kernels/matmul.py
#    :pyobject: tma_applies
#
# .. literalinclude:: /kernels/matmul.py
#    :pyobject: matmul
#
# The measurements below time the launcher, so on the H200 they time the descriptor
# kernel.

# %%
# Run it and check it
# -------------------
#
# The check compares with the product computed in float64, at shapes that are not
# multiples of the tile and with each epilogue. In the second benchmark size (45) a row
# of 45 bfloat16 numbers is 90 bytes, not a multiple of 16, so no descriptor accepts it
# and the pointer kernel is checked too.

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
# What the launcher accepts
# -------------------------
#
# A linear layer stores its weight ``W`` as ``(out_features, in_features)`` and
# computes ``x @ W.t()``. ``W.t()`` is a view with the strides swapped: its columns,
# not its rows, are contiguous. The pointer kernel takes any strides and could read it
# in place, but the launcher checks, like the other launchers on this site, that its
# inputs are contiguous, and a descriptor needs contiguous rows anyway. So today the
# launcher refuses ``W.t()``, and the caller passes a contiguous copy:

weight = b.t().contiguous()  # (45, 300): a linear layer's weight, out by in
try:
    matmul.matmul(a, weight.t())
except ValueError as error:
    print(f"matmul(a, weight.t()) is refused: {error}")
error = relative_error(matmul.matmul(a, weight.t().contiguous()), a.double() @ weight.double().t())
print(f"matmul(a, weight.t().contiguous()): relative error {error:.1e}")

# %%
# Reading ``W`` in place would take a launcher that passes the view's strides to the
# pointer kernel, and a descriptor kernel that loads tiles of ``W`` and transposes them
# with ``tl.trans``. Until then, a caller that does not keep the copy pays a pass over
# ``W`` on every call.
#
# The order of the tiles
# ----------------------
#
# Which program computes which tile matters for the L2 cache. Programs start roughly in
# the order of their numbers, and an SM runs one program of this kernel at a time, or
# two of the configuration with the smallest buffers: their pipeline buffers (below)
# take from 96 to 192 KiB of its 228 KiB of shared memory. So the H200's 132 SMs run
# between 132 and 264 programs at a time, out of the 2048 tiles of an 8192 x 8192
# product in 128 x 256 tiles. Numbered along the rows of ``C``, the programs in flight
# cover a few rows of tiles: they share the tiles of ``A`` of those rows, but need every
# column of ``B``, which for a large product is more than the L2 cache holds (60 MB on
# an H200, as CUDA reports it). Grouped ordering numbers the tiles down ``GROUP_M`` rows
# of tiles before moving right, so that the programs in flight share a few tile rows of
# ``A`` and a few tile columns of ``B`` (such a remapping of program numbers is also
# called *swizzling*; Triton's ``tl.swizzle2d`` computes the same one):
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
# Both orders compute the same tiles; the grouped one asks the cache for fewer strips
# of ``A`` and ``B`` at a time, as the two lines above count. That matters once the
# strips that the programs in flight read no longer fit in L2 together.
#
# Choosing the tiles: ``triton.autotune``
# ---------------------------------------
#
# Four launch settings decide how the kernel runs: the tile shape (``BLOCK_M``,
# ``BLOCK_N``, ``BLOCK_K``), ``GROUP_M``, ``num_warps``, the number of *warps* (groups of
# 32 threads that execute together) that run one program, and ``num_stages``, the number
# of pipeline buffers: how many steps' tiles of ``A`` and ``B`` a program holds in
# shared memory at once, so that the loads of the next steps are in flight while the
# current one is multiplied. More buffers hide more of the memory's latency and take
# more shared memory. The best choice depends on the GPU and on the shape of the
# product.
#
# ``triton.autotune`` compiles each candidate configuration, times it on the first call
# with a new key (here ``M``, ``N`` and ``K``; the Engineering notes say what else
# enters it) and keeps the fastest for that key (the
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
# (``torch.matmul``). The dashed line is the ceiling: the cuBLAS bfloat16 rate on an
# 8192 x 8192 product, the best of a few timings taken at the end of the same run. On
# this kind of work the practical ceiling is the vendor library, not a datasheet number.

from kernels.bench import measure_or_load
from kernels.plotting import plot_measurement
from kernels.report import results_table

square = measure_or_load(matmul.BENCHMARK)
figure = plot_measurement(square)

# %%
# The table judges the sizes from 4096 up against the goal printed above it, a ratio
# to cuBLAS's rate at the same size.

table = results_table(
    square,
    min_work=matmul.square_flops(4096, torch.bfloat16),
    baseline_goal=0.95,
    against="cuBLAS",
)
if square.fresh:
    print("Configurations autotune chose in this run (descriptor kernel):")
    for key, config in matmul.tuned_matmul_tma_kernel.cache.items():
        print(f"  M, N, K = {key[:3]}: {config}")
table

# %%
# Read the figure as the :doc:`lesson on measuring a kernel </docs/lessons/05_measuring>`
# explains: the darker lines are kernel time, the GPU's time inside the kernels; the
# lighter lines are call time,
# which adds what the host does before and around the launch.
#
# * Small products leave most of the GPU idle: a 512 x 512 product has at most 64 tiles
#   (of 64 x 64, the smallest candidate) for 132 SMs, so neither library gets near the
#   ceiling there.
# * The gap between Triton's two lines is time spent outside the kernel. Our launcher
#   is Python: it checks the inputs, builds three descriptors and looks up the
#   autotuned configuration before each launch. A small product's kernel is too short
#   to hide that; a large one's is not.
# * From 4096 up, the table gives Triton's rate as a share of the ceiling and as a
#   ratio to cuBLAS, and the line under it says at which sizes the goal was met.
# * The ceiling is a measurement too, taken once at the end of the run. A GPU's clock
#   varies with its temperature and power draw, so a product measured earlier in the
#   run can show a rate above the ceiling.
#
# A skinny product
# ----------------
#
# Generating text multiplies a few rows (the tokens of the current step) by large weight
# matrices. Here ``M`` grows from 16 to 4096 against a fixed 8192 x 8192 bfloat16
# weight.

skinny = measure_or_load(matmul.SKINNY_BENCHMARK)
figure = plot_measurement(skinny)
table = results_table(skinny, min_work=0, against="cuBLAS")
table

# %%
# An ``M x 8192`` by ``8192 x 8192`` product reads the 128 MiB weight once and does
# ``2 x M`` operations per weight element, that is ``M`` operations per byte. With 16
# rows that is far below the two hundred or so that the tensor cores need: the product
# waits on memory, and no rate near the ceiling is possible for anyone. Every candidate
# tile also has at least 64 rows, so with 16 rows most of each tile is padding that the
# tensor cores multiply anyway, and the grid is a single row of tiles: at most 128
# programs (with 64-column tiles) for 132 SMs. The table gives Triton's rate and its
# ratio to cuBLAS as ``M`` grows.
#
# .. dropdown:: Engineering notes
#
#    **The autotune key has no dtype for the descriptor kernel.** Triton's autotuner
#    adds to the key (``M``, ``N``, ``K``) the dtype of every argument that has a
#    ``dtype`` attribute. Tensors have one, so the pointer kernel is tuned separately
#    for float16 and bfloat16. A ``TensorDescriptor`` has none, so the descriptor
#    kernel, the one the benchmarks time, keeps one configuration per ``(M, N, K)``:
#    a float16 and a bfloat16 product of the same shape share whichever configuration
#    the first of them chose. ``ACTIVATION`` is in neither kernel's key, so the three
#    epilogues share one configuration too. Fixing it means adding the dtype and the
#    activation to the key in ``kernels/matmul.py``; that changes a kernel module whose
#    records can only be measured again on a GPU, so the limitation stands for now.
#
#    **Descriptor or pointer kernel.** In sweeps on an H200 that this page does not
#    record, the descriptor kernel was as fast as the pointer kernel or faster for most
#    tile configurations, and its best configuration beat the pointer kernel's best.
#    That is why the launcher prefers it whenever ``tma_applies``.
#
#    **Skinny products.** The candidates are the same for every shape: none has fewer
#    than 64 rows per tile, and the kernel has no *split-K* variant, in which several
#    programs each sum a part of ``K`` for the same tile of ``C`` and the partial tiles
#    are added at the end. Split-K gives a product with few tiles more programs to
#    spread over the SMs.
#
# Quiz
# ----
#
# .. quiz:: matmul

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
# That is fewer than an H100, whose records this page shows, needs to keep its *tensor
# cores* (its units for matrix arithmetic, below) busy on data that comes from memory:
# its datasheet's bfloat16 tensor-core rate (without sparsity) divided by its memory
# bandwidth is about three hundred operations per byte (an H200, with faster memory,
# about two hundred). The rest of the reuse comes
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
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: matmul_kernel
#
# Step by step:
#
# * ``tl.dot`` multiplies two tiles on the *tensor cores*, units of the GPU that
#   multiply small matrices in one instruction. ``tile_dot`` is ``tl.dot`` (on the GPU
#   it is exactly that); in Triton's CPU interpreter it widens the tiles to float32
#   first, because the interpreter multiplies bfloat16 tiles as raw integers:
#
#   .. literalinclude:: /kernels/triton_helpers/tile_dot.py
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
#   .. literalinclude:: /kernels/operations/matmul.py
#      :pyobject: epilogue
#
#   .. literalinclude:: /kernels/operations/matmul.py
#      :pyobject: gelu_tanh
#
# What the kernel does not say is just as telling. Each SM (streaming multiprocessor;
# an H100 or H200 has 132 of them) has a *shared memory*, a fast on-chip memory that the
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
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: matmul_tma_kernel
#
# A descriptor needs each row to start on a 16-byte boundary and the elements of a row
# to be contiguous (``A_TRANSPOSED`` and ``B_TRANSPOSED`` are for matrices stored the
# other way round: "What the launcher accepts" below). With 2-byte types, the rows of
# a matrix as stored must then be a multiple of 8 elements long; "Rows off the 16-byte
# boundary", further down, says what the launcher does with those that are not:
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: tma_ready
#
# For large outputs the launcher runs the same kernel made *persistent*: a fixed number
# of programs, two per SM (of which one or two run at a time, as shared memory allows),
# each computing every ``PROGRAMS``-th tile in turn, instead of one program per tile.
# With one program per tile, the tiles come in *waves* of as many programs as the SMs
# hold at once; when the count of tiles is not a multiple of that, the last wave leaves
# most SMs idle. ``flatten=True`` asks Triton to merge the loop over tiles with the loop
# over ``K``, so that a tile's first loads could start while the previous tile's result
# is stored; Triton merges only loops whose inner bounds do not change with the outer
# loop, and the split along ``K`` (below) makes them change, so here the request has no
# effect.
#
# Being persistent does not by itself cure the idle last wave: with one large tile per
# SM at a time, 3072 x 3072 in tiles of 128 x 256 is 288 tiles, two full rounds on an
# H100's 132 SMs and 24 tiles in a third, which takes as long as a full one. So the
# kernel cuts each tile of that last round along K into a few pieces, each a unit of
# work of its own: more SMs share the last round, and it is shorter. Each piece writes
# its partial sum to memory and counts itself in with an atomic add; the piece that
# arrives last adds up all the partial sums, in the order of the pieces (the result
# does not depend on which piece came last), applies the epilogue and stores the tile.
# This is the tail of the *stream-K* idea (Osama et al., 2023), which spreads all of
# the work along K evenly over the SMs:
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: matmul_tma_persistent_kernel
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: _add_up_pieces
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :start-at: # Outputs of at least this many values take the persistent kernel
#    :end-at: MAX_SPLIT =
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: matmul
#
# The measurements below time the launcher: the descriptor kernel for
# outputs smaller than ``PERSISTENT_MIN_OUTPUT``, the persistent one from there up.

# %%
# Run it and check it
# -------------------
#
# The check compares with the product computed in float64, at shapes that are not
# multiples of the tile and with each epilogue. In the second benchmark size (45) a row
# of 45 bfloat16 numbers is 90 bytes, not a multiple of 16, so no descriptor accepts it
# and the pointer kernel is checked too.

import torch

from kernels.harness.bench import check, relative_error
from kernels.operations import matmul
from kernels.text.messages import _, kernels_run_on, number
from kernels.triton_helpers.runtime import kernel_device

print(kernels_run_on())
for n in matmul.BENCHMARK.interpreter_sizes:
    print(check(matmul.BENCHMARK, n))
generator = torch.Generator(device=kernel_device()).manual_seed(0)
a = torch.randn(
    77, 300, device=kernel_device(), dtype=torch.float16, generator=generator
)
# Scaled so that the entries of the product are of order one, as in a network layer.
b = torch.randn(
    300, 45, device=kernel_device(), dtype=torch.float16, generator=generator
)
b /= 300**0.5
for activation in matmul.ACTIVATIONS:
    error = relative_error(
        matmul.matmul(a, b, activation),
        matmul.torch_matmul(a.double(), b.double(), activation),
    )
    line = _("{product}, 77 x 300 by 300 x 45, float16: relative error {error}")
    print(line.format(product=f"{activation:>5}(A @ B)", error=number(f"{error:.1e}")))

# %%
# What the launcher accepts: ``x @ W.t()``
# ----------------------------------------
#
# A linear layer stores its weight ``W`` as ``(out_features, in_features)`` and
# computes ``x @ W.t()``. ``W.t()`` is a view with the strides swapped: its columns,
# not its rows, are contiguous. A contiguous copy would cost a pass over ``W`` on
# every call, so the launcher reads the view in place, as each kernel allows:
#
# * the pointer kernel takes any strides: given the view's, it computes the address of
#   every element of a tile, as Triton's matrix-multiplication tutorial does;
# * a descriptor needs contiguous rows, so the launcher describes ``W`` itself, the
#   view's transpose, and sets ``B_TRANSPOSED``: the kernel loads a
#   ``BLOCK_N x BLOCK_K`` tile of ``W`` and transposes it with ``tl.trans`` before
#   ``tl.dot``, as Triton's persistent-matmul tutorial does. On Hopper the tensor cores
#   read 16-bit tiles from shared memory in either order, so the transpose need not
#   move any data. ``A_TRANSPOSED`` does the same for an ``A`` stored transposed.
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: transposed

x = torch.randn(
    77, 256, device=kernel_device(), dtype=torch.float16, generator=generator
)
weight = torch.randn(
    96, 256, device=kernel_device(), dtype=torch.float16, generator=generator
)
weight /= 256**0.5  # a linear layer's weight, out by in features
out = matmul.matmul(x, weight.t())
path = "descriptor" if matmul.tma_applies(x, weight, out) else "pointer"
error = relative_error(out, x.double() @ weight.double().t())
kernel = _("descriptor kernel") if path == "descriptor" else _("pointer kernel")
line = _("x @ weight.t(), {kernel}, weight read in place: relative error {error}")
print(line.format(kernel=kernel, error=number(f"{error:.1e}")))
# Every third column (of every other row of the weight): no descriptor takes these strides.
x_part, weight_part = x[:, ::3], weight[::2, ::3]
out = matmul.matmul(x_part, weight_part.t())
error = relative_error(out, x_part.double() @ weight_part.double().t())
line = _("x[:, ::3] @ weight[::2, ::3].t(), pointer kernel: relative error {error}")
print(line.format(error=number(f"{error:.1e}")))

# %%
# Gradients
# ---------
#
# Training needs the gradients of ``C = activation(Z)``, ``Z = A @ B``. Given ``dC``,
# the gradient of the loss with respect to ``C``, the backward pass applies the
# activation's derivative element by element, ``dZ = dC * activation'(Z)``, then
# computes two more products: ``dA = dZ @ B^T`` and ``dB = A^T @ dZ``. Each has a
# transposed operand, a view that the launcher reads in place, so the same kernels
# compute them. A ``torch.autograd.Function`` (the
# :doc:`lesson on using a kernel inside PyTorch </docs/lessons/06_inside_pytorch>`
# explains it) wires them in; ``first_order_only`` turns a request for a second
# derivative, which the kernels cannot give, into an error that says so:
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: MatmulFunction
#
# The check compares the gradients with PyTorch's evaluated in float64:

x.requires_grad_()
weight.requires_grad_()
grad = torch.randn(
    77, 96, device=kernel_device(), dtype=torch.float16, generator=generator
)
matmul.matmul(x, weight.t(), "gelu").backward(grad)
x64, weight64 = (t.detach().double().requires_grad_() for t in (x, weight))
matmul.torch_matmul(x64, weight64.t(), "gelu").backward(grad.double())
for name, mine, reference in (
    ("x", x.grad, x64.grad),
    ("weight", weight.grad, weight64.grad),
):
    line = _("gradient of {name} through gelu(x @ weight.t()): relative error {error}")
    print(
        line.format(name=name, error=number(f"{relative_error(mine, reference):.1e}"))
    )

# %%
# The order of the tiles
# ----------------------
#
# Which program computes which tile matters for the L2 cache. Programs start roughly in
# the order of their numbers, and an SM runs one program of this kernel at a time, or
# two of the configuration with the smallest buffers: their pipeline buffers (below)
# take from 96 to 192 KiB of its 228 KiB of shared memory. So the 132 SMs run
# between 132 and 264 programs at a time, out of the 2048 tiles of an 8192 x 8192
# product in 128 x 256 tiles. Numbered along the rows of ``C``, the programs in flight
# cover a few rows of tiles: they share the tiles of ``A`` of those rows, but need every
# column of ``B``, which for a large product is more than the L2 cache holds (50 MB on
# an H100, 60 MB on an H200). Grouped ordering numbers the tiles down ``GROUP_M`` rows
# of tiles before moving right, so that the programs in flight share a few tile rows of
# ``A`` and a few tile columns of ``B`` (such a remapping of program numbers is also
# called *swizzling*; Triton's ``tl.swizzle2d`` computes the same one):
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: grouped_tile
#
# The figure below is drawn from that function itself: a small kernel calls
# ``grouped_tile`` for every program and writes the program's number into its tile.

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from kernels.figures.plotting import TEXT_PT, set_caption, style
from kernels.text.messages import _

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
                ax.add_patch(
                    Rectangle((col - 0.5, row - 0.5), 1, 1, color="#ff7f0e", alpha=0.6)
                )
            ax.text(
                col,
                row,
                int(order[row, col]),
                ha="center",
                va="center",
                fontsize=TEXT_PT,
            )
    ax.set_title(f"GROUP_M = {group_m}")
    ax.set_xticks([])
    ax.set_yticks([])
    a_tiles = int(first.any(dim=1).sum())
    b_tiles = int(first.any(dim=0).sum())
    line = _(
        "GROUP_M={group_m}: the first {programs} programs read tiles of A "
        "from {a} row(s)\n  and tiles of B from {b} column(s): {strips} strips in all"
    )
    print(
        line.format(
            group_m=group_m,
            programs=IN_FLIGHT,
            a=a_tiles,
            b=b_tiles,
            strips=a_tiles + b_tiles,
        )
    )
style(fig)
caption = _(
    "Program numbers on a grid of {tiles} x {tiles} tiles of C, computed by "
    "`grouped_tile` "
    "in a Triton kernel; the tiles of the first {in_flight} programs are shaded orange."
)
set_caption(fig, caption.format(tiles=TILES, in_flight=IN_FLIGHT))

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
# with a new key (here ``M`` rounded up to a power of two, ``N``, ``K``, which operands
# are transposed, the activation and the dtype; the Engineering notes say why) and
# keeps the fastest for that key (the
# :doc:`constexpr lesson </docs/lessons/02_constexpr>` shows why each configuration is
# its own compiled kernel). Our candidates are chosen for Hopper:
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :start-at: # Candidates for Hopper
#    :end-before: # Small tiles for the interpreter
#
# Before timing, the candidates are pruned by the number of rows: a tile taller than
# the product multiplies padding, and a short one pays only where there are few rows.
# In the interpreter they are pruned to one small tile, since timing candidates there
# would time Python:
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: _candidates
#
# The candidates are ranked by their time on the GPU alone. With Triton's default timer,
# ``triton.testing.do_bench``, which records an event before and after each call, two
# H200 builds of the same code chose different configurations for the 1024 x 1024
# product, one of them far slower than cuBLAS; what made the two rankings differ was
# not measured. ``candidate_gpu_time`` replays a CUDA graph of many calls instead, in
# which no Python runs between the kernels:
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: candidate_gpu_time
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :start-at: # One configuration per key
#    :end-at: )(matmul_kernel)
#
# Measure it
# ----------
#
# Square bfloat16 products from 512 to 8192, Triton (autotuned) against cuBLAS
# (``torch.matmul``). The dashed line is the ceiling: the cuBLAS bfloat16 rate on an
# 8192 x 8192 product, the best of a few timings taken at the end of the same run. On
# this kind of work the practical ceiling is the vendor library, not a datasheet number.

from kernels.figures.plotting import plot_measurement
from kernels.figures.report import results_table
from kernels.harness.bench import measure_or_load

square = measure_or_load(matmul.BENCHMARK)
figure = plot_measurement(square)

# %%
# The table judges every size from 1024 up (the course's goal for products whose sides
# are all at least 1024) against the goal printed above it, a ratio to cuBLAS's rate at
# the same size.

table = results_table(
    square,
    # The record's own work at 1024: the table's threshold, not a second model of it.
    min_work=square.work_at(1024),
    baseline_goal=0.95,
    against="cuBLAS",
)
if square.fresh:
    # Both tuners of the run: one program per tile below PERSISTENT_MIN_OUTPUT, the
    # persistent kernel from there up.
    for kernel, tuner in (
        ("descriptor", matmul.tuned_matmul_tma_kernel),
        ("persistent", matmul.tuned_matmul_tma_persistent_kernel),
    ):
        name = (
            _("descriptor kernel") if kernel == "descriptor" else _("persistent kernel")
        )
        print(
            _("Configurations autotune chose in this run ({kernel}):").format(
                kernel=name
            )
        )
        for key, config in tuner.cache.items():
            line = _(
                "  M rounded up, N, K = {sizes}, "
                "A and B transposed = {layout}: {config}"
            )
            print(line.format(sizes=key[:3], layout=key[3:5], config=config))
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
# * The gap between each library's two lines is time on the GPU outside the kernel.
#   At small sizes it is a few microseconds for both, although our launcher is Python:
#   it checks the inputs, looks up the plan that its first call of this shape made
#   (``_tma_plans`` in ``kernels/operations/matmul.py``: the configuration autotune chose, the grid
#   and the descriptors' shapes) and builds the descriptors before each launch. The L2
#   flush before each timed call gives the host time for that (see the lesson). Where
#   Triton's call time jumps far above its kernel time at a single size, the
#   measurements do not say why.
# * From 1024 up, the table gives Triton's rate as a share of the ceiling and as a
#   ratio to cuBLAS, and the line under it says at which sizes the goal was met.
# * The ceiling is a measurement too, taken once at the end of the run. A GPU's clock
#   varies with its temperature and power draw, so a product measured earlier in the
#   run can show a rate above the ceiling.
#
# The linear layer's layout
# -------------------------
#
# The same square products with ``B = W.t()``, the view a linear layer multiplies by,
# from 1024 to 8192. Neither side copies ``W``: cuBLAS, too, reads a transposed
# operand in place. The table judges every size, from 1024 up.

transposed_b = measure_or_load(matmul.NT_BENCHMARK)
table = results_table(
    transposed_b,
    min_work=transposed_b.work_at(1024),
    baseline_goal=0.95,
    against="cuBLAS",
)
table

# %%
# Rows off the 16-byte boundary
# -----------------------------
#
# A hidden size such as 4095, or a square product of size 2047, makes every row of a
# bfloat16 matrix a length that is not a multiple of 16 bytes: a row of 2047 values is
# 4094 bytes, so most rows start between two 16-byte boundaries (one in eight starts on
# one). No descriptor takes such a matrix; Triton's own
# constructor refuses it:

import re

from triton.tools.tensor_descriptor import TensorDescriptor

from kernels.triton_helpers.compiler_output import compile_for_gpu

ragged = torch.zeros(64, 2047, dtype=torch.bfloat16, device=kernel_device())
try:
    TensorDescriptor.from_tensor(ragged, [64, 64])
except (AssertionError, ValueError) as refusal:
    print(f"TensorDescriptor.from_tensor(64 x 2047 bfloat16, tile 64 x 64): {refusal}")

# %%
# The pointer kernel takes any strides, but what it compiles to depends on them. At a
# launch Triton marks each integer argument and each pointer that is a multiple of 16
# (the :doc:`constexpr lesson </docs/lessons/02_constexpr>` shows the mark), and the
# compiler moves a tile in 16-byte pieces only where those marks prove that every
# piece starts on a 16-byte boundary. Here the kernel is compiled for an H200 (sm_90)
# as a launch of an n x n bfloat16 product with the first candidate configuration
# would compile it, once for n = 2048 and once for n = 2047, and its PTX (the assembly
# the GPU's driver compiles further) is searched for two instructions: ``cp.async``, an
# asynchronous 16-byte copy from memory to shared memory, which the loop issues up to
# ``num_stages - 1`` steps ahead, and ``ld.global.b16``, a load of one 2-byte value into a
# register:

POINTER_ARGS = ("a_ptr", "b_ptr", "c_ptr")
SIZE_ARGS = ("M", "N", "K", "M_BUCKET", "stride_am", "stride_bk", "stride_cm")
first = matmul.HOPPER_CONFIGS[0]


def pointer_kernel_ptx(n: int) -> str:
    """PTX of ``matmul_kernel`` for sm_90 as an n x n x n bfloat16 launch
    specializes it: unit strides are constants, and each size, stride or pointer that
    is a multiple of 16 is marked as one."""
    signature = dict.fromkeys(POINTER_ARGS, "*bf16") | dict.fromkeys(SIZE_ARGS, "i32")
    constexprs = {
        "stride_ak": 1,
        "stride_bn": 1,
        "stride_cn": 1,
        "ACTIVATION": "none",
        "A_TRANSPOSED": False,
        "B_TRANSPOSED": False,
        **first.kwargs,
    }
    signature |= dict.fromkeys(constexprs, "constexpr")
    ordered = {name: signature[name] for name in matmul.matmul_kernel.arg_names}
    marked = POINTER_ARGS + (SIZE_ARGS if n % 16 == 0 else ())
    launch = {"num_warps": first.num_warps, "num_stages": first.num_stages}
    return compile_for_gpu(
        f"{matmul.__name__}:matmul_kernel", ordered, constexprs, marked, **launch
    )["ptx"]


for n in (2048, 2047):
    ptx = pointer_kernel_ptx(n)
    copies = len(re.findall(r"cp\.async\.cg\.shared\.global", ptx))
    loads = len(re.findall(r"ld\.global\.b16", ptx))
    line = _(
        "n = {n}: {copies} cp.async (16 bytes each), "
        "{loads} ld.global.b16 (2 bytes each)"
    )
    print(line.format(n=n, copies=copies, loads=loads))

# %%
# With aligned rows, the tiles of ``A`` and ``B`` travel as asynchronous 16-byte copies,
# issued steps ahead of the multiplication that needs them; with unaligned rows, each
# value is a load of its own into registers, and nothing is issued ahead. cuBLAS falls
# at such sizes too (the figure below shows by how much); NVIDIA's documentation of
# cuBLAS names the same condition, pointers and leading dimensions on 16-byte
# boundaries, for its most efficient use of tensor cores.
#
# So the launcher copies such an operand into a buffer whose rows are padded to the
# next 16-byte boundary and reads the copy with TMA. The padding is never read: the
# descriptor has the matrix's own shape, and TMA fills what lies outside it with zeros.
# The copy reads and writes the operand once, which a product repays when it uses each
# value many times; for few rows (a decoding step), it would cost more than the reads
# it speeds up, and the operands are read in place:
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :start-at: # An operand whose rows TMA cannot read in place
#    :end-at: ALIGNED_COPY_MIN_REUSE =
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: aligned_copy
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: _readable_rows
#
# ``C`` is written once per tile, not once per step along ``K``: where its rows are
# unaligned the kernel stores its tiles through pointers, and only that store is
# done 2 bytes at a time:
#
# .. literalinclude:: /kernels/operations/matmul.py
#    :pyobject: _store_tile
#
# Measured: square products whose size is not a multiple of 8, from 1025 to 6143. The
# copies are part of the timed call. ``Triton, no copy`` is the same launcher reading
# every operand in place (``aligned_copies=False``).

unaligned = measure_or_load(matmul.UNALIGNED_BENCHMARK)
figure = plot_measurement(unaligned)
table = results_table(unaligned, min_work=0, baseline_goal=1.0, against="cuBLAS")
table

# %%
# Each library beside itself one size away, where the rows are aligned (the square
# record above):

from kernels.figures.report import neighbour_table

neighbour_table(unaligned, square, ("cuBLAS", "Triton"))

# %%
# The same with ``B = W.t()``, where ``W`` is read as its transpose and copied as
# stored (this record has no line without the copy):

unaligned_nt = measure_or_load(matmul.UNALIGNED_NT_BENCHMARK)
table = results_table(unaligned_nt, min_work=0, baseline_goal=1.0, against="cuBLAS")
table

# %%
# A model's linear layers
# -----------------------
#
# Square products are the textbook case; a model's are not square. Here are the linear
# layers of a 7-billion-parameter transformer (hidden size 4096, MLP width 11008, as in
# Llama 2 7B) applied to 4096 tokens, ``x @ W.t()`` with ``N`` output features: the
# attention's output projection (4096), the MLP's up and gate projections (11008), the
# fused query, key and value projection (12288), and a language-model head over a
# vocabulary of 32000 and of 50257 tokens (GPT-2's, an odd number: ``C``'s rows are
# unaligned there, ``A``'s and ``W``'s are not).

linear = measure_or_load(matmul.LINEAR_BENCHMARK)
table = results_table(linear, min_work=0, baseline_goal=0.95, against="cuBLAS")
table

# %%
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
# rows that is far below the two to three hundred that the tensor cores need: the product
# waits on memory, and no rate near the ceiling is possible for anyone. What counts is
# that the programs stream the weight at the memory's rate. For at most 64 rows the
# candidates include tiles of 16 rows (and from 17 rows on, of 32), which multiply
# little padding, and tiles
# of 32 to 128 columns: at 16 rows the grid is a single row of tiles, 64 to 256 programs
# for 132 SMs; at 64 rows the candidates also include tiles of 64 rows. The table gives
# Triton's rate and its ratio to cuBLAS as ``M`` grows.
#
# .. dropdown:: Engineering notes
#
#    **What the autotune key holds.** Triton's autotuner adds to the key the dtype of
#    every argument that has a ``dtype`` attribute. Tensors have one, so the pointer
#    kernel is tuned separately for float16 and bfloat16; a ``TensorDescriptor`` has
#    none, so the descriptor kernel takes the dtype as an argument, ``DTYPE``, which
#    its key names. Otherwise a float16 and a bfloat16 product of the same shape would
#    share whichever configuration the first of them chose. The layout flags and
#    ``ACTIVATION`` are in the key too, since each changes the compiled kernel.
#    ``M_BUCKET``, ``M`` rounded up to a power of two, stands in for ``M``: a decoding
#    loop whose batch grows by a row would otherwise time every candidate again at
#    each new ``M``. The kernels never read it.
#
#    **GELU in training.** The derivative of GELU needs its input ``Z``, which the fused
#    epilogue never writes to memory. When an input requires a gradient, the forward
#    pass therefore runs the kernel without an activation and applies GELU with
#    PyTorch, as eager PyTorch does; ReLU's derivative needs only the output, so ReLU
#    stays fused. An epilogue that also stored ``Z``, as cuBLASLt's ``GELU_AUX`` does,
#    would save the extra read of ``Z``.
#
#    **Descriptor or pointer kernel.** In sweeps on an H200 that this page does not
#    record, the descriptor kernel was as fast as the pointer kernel or faster for most
#    tile configurations, and its best configuration beat the pointer kernel's best.
#    That is why the launcher prefers it whenever ``tma_applies``.
#
#    **Skinny products.** Tiles of 16 and 32 rows keep the tensor cores from
#    multiplying padding and narrow tiles give the grid more programs, but the skinny
#    products of few rows here (their outputs are below ``PERSISTENT_MIN_OUTPUT``) run
#    one program per tile, and none of their tiles is split along ``K``. In *split-K*,
#    several programs each sum a part of ``K`` for the same tile of ``C`` and the
#    partial tiles are added at the end (the persistent kernel does that only for the
#    tiles of its last, partial round). Split-K gives more programs to a product that
#    has few tiles even when they are narrow: few rows and few columns, with a long
#    ``K``. Tiles of fewer than 64 rows are also too short for Hopper's warp-group
#    instructions, which multiply 64 rows at a time (compiled for sm_90 with tiles of
#    16 rows, the kernel uses the older ``mma.sync`` instead); swapping the operands
#    (computing ``C^T = B^T A^T``, so that the few rows become the short side of the
#    instruction) would use them.
#
# Exercises
# ---------
#
# .. exercises:: matmul
#
# Quiz
# ----
#
# .. quiz:: matmul

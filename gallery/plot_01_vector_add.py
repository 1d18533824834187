"""
Vector addition
===============

How close does a ten-line Triton kernel get to the memory bandwidth of a GPU?

Adding two vectors, ``out[i] = x[i] + y[i]`` for every ``i``, is the "hello world" of
GPU programming; in PyTorch it is ``x + y``. There is one addition per element and
nothing else to compute, so the speed is set by memory: each float32 element costs 12
bytes of traffic, two 4-byte reads and one 4-byte write. This page builds the kernel,
checks it, and compares its speed with PyTorch's and with a plain copy of memory on the
same GPU.
"""

# %%
# The plan
# --------
#
# The lessons introduced the tile model: a kernel is launched as a *grid* of
# *programs*, each program handles one *tile* of ``BLOCK_SIZE`` consecutive elements,
# and the compiler decides how the GPU's threads share the work of a tile. For vector
# addition of ``n`` elements, in pseudo-code:
#
# .. code-block:: text
#
#    for each program pid in 0 .. ceil(n / BLOCK_SIZE) - 1, in parallel:
#        offsets = pid * BLOCK_SIZE + [0, 1, ..., BLOCK_SIZE - 1]
#        inside  = offsets < n                 # the last tile may run past the end
#        out[offsets] = x[offsets] + y[offsets], only where inside
#
# The kernel
# ----------
#
# A Triton kernel is a Python function decorated with ``@triton.jit``:
#
# .. literalinclude:: /kernels/operations/vector_add.py
#    :pyobject: add_kernel
#
# Step by step:
#
# * ``tl.program_id(axis=0)`` says which program this is, from 0 to the grid's size
#   minus one.
# * ``offsets`` is a tile of ``BLOCK_SIZE`` element indices, the ones this program owns.
# * ``mask`` is true for the indices inside the vectors. A masked load reads nothing for
#   the *lanes* (positions of the tile) where the mask is false, and a masked store
#   writes nothing there, so the last tile may run past the end safely.
# * The two ``tl.load`` calls bring a tile of ``x`` and one of ``y`` into the program;
#   ``tl.store`` writes their sum. The sum is computed in float32 and rounded once to
#   the output's type; the comment in the code says why.
#
# ``BLOCK_SIZE`` is a ``tl.constexpr``: it is fixed when the kernel is compiled, which
# lets Triton lay the tile out in registers and issue wide, coalesced loads (the
# :doc:`constexpr lesson </docs/lessons/02_constexpr>` shows the compiler's output).
#
# The launcher
# ------------
#
# The launcher checks its inputs (device, dtype, shape, contiguity) so that a mistake
# gets a clear error instead of a crash or a wrong answer, then launches one program per
# tile. ``cdiv`` divides rounding up, so a partial last tile gets a program too (it is
# ``triton.cdiv`` written in plain Python, which costs less on every call):
#
# .. literalinclude:: /kernels/operations/vector_add.py
#    :pyobject: add
#
# It launches not ``add_kernel`` but a variant of it, ``add_tail_apart_kernel``. The
# :doc:`constexpr lesson </docs/lessons/02_constexpr>` shows why: the GPU loads several
# neighbouring elements with one vector instruction only under one mask value for all of
# them. When the length is not a multiple of 16, Triton cannot prove that, and
# ``add_kernel`` loads one element per instruction. Yet only the last tile can run past
# the end. So the variant asks, once per program, whether its tile lies wholly inside
# the vectors: if so, it loads and stores with no mask, in vectors; if not, it takes
# the masked path of ``add_kernel``:
#
# .. literalinclude:: /kernels/operations/vector_add.py
#    :pyobject: add_tail_apart_kernel
#
# The test depends only on the program's id and the length, which are the same for
# every thread of a program, so all of its threads take the same branch; only the last
# program, when the length leaves it a partial tile, takes the masked one.
#
# When ``x`` or ``y`` requires a gradient, ``add`` goes through ``AddFunction``, a
# ``torch.autograd.Function`` whose backward pass hands the output's gradient to both
# inputs (the :doc:`lesson on using a kernel inside PyTorch </docs/lessons/06_inside_pytorch>`
# explains the pattern).
#
# How many programs run at once? An NVIDIA H100 SXM, the GPU of this page's records,
# has 132 *streaming multiprocessors* (SMs), the units that run programs, as does an
# H200; a program runs on one SM from start to end. The launcher leaves ``num_warps``
# at Triton's default of 4, so each program is 4 *warps* (groups of 32 threads that
# execute together), 128 threads. An SM holds at most 64
# warps at a time, so at most 16 of these programs share an SM, and fewer if they need
# more registers or shared memory than the SM has for 16. A vector of 4,096 elements is
# 4 programs: at most 4 SMs have work, and at least 128 have none. A vector of 2**28
# elements is 262,144 programs, far more than can run at once (at most 16 on each of
# 132 SMs, 2,112): each SM takes a new program whenever one of its programs finishes.

# %%
# Run it and check it
# -------------------
#
# The check compares the kernel with PyTorch evaluated in float64, by the relative error
# ``||out - ref|| / ||ref||``, which must stay within a tolerance set for each dtype
# (printed on each line), at a length that is not a multiple of the block size, so that
# both branches of the kernel run, for each dtype the kernel takes. Without a GPU,
# Triton runs the same kernel in its interpreter on the CPU.

from kernels.harness.bench import check
from kernels.operations import vector_add
from kernels.text.messages import _, kernels_run_on, number

print(kernels_run_on())
for dtype in vector_add.SUPPORTED_DTYPES:
    print(check(vector_add.BENCHMARK, 98_432, dtype=dtype))

# %%
# Measure it
# ----------
#
# On a GPU, the harness checks the providers at each size, then times the Triton
# kernel, PyTorch eager (``x + y``) and ``torch.compile`` of the same expression two
# ways, with the L2 cache (the GPU's last level of cache, shared by all SMs) flushed
# before each call, as the :doc:`lesson on measuring a kernel
# </docs/lessons/05_measuring>` explains:
#
# * *kernel time*, the main lines: how long the GPU works on one call, read from the
#   CUDA profiler, with no time of the host (the Python that prepares and launches the
#   kernel) in it;
# * *call time*, the lighter lines: what a Python caller waits for one call, launch
#   included, timed with ``triton.testing.do_bench``.
#
# Both are medians of many calls. The rate is the 12 bytes per element that one call
# must move, over its time. The lengths are every other power of two from 2**12 to
# 2**28, and two odd lengths, 3,000,001 and 100,000,001: no tile size divides an odd
# length, so the last program's mask switches some of its lanes off, as in real
# models, whose tensors need not come in powers of two.
#
# In the same run, the harness copies a 1 GiB buffer (2**30 bytes read and as many
# written) and takes the best rate of three such copies as the *ceiling*, the dashed
# line. The ceiling is a yardstick, not an upper bound: it is how fast one simple
# memory-bound kernel, a copy, runs on this GPU, measured the same way, and another
# kernel can run faster than it. Without a GPU, the figure is drawn from the file the
# last GPU build recorded, and its caption says so.

from kernels.figures.plotting import plot_measurement
from kernels.harness.bench import measure_or_load

measurement = measure_or_load(vector_add.BENCHMARK)
figure = plot_measurement(measurement)

# %%
# Read the figure
# ---------------
#
# On the left, a small vector cannot keep the GPU busy: a few programs run on a few SMs,
# and every call still pays fixed costs whatever its size (starting the kernel's
# programs, and at least one round trip to memory), so every provider is far from the
# ceiling. The lighter lines add the host: for small vectors a call waits longer for the
# host than the GPU works. Where the lighter Triton line lies below the lighter PyTorch
# one, the likely reason is the host's work: the launcher's checks and Triton's launch
# run in Python, where PyTorch dispatches ``x + y`` in C++. The
# :doc:`measuring lesson </docs/lessons/05_measuring>` reads these call times and says
# why they are a sign rather than a measure. Towards the right, the grid has enough
# programs to keep all of the GPU's memory channels busy, and the curves flatten near
# the ceiling.
#
# The table lists the sizes from 2**24 elements up (12 bytes times 2**24, about 201 MB a
# call), where the bandwidth counts. Each row gives the Triton kernel's share of the
# ceiling, the share a copy of the same number of bytes reached in the same run (the
# "copy" column), and the ratio to the faster of the two PyTorch baselines, against the
# goals printed above the table.

from kernels.figures.report import results_table

table = results_table(
    measurement,
    # The record's own bytes at 2**24 elements: the table's threshold.
    min_work=measurement.work_at(2**24),
    ceiling_goal=0.90,
    baseline_goal=0.95,
)
table

# %%
# Where did the add run above the copy ceiling, if anywhere?

above = [row["size"] for row in table.sizes if row["of_ceiling"] > 1]
if above:
    sizes = "; ".join(number(f"{size:,}") for size in above)
    print(_("Above the copy ceiling at N = {sizes}.").format(sizes=sizes))
elif table.sizes:
    print(_("Below the copy ceiling at every size in the table."))

# %%
# Half precision
# --------------
#
# The same kernel on float16 vectors, 2 bytes an element instead of 4, recorded in a
# file of its own: two large powers of two and the two odd lengths.

fp16 = measure_or_load(vector_add.FP16_BENCHMARK)
fp16_table = results_table(
    fp16,
    min_work=fp16.work_at(2**24),
    ceiling_goal=0.90,
    baseline_goal=0.95,
)
fp16_table

# %%
# The Triton kernel and PyTorch's own kernel for ``x + y`` do the same work, one pass
# over memory, so there is little for either to win over the other: the "Triton vs it"
# column shows how close they are. A hand-written kernel pays off when it does
# something a single PyTorch call does not. The next page, dropout, is also one pass
# over memory, and it keeps no mask for the backward pass where PyTorch stores one;
# later pages fuse several of PyTorch's passes into one.
#
# .. dropdown:: Engineering notes
#
#    **Why can the add run above the copy?** The page does not measure it; two known
#    differences are candidates. A copy reads and writes equal amounts, while the add
#    reads two bytes for each one it writes, and memory need not serve both mixes
#    equally fast. And the copy is another program: for contiguous tensors of one
#    dtype, PyTorch's ``copy_`` hands it to the CUDA driver's device-to-device
#    ``cudaMemcpyAsync`` (``aten/src/ATen/native/cuda/Copy.cu``), not to a kernel like
#    this one. The "copy" column, a copy of the same size timed the same way, is the
#    fairer comparison size by size.
#
#    **Tile size.** On an H200, tiles of 1024 to 8192 elements with 4 to 16 warps ran
#    within noise of each other at 2**24 elements and more, so the smallest tile with
#    Triton's default of 4 warps stays (see the comment on ``BLOCK_SIZE`` in
#    ``kernels/operations/vector_add.py``).
#
# Exercises
# ---------
#
# .. exercises:: vector_add
#
# Quiz
# ----
#
# .. quiz:: vector_add

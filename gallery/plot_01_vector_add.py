"""
Vector addition
===============

How close does a ten-line Triton kernel get to the memory bandwidth of a GPU?

Adding two vectors is the "hello world" of GPU programming. There is almost no
arithmetic in it (one addition per element), so its speed is set by memory alone:
each float32 element costs 12 bytes of traffic, two 4-byte reads and one 4-byte write.
The best any implementation can do is to move those bytes as fast as the GPU can copy
memory, so that is the yardstick on this page.
"""

# %%
# The kernel
# ----------
#
# A Triton kernel is a Python function decorated with ``@triton.jit``. It is launched as
# a grid of *programs*; each program handles one tile of ``BLOCK_SIZE`` consecutive
# elements, and the compiler decides how the GPU's threads share that tile.
#
# .. literalinclude:: /kernels/vector_add.py
#    :pyobject: add_kernel
#
# ``BLOCK_SIZE`` is a ``tl.constexpr``: it is fixed when the kernel is compiled, which
# lets Triton lay the tile out in registers and issue wide, coalesced loads. The mask
# covers the last tile, which runs past the end of the vectors when their length is not
# a multiple of ``BLOCK_SIZE``.
#
# The launcher
# ------------
#
# The launcher checks its inputs (device, dtype, shape, contiguity) so that a mistake
# gets a clear error instead of a crash or a wrong answer, then launches one program per
# tile:
#
# .. literalinclude:: /kernels/vector_add.py
#    :pyobject: add

# %%
# Run it and check it
# -------------------
#
# The check compares the kernel with PyTorch evaluated in float64, by the relative error
# ``||out - ref|| / ||ref||`` (which must stay within a few rounding errors of the
# dtype), at a length that is not a multiple of the block size, for
# each dtype the kernel takes. Without a GPU, Triton runs the same kernel in its
# interpreter on the CPU.

from kernels import vector_add
from kernels.bench import check
from kernels.runtime import describe_device

print(f"Kernels run on {describe_device()}.")
for dtype in vector_add.SUPPORTED_DTYPES:
    print(check(vector_add.BENCHMARK, 98_432, dtype=dtype))

# %%
# Measure it
# ----------
#
# On a GPU, the harness checks every size first, then times the Triton kernel, PyTorch
# eager (``x + y``) and ``torch.compile`` of the same expression two ways, with the L2
# cache flushed before each call:
#
# * *kernel time*, the main lines: how long the GPU works on one call, read from the
#   CUDA profiler, with no time of the host (the Python that prepares and launches the
#   kernel) in it;
# * *call time*, the lighter lines: what a Python caller waits for one call, launch
#   included, timed with ``triton.testing.do_bench``.
#
# Both are medians of many calls. In the same run it copies a 1 GiB buffer to measure
# the ceiling. The rate is the 12 bytes per element that one call must move, over its
# time. Without a GPU, the figure is drawn from the file the last GPU build recorded,
# and its caption says so.

from kernels.bench import measure_or_load
from kernels.plotting import plot_measurement

measurement = measure_or_load(vector_add.BENCHMARK)
figure = plot_measurement(measurement)

# %%
# Read the figure
# ---------------
#
# A small vector cannot keep the GPU busy: a kernel of a few thousand elements runs on a
# handful of its 132 multiprocessors and still pays the fixed latency of starting and
# finishing, so every provider is far from the ceiling on the left. The lighter lines
# add the host: there a call waits far longer for Python and the launch than the GPU
# works, and our launcher, written in Python, costs more than PyTorch's dispatch from
# C++. Past a few million elements, the work is large enough to
# keep all of the GPU's memory channels busy, and the curves flatten near the ceiling.
# The table lists the sizes from 2**24 elements (201 MB a call) up, where the bandwidth
# counts, against the course's goal for this kernel: 90% of the copy ceiling, and
# within 5% of PyTorch.
import torch

from kernels.report import print_large_sizes

large = print_large_sizes(
    measurement,
    min_work=vector_add.bytes_moved(2**24, torch.float32),
    ceiling_goal=0.90,
    baseline_goal=0.95,
)

# %%
# The smallest of these sizes is where the method of measurement weighs most. The
# harness flushes the L2 cache before each call by writing zeros over a buffer larger
# than the cache, so every timed call starts with a cache full of modified data that
# the GPU must write back to memory while the call runs: tens of megabytes of extra
# traffic that the rate does not count. On a call of 201 MB that is a visible share; on
# the gigabyte-sized copy that sets the ceiling it is not. PyTorch's kernel pays the
# same toll, which is why the two stay level; the "copy" column shows what it costs a
# plain copy of the same size.
#
# At the largest sizes the add runs a few percent *above* the copy ceiling. The ceiling
# is a yardstick, measured the same way in the same run, not a law: a 1 GiB copy reads
# and writes equal amounts, while the add reads two bytes for each one it writes and
# moves more in all. This page does not measure which of the two differences matters.
#
# The Triton kernel and PyTorch's own kernel for ``x + y`` do the same thing, one pass
# over memory, and so run at the same speed. The gap between high-level code and
# hand-written kernels opens when an operation needs *several* passes in PyTorch and one
# in a fused kernel; the next pages of the gallery are about exactly that.

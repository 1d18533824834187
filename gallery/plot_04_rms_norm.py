"""
RMSNorm
=======

How close does RMSNorm, the normalisation of LLaMA-style models, get to a copy?

RMSNorm drops LayerNorm's mean and bias and scales each row by the inverse of its root
mean square: ``y = x / sqrt(mean(x**2) + eps) * weight``. Written out in PyTorch,
``x.pow(2)``, ``.mean(-1)``, ``rsqrt``, and two multiplications are five kernels and
five trips through memory; ``torch.nn.functional.rms_norm`` is the baseline we time.
"""

# %%
# The kernel
# ----------
#
# One program per row: load the row, reduce the sum of squares, scale, multiply by the
# weight, write. The padding lanes load zeros, which add nothing to the sum of squares,
# and the mean divides by the true row length.
#
# Two choices come from measurements on an H200, and both are about registers, since
# the fewer a program needs, the more programs share a multiprocessor and the more
# loads are in flight:
#
# * The row is loaded twice: once for the sum of squares, once for the output. The
#   second load finds the row in cache (the first marks it ``evict_last``, the second
#   ``evict_first``), so memory still sees one read, but nothing row-sized has to stay
#   in registers across the reduction. This is what ``torch.compile`` generates for
#   RMSNorm; at 8K values it took our kernel from 94% to 98% of the copy ceiling.
# * When the hidden size is a power of two, the row fills its tile, ``EVEN`` is set and
#   the mask, the constant ``True``, compiles away.
#
# .. literalinclude:: /kernels/rms_norm.py
#    :pyobject: rms_norm_kernel
#
# .. literalinclude:: /kernels/rms_norm.py
#    :pyobject: rms_norm

# %%
# Run it and check it
# -------------------

from kernels import rms_norm
from kernels.bench import check
from kernels.runtime import describe_device

print(f"Kernels run on {describe_device()}.")
for n_cols in (1, 781, 2048):
    print(check(rms_norm.BENCHMARK, n_cols))

# %%
# Measure it
# ----------
#
# 16384 rows; the hidden size grows from 512 to 16384, in bfloat16. The rate counts one
# read of ``x`` and of the weight, and one write of ``y``.

from kernels.bench import measure_or_load
from kernels.plotting import plot_measurement
from kernels.report import print_large_sizes

measurement = measure_or_load(rms_norm.BENCHMARK)
figure = plot_measurement(measurement)
large = print_large_sizes(measurement, ceiling_goal=0.85, baseline_goal=1.0)

# %%
# RMSNorm is the simplest of the norms: one reduction, no second statistic, and no
# bias. Once rows are a few thousand values long, a program moves enough bytes to keep
# memory busy and the kernel runs near the copy ceiling, past our 85% goal. PyTorch's
# eager kernel falls behind at long rows. ``torch.compile`` produces a kernel of the
# same shape as ours (it taught us the second read) and lands in the same place: at 8K
# values both run at the ceiling, so which one is ahead there is a matter of a
# percent, and a run can go either way. The lines under the table say how the run
# recorded here came out.
#
# Quiz
# ----
#
# .. quiz:: rms_norm

"""How the harness times one call on a GPU, two ways, and the machine's ceilings.

*Kernel time* is what the figures plot and the goals judge: the GPU time of one call
with no host time in it. Each timed call follows an L2 flush (zeros written over a
buffer larger than the cache, as ``triton.testing.do_bench`` does), and the durations
of the call's own kernels, memsets and copies are read from the CUDA profiler (CUPTI,
through ``torch.profiler``) and summed. The flush runs on a stream of its own, ordered
with the call by stream waits, so its kernel is told apart from the call's by stream;
the gaps between a call's kernels are left out, so that neither the host's launch time
nor a slow Python launcher can show up in it. The median over the repeats is kept.

*Call time* is what a Python caller pays for one call, launch included:
``triton.testing.do_bench`` with its events around each call, L2 flushed before each,
median. The flush keeps the GPU busy while the host issues the call, so host work
shorter than the flush does not show in call time.

Both are part of every record's fingerprint: a change here makes every record stale.
"""

import statistics
from collections.abc import Callable, Sequence
from typing import Any

import torch

# do_bench settings for call time, in milliseconds of warm-up and of timed repetitions.
WARMUP_MS = 25
REP_MS = 100
# Kernel time: as many profiled calls as fit in KERNEL_REP_MS, within these bounds.
KERNEL_REP_MS = 200
KERNEL_REPEATS = (20, 500)
# Larger than the H200's L2 (60 MB, as CUDA reports it), as do_bench's own flush buffer.
FLUSH_BYTES = 256 * 2**20
# The GPU activities that count as a call's work in the profiler's trace.
GPU_ACTIVITIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
# A ceiling is the best the machine does, and one timing of it can come out low (in one
# H200 build a copy ceiling read 3,805 GB/s where seven others read 4,245-4,250), so it
# is the best of a few timings.
CEILING_TIMINGS = 3


class KernelTimeUnavailable(RuntimeError):
    """The profiler saw no GPU work for a call, or not one group of it per call."""


def _clear_grads(tensors: Sequence[torch.Tensor]) -> None:
    for tensor in tensors:
        tensor.grad = None


def call_time_ms(
    fn: Callable[[], Any], grad_to_none: Sequence[torch.Tensor] = ()
) -> float:
    """Call time of ``fn`` in milliseconds: ``do_bench``'s median, launch included.

    ``grad_to_none``: tensors whose ``.grad`` is cleared before each run, so that a timed
    backward pass writes fresh gradients instead of adding to old ones.
    """
    import triton.testing

    ms = triton.testing.do_bench(
        fn,
        warmup=WARMUP_MS,
        rep=REP_MS,
        grad_to_none=list(grad_to_none) or None,
        return_mode="median",
    )
    return float(ms)


class _Flush:
    """Writes zeros over a buffer larger than the L2 cache, on a stream of its own that
    waits for the caller's stream and is waited for by it."""

    def __init__(self) -> None:
        self.buffer = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        self.stream = torch.cuda.Stream()

    def __call__(self) -> None:
        main = torch.cuda.current_stream()
        self.stream.wait_stream(main)
        with torch.cuda.stream(self.stream):
            self.buffer.zero_()
        main.wait_stream(self.stream)


def _repeats(
    fn: Callable[[], Any], flush: _Flush, grad_to_none: Sequence[torch.Tensor]
) -> int:
    """How many calls to profile: as many as take KERNEL_REP_MS, within KERNEL_REPEATS."""
    start, end = (
        torch.cuda.Event(enable_timing=True),
        torch.cuda.Event(enable_timing=True),
    )
    start.record()
    for _ in range(5):
        _clear_grads(grad_to_none)
        flush()
        fn()
    end.record()
    torch.cuda.synchronize()
    per_call_ms = max(start.elapsed_time(end) / 5, 1e-3)
    fewest, most = KERNEL_REPEATS
    return max(fewest, min(most, int(KERNEL_REP_MS / per_call_ms)))


def per_call_gpu_us(
    activities: Sequence[tuple[int, int, int]], flush_stream: int, repeats: int
) -> list[float]:
    """Split a profiled trace into calls and sum each call's GPU time, in microseconds.

    ``activities`` are ``(start_ns, duration_ns, stream)`` of every kernel, memset and
    copy; those on ``flush_stream`` are the flushes, one before each call. Each call is
    the work between its flush and the next one.
    """
    calls: list[float] = []
    for _start_ns, duration_ns, stream in sorted(activities):
        if stream == flush_stream:
            calls.append(0.0)
        elif calls:
            calls[-1] += duration_ns / 1e3
    if len(calls) != repeats:
        raise KernelTimeUnavailable(
            f"the profiler saw {len(calls)} L2 flushes for {repeats} calls"
        )
    if not all(calls):
        raise KernelTimeUnavailable("the profiler saw a call with no GPU work")
    return calls


def _is_gpu_work(event: Any) -> bool:
    # torch 2.13 names each activity's kind; 2.11 does not, and its only GPU-side events
    # that are not work are the annotations of record_function ranges.
    if hasattr(event, "activity_type"):
        return event.activity_type() in GPU_ACTIVITIES
    return not event.is_user_annotation()


def kernel_time_ms(
    fn: Callable[[], Any], grad_to_none: Sequence[torch.Tensor] = ()
) -> float:
    """Kernel time of ``fn`` in milliseconds: the median over repeated calls of the summed
    durations of the GPU work each call launched, L2 flushed before each (see module doc).

    Raises :class:`KernelTimeUnavailable` when the profiler's trace cannot be split
    into calls.
    """
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    flush = _Flush()
    fn()  # warm-up: compilation and autotuning stay out of the trace
    repeats = _repeats(fn, flush, grad_to_none)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(repeats):
            _clear_grads(grad_to_none)
            flush()
            fn()
        torch.cuda.synchronize()
    activities = [
        (event.start_ns(), event.duration_ns(), event.device_resource_id())
        for event in prof.profiler.kineto_results.events()
        if event.device_type() == DeviceType.CUDA and _is_gpu_work(event)
    ]
    if not activities:
        raise KernelTimeUnavailable("the profiler recorded no GPU activity")
    # The trace starts with the first flush: its stream is the flush stream.
    flush_stream = min(activities)[2]
    return statistics.median(per_call_gpu_us(activities, flush_stream, repeats)) / 1e3


def copy_rate(n_bytes_moved: float) -> float:
    """GB/s of a device-to-device copy that moves ``n_bytes_moved`` bytes (half of them
    read, half written), in kernel time, timed as the kernels are."""
    src = torch.randn(max(1, int(n_bytes_moved) // 8), device="cuda")
    dst = torch.empty_like(src)
    ms = kernel_time_ms(lambda: dst.copy_(src))
    return 2 * src.numel() * src.element_size() / ms / 1e6


def best_of(rate: Callable[[], float], timings: int = CEILING_TIMINGS) -> float:
    """The highest of ``timings`` calls of ``rate``: a ceiling, robust to one slow run."""
    return max(rate() for _ in range(timings))


def copy_ceiling(n_bytes: int = 2**30) -> dict[str, Any]:
    """The device-to-device copy bandwidth of this GPU in GB/s, counting bytes read and
    written: the best of CEILING_TIMINGS timed copies."""
    return {
        "name": "device copy",
        "value": best_of(lambda: copy_rate(2 * n_bytes)),
        "timings": CEILING_TIMINGS,
        "bytes_copied": n_bytes,
    }


def matmul_ceiling(n: int = 8192) -> dict[str, Any]:
    """The cuBLAS bf16 matrix-product rate of this GPU in TFLOP/s, on random data: the
    best of CEILING_TIMINGS timed products."""
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    value = best_of(lambda: 2 * n**3 / kernel_time_ms(lambda: a @ b) / 1e9)
    return {
        "name": "cuBLAS bf16 matmul",
        "value": value,
        "timings": CEILING_TIMINGS,
        "shape": [n, n, n],
    }

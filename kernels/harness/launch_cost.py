"""What one call of each launcher costs the host: the launcher, a bare launch, PyTorch,
and the launcher replayed from a CUDA graph.

A *launcher* is the Python function a user calls, such as :func:`kernels.operations.vector_add.add`:
it checks its inputs, allocates its output and launches its kernel(s). On tiny inputs a
call's GPU work takes a few microseconds, and what the call costs is the host's time.
For every launcher of the course, :func:`measure` times it three ways:

- ``Triton``: the launcher, called as a user calls it;
- ``bare launch``: the same kernel(s) launched as ``kernel[grid](...)``, every argument
  and output made beforehand: no checks, no allocation, no autograd, only Triton's own
  launch (binding the arguments, finding the compiled kernel for them, handing it to the
  driver);
- ``PyTorch``: PyTorch's equivalent operation, in eager mode;
- ``CUDA graph``: the launcher's calls captured once in a CUDA graph and replayed: one
  request to the driver runs them all, none of their Python (:func:`cuda_graph_replay`).
  What is left per call is the GPU's own work and its gaps between kernels.

The first minus the second is the launcher's own Python, less what its direct launch
(:mod:`kernels.triton_helpers.direct_launch`) saves over ``kernel[grid](...)``: negative where the
saving is the larger.

How a way is timed (:func:`host_times_us`): after a warm-up (compilation, autotuning,
the allocator's first blocks), CALLS calls back to back and one
``torch.cuda.synchronize()``; the time from before the first call to the end of the
synchronisation, over CALLS, is the host time per call. A graph of CALLS calls is timed
the same way, one replay per timing (:func:`graph_host_time`). The three other ways take turns,
REPEATS times, and the median is kept. The inputs are tiny so that the GPU runs each
call's work in less time than the host takes to issue the next: the GPU waits for the
host, and the loop times the host. The time the final synchronisation waited is kept
too: about one call's GPU work when the GPU kept up, many calls' worth when it did not.

Host time of a launch means a CUDA launch: in Triton's CPU interpreter a "launch" runs
the whole kernel in Python. Without a GPU, :func:`measure` refuses.

This module is the launch_overhead record's timing code: the record's fingerprint
covers it and every module it imports, the launchers' among them.
"""

import gc
import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from ..operations import (
    attention,
    cross_entropy,
    dropout,
    layer_norm,
    matmul,
    rms_norm,
    softmax,
    swiglu,
    vector_add,
)
from ..triton_helpers.launch import accumulator
from ..triton_helpers.runtime import interpreted, kernel_device

# Calls per timing, timings per way (the median is kept), and warm-up calls per way.
CALLS = 2000
REPEATS = 7
WARMUP_CALLS = 100

# The tiny inputs: elementwise kernels take ELEMENTS values, row-wise ones ROWS rows of
# COLS values; a matrix product of SQUARE x SQUARE matrices; attention on one sequence of
# ATTENTION_SHAPE (batch, heads, tokens, head dim). Each is a few programs of work.
ELEMENTS = 4096
ROWS, COLS = 8, 1024
SQUARE = 64
ATTENTION_SHAPE = (1, 2, 128, 64)
RMS_EPS = 1e-6
LAYER_NORM_EPS = 1e-5

NO_GPU = (
    "launch_overhead: host time per call is measured on a CUDA GPU only (in Triton's CPU "
    "interpreter a launch runs the whole kernel in Python); no GPU is available here"
)


@dataclass(frozen=True)
class LaunchCase:
    """One launcher set up on tiny inputs: three zero-argument calls that do the same work.

    ``bare_out`` is what the bare launch writes, to check it against the launcher's output.
    """

    inputs: str
    triton: Callable[[], object]
    bare: Callable[[], object]
    torch: Callable[[], object]
    bare_out: torch.Tensor


def _describe(**tensors: torch.Tensor) -> str:
    """What a call takes, for the record: ``x (8, 1024) float32, ...``."""
    return ", ".join(
        f"{name} {tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"
        for name, t in tensors.items()
    )


def _randn(
    *shapes: tuple[int, ...], dtype: torch.dtype, device: torch.device
) -> list[torch.Tensor]:
    """Random tensors of ``shapes``, the same on every run."""
    generator = torch.Generator(device=device).manual_seed(0)
    return [
        torch.randn(s, dtype=dtype, device=device, generator=generator) for s in shapes
    ]


def _launch(
    kernel: object, grid: object, *args: object, **constants: object
) -> Callable[[], object]:
    """``kernel[grid](*args, **constants)``, its arguments fixed now."""
    return lambda: kernel[grid](*args, **constants)


def add_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.vector_add.add` against ``x + y``."""
    x, y = _randn((ELEMENTS,), (ELEMENTS,), dtype=torch.float32, device=device)
    out = torch.empty_like(x)
    grid = (triton.cdiv(ELEMENTS, vector_add.BLOCK_SIZE),)
    bare = _launch(
        vector_add.add_tail_apart_kernel,
        grid,
        x,
        y,
        out,
        ELEMENTS,
        BLOCK_SIZE=vector_add.BLOCK_SIZE,
    )
    return LaunchCase(
        inputs=_describe(x=x, y=y),
        triton=lambda: vector_add.add(x, y),
        bare=bare,
        torch=lambda: x + y,
        bare_out=out,
    )


def dropout_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.dropout.dropout` against ``torch.nn.functional.dropout``."""
    (x,) = _randn((ELEMENTS,), dtype=torch.float32, device=device)
    p, seed = dropout.P, dropout.SEED
    out = torch.empty_like(x)
    grid = (triton.cdiv(ELEMENTS, dropout.BLOCK_SIZE),)
    bare = _launch(
        dropout.dropout_kernel,
        grid,
        x,
        out,
        ELEMENTS,
        p,
        1.0 / (1.0 - p),
        seed,
        BLOCK_SIZE=dropout.BLOCK_SIZE,
    )
    return LaunchCase(
        inputs=_describe(x=x) + f", p={p}",
        triton=lambda: dropout.dropout(x, p, seed),
        bare=bare,
        torch=lambda: torch.nn.functional.dropout(x, p, training=True),
        bare_out=out,
    )


def softmax_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.softmax.softmax` against ``torch.softmax``; rows this short take
    the launcher's one-row kernel."""
    (x,) = _randn((ROWS, COLS), dtype=torch.float32, device=device)
    out = torch.empty_like(x)
    kind, grid, options = softmax.forward_launch(ROWS, COLS, x.dtype, device)
    assert kind == "row", kind
    bare = _launch(softmax.softmax_kernel, grid, x, out, COLS, **options)
    return LaunchCase(
        inputs=_describe(x=x),
        triton=lambda: softmax.softmax(x),
        bare=bare,
        torch=lambda: torch.softmax(x, dim=-1),
        bare_out=out,
    )


def rms_norm_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.rms_norm.rms_norm` against ``torch.nn.functional.rms_norm``."""
    x, weight = _randn((ROWS, COLS), (COLS,), dtype=torch.float32, device=device)
    out = torch.empty_like(x)
    # The launcher's own grid and options, so that the same kernel is compiled and run.
    # Without a gradient to compute, no statistics are kept (as for LayerNorm, below).
    no_stats = torch.empty(1, dtype=torch.float32, device=device)
    kind, grid, options = rms_norm.forward_launch(ROWS, COLS)
    assert kind == "tile", kind
    bare = _launch(
        rms_norm.rms_norm_kernel,
        grid,
        x,
        weight,
        out,
        no_stats,
        ROWS,
        COLS,
        RMS_EPS,
        False,
        ACC=accumulator(x.dtype),
        **options,
    )
    return LaunchCase(
        inputs=_describe(x=x, weight=weight),
        triton=lambda: rms_norm.rms_norm(x, weight, RMS_EPS),
        bare=bare,
        torch=lambda: torch.nn.functional.rms_norm(x, (COLS,), weight, RMS_EPS),
        bare_out=out,
    )


def layer_norm_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.layer_norm.layer_norm` against ``torch.nn.functional.layer_norm``
    (forward only: the inputs need no gradient)."""
    x, weight, bias = _randn(
        (ROWS, COLS), (COLS,), (COLS,), dtype=torch.float32, device=device
    )
    out = torch.empty_like(x)
    # Without a gradient to compute, the launcher keeps no statistics: nor does this
    # (STATS false, the statistics pointed at a one-value buffer, as the launcher does).
    no_stats = torch.empty(1, dtype=torch.float32, device=device)
    kind, grid, options = layer_norm.forward_launch(ROWS, COLS, x.dtype)
    assert kind == "tile", kind
    bare = _launch(
        layer_norm.layer_norm_forward_kernel,
        grid,
        x,
        weight,
        bias,
        out,
        no_stats,
        no_stats,
        ROWS,
        COLS,
        LAYER_NORM_EPS,
        False,
        **options,
    )
    return LaunchCase(
        inputs=_describe(x=x, weight=weight, bias=bias),
        triton=lambda: layer_norm.layer_norm(x, weight, bias, LAYER_NORM_EPS),
        bare=bare,
        torch=lambda: torch.nn.functional.layer_norm(
            x, (COLS,), weight, bias, LAYER_NORM_EPS
        ),
        bare_out=out,
    )


def cross_entropy_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.cross_entropy.cross_entropy` against its PyTorch namesake. The
    launcher is called as the benchmarks call it, ``check_targets=False``: by default it
    checks the targets, which waits for the GPU once per call. Two kernels: the rows'
    losses, then their mean."""
    (logits,) = _randn((ROWS, COLS), dtype=torch.float32, device=device)
    targets = torch.arange(ROWS, device=device) * (
        COLS // ROWS
    )  # one class per row, in range
    acc_torch = cross_entropy._accumulator(logits.dtype)[0]
    losses = torch.empty(ROWS, dtype=acc_torch, device=device)
    loss = torch.empty((), dtype=acc_torch, device=device)
    ignore = cross_entropy.IGNORE_INDEX
    # Without a gradient to compute, the launcher keeps no statistics: nor does this.
    row_losses = _launch(
        cross_entropy.cross_entropy_forward_kernel,
        (ROWS,),
        logits,
        targets,
        losses,
        losses,
        losses,
        COLS,
        ignore,
        **cross_entropy.forward_options(logits.dtype, COLS, stats=False),
    )
    mean_loss = _launch(
        cross_entropy.mean_loss_kernel,
        (1,),
        losses,
        targets,
        loss,
        None,
        ROWS,
        ignore,
        BLOCK_SIZE=cross_entropy.MEAN_BLOCK,
        num_warps=cross_entropy.MEAN_WARPS,
    )

    def bare() -> None:
        row_losses()
        mean_loss()

    return LaunchCase(
        inputs=_describe(logits=logits, targets=targets),
        triton=lambda: cross_entropy.cross_entropy(
            logits, targets, check_targets=False
        ),
        bare=bare,
        torch=lambda: torch.nn.functional.cross_entropy(logits, targets),
        bare_out=loss,
    )


def matmul_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.matmul.matmul` against ``torch.matmul`` (cuBLAS). The bare launch
    goes through ``triton.autotune`` as the launcher's does: finding the configuration
    tuned for this shape is part of Triton's launch."""
    a, b = _randn(
        (SQUARE, SQUARE), (SQUARE, SQUARE), dtype=torch.float16, device=device
    )
    c = torch.empty_like(a)
    grid = matmul._grid(SQUARE, SQUARE)
    # Both operands row-major, as the launcher finds them; its key also takes M's bucket.
    layout = {"A_TRANSPOSED": False, "B_TRANSPOSED": False}
    m_bucket = triton.next_power_of_2(SQUARE)
    if matmul.tma_applies(a, b, c):
        # Placeholder tile shapes, as in the launcher: the configuration's pre-hook sets them.
        descriptors = [TensorDescriptor.from_tensor(t, [1, 1]) for t in (a, b, c)]
        bare = _launch(
            matmul.tuned_matmul_tma_kernel,
            grid,
            *descriptors,
            SQUARE,
            SQUARE,
            SQUARE,
            m_bucket,
            c.stride(0),
            ACTIVATION="none",
            DTYPE=matmul.TRITON_DTYPES[a.dtype],
            C_DESCRIPTOR=True,
            **layout,
        )
    else:
        bare = _launch(
            matmul.tuned_matmul_kernel,
            grid,
            a,
            b,
            c,
            SQUARE,
            SQUARE,
            SQUARE,
            m_bucket,
            *a.stride(),
            *b.stride(),
            *c.stride(),
            ACTIVATION="none",
            **layout,
        )
    return LaunchCase(
        inputs=_describe(a=a, b=b),
        triton=lambda: matmul.matmul(a, b),
        bare=bare,
        torch=lambda: torch.matmul(a, b),
        bare_out=c,
    )


def attention_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.attention.attention` against PyTorch's
    ``scaled_dot_product_attention`` (its own choice of backend); forward only."""
    q, k, v = _randn(*[ATTENTION_SHAPE] * 3, dtype=torch.float16, device=device)
    batch, heads, seq_len, head_dim = ATTENTION_SHAPE
    out = torch.empty_like(q)
    # Without a gradient to compute, the launcher keeps no log-sum-exp: nor does this.
    grid, options = attention.forward_launch(batch, heads, seq_len, head_dim, False)
    # The launcher's default scale, 1 / sqrt(head_dim), in base 2 as its kernel takes it.
    scale = 1.0 / math.sqrt(head_dim) * attention.LOG2_E
    bare = _launch(
        attention.attention_forward_kernel,
        grid,
        q,
        k,
        v,
        out,
        None,
        seq_len,
        scale,
        **options,
    )
    return LaunchCase(
        inputs=_describe(q=q, k=k, v=v),
        triton=lambda: attention.attention(q, k, v),
        bare=bare,
        torch=lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
        bare_out=out,
    )


def swiglu_case(device: torch.device) -> LaunchCase:
    """:func:`kernels.operations.swiglu.swiglu` against ``silu(gate) * up`` in PyTorch (two
    kernels)."""
    gate, up = _randn((ELEMENTS,), (ELEMENTS,), dtype=torch.float32, device=device)
    out = torch.empty_like(gate)
    grid = (triton.cdiv(ELEMENTS, swiglu.BLOCK_SIZE),)
    bare = _launch(
        swiglu.swiglu_forward_kernel,
        grid,
        gate,
        up,
        out,
        ELEMENTS,
        ACC=accumulator(gate.dtype),
        BLOCK_SIZE=swiglu.BLOCK_SIZE,
    )
    return LaunchCase(
        inputs=_describe(gate=gate, up=up),
        triton=lambda: swiglu.swiglu(gate, up),
        bare=bare,
        torch=lambda: torch.nn.functional.silu(gate) * up,
        bare_out=out,
    )


# Every launcher of the course, by name, in the order of the record.
LAUNCHERS: dict[str, Callable[[torch.device], LaunchCase]] = {
    "add": add_case,
    "dropout": dropout_case,
    "softmax": softmax_case,
    "rms_norm": rms_norm_case,
    "layer_norm": layer_norm_case,
    "cross_entropy": cross_entropy_case,
    "matmul": matmul_case,
    "attention": attention_case,
    "swiglu": swiglu_case,
}


def check_case(name: str, case: LaunchCase) -> None:
    """Raise ``AssertionError`` unless the bare launch writes exactly what the launcher
    returns: then both ran the same kernel on the same inputs."""
    expected = case.triton()
    case.bare_out.fill_(math.nan)
    case.bare()
    if not torch.equal(case.bare_out, expected):
        raise AssertionError(
            f"{name}: the bare launch does not write what the launcher returns"
        )


@dataclass(frozen=True)
class HostTime:
    """One way of calling, timed: the median host time per call over the repeats, and
    the median time the final synchronisation of a repeat waited for the GPU."""

    per_call_us: float
    final_wait_us: float


def _gpu_synchronize() -> Callable[[], None]:
    if interpreted() or not torch.cuda.is_available():
        raise RuntimeError(NO_GPU)
    return torch.cuda.synchronize


def host_times_us(
    calls: Mapping[str, Callable[[], object]],
    *,
    n_calls: int = CALLS,
    repeats: int = REPEATS,
    warmup_calls: int = WARMUP_CALLS,
    clock: Callable[[], int] = time.perf_counter_ns,
    synchronize: Callable[[], object] | None = None,
) -> dict[str, HostTime]:
    """Host time per call of each of ``calls``, in microseconds (see the module docstring).

    ``clock`` returns nanoseconds. ``synchronize`` waits for the GPU; by default it is
    ``torch.cuda.synchronize``, and without a GPU this raises ``RuntimeError``.
    """
    synchronize = synchronize or _gpu_synchronize()
    for call in calls.values():
        for _ in range(warmup_calls):
            call()
    synchronize()
    per_call: dict[str, list[float]] = {name: [] for name in calls}
    waits: dict[str, list[float]] = {name: [] for name in calls}
    # As timeit does: a collection of cycles in the middle of a loop is not a call's cost.
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            for name, call in calls.items():
                start = clock()
                for _ in range(n_calls):
                    call()
                issued = clock()
                synchronize()
                end = clock()
                per_call[name].append((end - start) / n_calls / 1e3)
                waits[name].append((end - issued) / 1e3)
    finally:
        if gc_was_enabled:
            gc.enable()
    return {
        name: HostTime(
            statistics.median(per_call[name]), statistics.median(waits[name])
        )
        for name in calls
    }


def cuda_graph_replay(call: Callable[[], object], n_calls: int) -> Callable[[], object]:
    """``n_calls`` calls of ``call`` captured in one CUDA graph; returns the graph's replay.
    ``call`` must have run before: a capture can neither compile nor tune a kernel, nor
    wait for the GPU. The replay runs the recorded launches with the arguments they had
    (outputs included: the graph's own memory), from one request to the driver."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(n_calls):
            call()
    return graph.replay


def graph_host_time(
    call: Callable[[], object],
    *,
    n_calls: int = CALLS,
    repeats: int = REPEATS,
    clock: Callable[[], int] = time.perf_counter_ns,
    synchronize: Callable[[], object] | None = None,
    capture: Callable[
        [Callable[[], object], int], Callable[[], object]
    ] = cuda_graph_replay,
) -> HostTime:
    """Time per call of ``call`` replayed from a graph of ``n_calls`` calls (``capture``
    makes the replay): each timing is one replay and one synchronisation, as
    :func:`host_times_us` times a loop, over ``n_calls``. The final wait is the replay's
    whole: the host only asks, and the GPU does the rest."""
    replay = capture(call, n_calls)
    whole = host_times_us(
        {"graph": replay},
        n_calls=1,
        repeats=repeats,
        warmup_calls=1,
        clock=clock,
        synchronize=synchronize,
    )["graph"]
    return HostTime(whole.per_call_us / n_calls, whole.final_wait_us)


@dataclass(frozen=True)
class LauncherCost:
    """The host times of one launcher, and what it was called on. ``graph`` is None
    where the launcher could not be captured in a CUDA graph, with the reason in
    ``graph_unavailable``."""

    launcher: str
    inputs: str
    triton: HostTime
    bare: HostTime
    torch: HostTime
    graph: HostTime | None = None
    graph_unavailable: str | None = None


def measure(
    *,
    n_calls: int = CALLS,
    repeats: int = REPEATS,
    warmup_calls: int = WARMUP_CALLS,
    clock: Callable[[], int] = time.perf_counter_ns,
    synchronize: Callable[[], object] | None = None,
    capture: Callable[
        [Callable[[], object], int], Callable[[], object]
    ] = cuda_graph_replay,
) -> list[LauncherCost]:
    """Check each launcher's bare launch against it, then time the three ways of calling
    it with :func:`host_times_us` (which takes the keywords), and its replay from a CUDA
    graph with :func:`graph_host_time`, launcher by launcher.

    On a GPU; without one this raises ``RuntimeError``, unless a stand-in ``synchronize``
    is given (the tests give one, with a stand-in clock and capture, and run the
    interpreter). A launcher that cannot be captured has no graph time, and the reason.
    """
    synchronize = synchronize or _gpu_synchronize()
    device = kernel_device()
    costs = []
    for name, setup in LAUNCHERS.items():
        case = setup(device)
        check_case(name, case)
        times = host_times_us(
            {"triton": case.triton, "bare": case.bare, "torch": case.torch},
            n_calls=n_calls,
            repeats=repeats,
            warmup_calls=warmup_calls,
            clock=clock,
            synchronize=synchronize,
        )
        try:
            graph = graph_host_time(
                case.triton,
                n_calls=n_calls,
                repeats=repeats,
                clock=clock,
                synchronize=synchronize,
                capture=capture,
            )
            reason = None
        except RuntimeError as error:  # what a capture raises for a call it cannot hold
            graph, reason = (
                None,
                f"{type(error).__name__}: {error}".splitlines()[0][:200],
            )
        costs.append(
            LauncherCost(
                name, case.inputs, **times, graph=graph, graph_unavailable=reason
            )
        )
    return costs

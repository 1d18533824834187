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

Each family sets up its own rows (``launch_costs`` in its declaration,
:mod:`kernels.declarations.family`), beside the kernels they launch, and its rows make
one record, ``launch_overhead_<family>`` (:data:`FAMILY_ROWS`). This module is the
records' timing code: a family's record covers it, every module it imports, and the
family's module (:data:`FAMILY_MODULES`), so a changed family re-measures its own rows.
"""

import gc
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from ..declarations.family import LaunchCase
from ..triton_helpers.runtime import interpreted, kernel_device
from . import families

# Calls per timing, timings per way (the median is kept), and warm-up calls per way.
CALLS = 2000
REPEATS = 7
WARMUP_CALLS = 100

NO_GPU = (
    "launch cost: host time per call is measured on a CUDA GPU only (in Triton's CPU "
    "interpreter a launch runs the whole kernel in Python); no GPU is available here"
)


# Every launch-cost row, by name, in order of the families' names: the function that
# sets it up, from the family that declares it (kernels/declarations/family.py).
_ROWS = families.launch_costs()
LAUNCHERS: dict[str, Callable[[torch.device], LaunchCase]] = {
    row: setup for row, (_, setup) in _ROWS.items()
}
# Each family that declares rows, by the short name of its module (vector_add): the
# module's full name and its rows in order. A family's rows are one record, whose code
# is this module and the family's: a changed family re-measures its own rows only.
FAMILY_MODULES: dict[str, str] = families.launch_cost_families()
FAMILY_ROWS: dict[str, tuple[str, ...]] = {
    family: tuple(row for row, (owner, _) in _ROWS.items() if owner == module)
    for family, module in FAMILY_MODULES.items()
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
    rows: Sequence[str] | None = None,
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
    graph with :func:`graph_host_time`, launcher by launcher: the ``rows`` named (of
    :data:`LAUNCHERS`; a family's are in :data:`FAMILY_ROWS`), or every one.

    On a GPU; without one this raises ``RuntimeError``, unless a stand-in ``synchronize``
    is given (the tests give one, with a stand-in clock and capture, and run the
    interpreter). A launcher that cannot be captured has no graph time, and the reason.
    """
    synchronize = synchronize or _gpu_synchronize()
    device = kernel_device()
    unknown = [row for row in rows or () if row not in LAUNCHERS]
    if unknown:
        raise ValueError(
            f"no launch-cost row is named {', '.join(map(repr, unknown))}; the families "
            f"declare {', '.join(LAUNCHERS)}"
        )
    costs = []
    for name in LAUNCHERS if rows is None else rows:
        case = LAUNCHERS[name](device)
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

"""The benchmark harness: check every size, then time every provider, then record.

On a GPU, :func:`measure` checks each provider against a float64 reference at every
size, times Triton and its baselines two ways (kernel time and call time, see
:mod:`kernels.harness.timing`), measures the machine's ceiling in the same run, and returns a
:class:`~kernels.harness.measurements.Measurement` that :func:`measure_or_load` saves to
``gallery/measurements/<gpu>/<name>.json``. Without a GPU nothing is timed: the kernel
is checked in Triton's interpreter on small inputs and the recorded file is returned,
provided it was recorded from the code as it is now (its fingerprint matches).

The launch_overhead record, the one that is not a rate, has the same life through
:mod:`kernels.harness.launch_record`; the command line that re-measures and checks the records
is :mod:`kernels.harness.recording` (``nox -s bench``).
"""

import functools
import importlib
import json
import math
import os
import pkgutil
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..declarations.spec import BenchmarkSpec, Output, ProviderUnavailable
from ..text.messages import _, axis_name, number, translated
from ..triton_helpers.runtime import describe_device, interpreted, kernel_device
from . import ceilings, families, fingerprint, measurements, peers, provenance, timing
from .measurements import (
    Ceiling,
    Code,
    Measurement,
    MeasurementError,
    Record,
    StaleMeasurementError,
)

# ||out - ref|| / ||ref|| allowed against a float64 reference, per dtype: two to three
# units of rounding for bfloat16 (8 significant bits: 2**-8 is 0.004) and float16 (11
# bits: 0.0005); for float32 (24 bits: 6e-8) room for what sums over long rows gather.
RELATIVE_TOLERANCE = {torch.bfloat16: 1e-2, torch.float16: 1e-3, torch.float32: 1e-5}


def relative_tolerance(dtype: torch.dtype) -> float:
    """The relative error allowed against float64 for outputs in ``dtype``: the table's
    for the dtypes it holds; for another floating dtype (fp8, say), one unit of its
    rounding (``torch.finfo(dtype).eps``), so that a new dtype needs no edit here."""
    if dtype in RELATIVE_TOLERANCE:
        return RELATIVE_TOLERANCE[dtype]
    if not dtype.is_floating_point:
        raise ValueError(
            f"no relative tolerance for {dtype}: outputs are compared with float64 "
            "by relative error, which needs a floating dtype"
        )
    return float(torch.finfo(dtype).eps)


# The module that times the launch_overhead record (it has no spec of its own), under
# the package's name in a clone (kernels) or installed (ninja_gap.kernels).
LAUNCH_MODULE = f"{__package__}.launch_cost"
# Set to 1 by ``nox -s docs -- --draft``: a benchmark with no record, or a stale one,
# is drawn as a labelled placeholder instead of failing the build.
DRAFT_VARIABLE = "NINJA_GAP_DRAFT"
# Set to 0 to use the records on a GPU machine instead of measuring (the tests do).
MEASURE_VARIABLE = "NINJA_GAP_MEASURE"


def draft() -> bool:
    """Whether this is a draft build, which draws placeholders for missing records."""
    return os.environ.get(DRAFT_VARIABLE) == "1"


def measuring() -> bool:
    """Whether benchmarks are measured here: on a GPU, unless $NINJA_GAP_MEASURE is 0."""
    return not interpreted() and os.environ.get(MEASURE_VARIABLE) != "0"


class CorrectnessError(AssertionError):
    """A provider's output differs from the float64 reference by more than the tolerance."""

    def __init__(self, message: str, relative_error: float, tolerance: float) -> None:
        super().__init__(message)
        self.relative_error = relative_error
        self.tolerance = tolerance


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one correctness check, printable as one line."""

    benchmark: str
    provider: str
    x_name: str
    size: int
    dtype: torch.dtype
    relative_error: float
    tolerance: float

    def __str__(self) -> str:
        line = _(
            "{provider} {benchmark}, {x_name} = {size}, {dtype}: relative error {error} "
            "<= {tolerance}: OK"
        )
        return line.format(
            provider=self.provider,
            benchmark=self.benchmark,
            x_name=axis_name(self.x_name),
            size=number(f"{self.size:,}"),
            dtype=str(self.dtype).removeprefix("torch."),
            error=number(f"{self.relative_error:.1e}"),
            tolerance=number(f"{self.tolerance:.0e}"),
        )


def relative_error(out: Output, reference: Output) -> float:
    """``||out - ref|| / ||ref||`` in float64, the worst over the tensors of a tuple;
    infinite if ``out`` holds NaN or infinity."""
    outs = out if isinstance(out, tuple) else (out,)
    refs = reference if isinstance(reference, tuple) else (reference,)
    if len(outs) != len(refs):
        raise ValueError(f"{len(outs)} outputs against {len(refs)} references")
    worst = 0.0
    for one, ref in zip(outs, refs, strict=True):
        one64, ref64 = one.double(), ref.double()
        if not torch.isfinite(one64).all():
            return math.inf
        ref_norm = torch.linalg.vector_norm(ref64).item()
        err_norm = torch.linalg.vector_norm(one64 - ref64).item()
        worst = max(worst, err_norm / ref_norm if ref_norm > 0 else err_norm)
    return worst


def tolerance(out: Output, reference: Output, dtype: torch.dtype) -> float:
    """The relative error allowed for ``out``: the dtype's tolerance, or twice the error of
    the float64 reference itself stored in the output's dtype, if that is larger.

    The second term is the error no kernel can avoid. A float16 softmax over 151,936
    columns returns values near 1/151,936, below float16's smallest normal number, where
    only a few bits are left: rounding the exact answer already loses more than 1e-3.
    """
    outs = out if isinstance(out, tuple) else (out,)
    refs = reference if isinstance(reference, tuple) else (reference,)
    rounded = tuple(
        ref.to(one.dtype) if one.is_floating_point() else ref
        for one, ref in zip(outs, refs, strict=True)
    )
    return max(relative_tolerance(dtype), 2 * relative_error(rounded, refs))


def _float64_copy(tensor: torch.Tensor) -> torch.Tensor:
    # A copy even where the tensor is float64 already, or not a float tensor.
    return (
        tensor.to(torch.float64, copy=True)
        if tensor.is_floating_point()
        else tensor.clone()
    )


def _forward_for_backward(
    spec: BenchmarkSpec, fn: Callable[..., Output], inputs: Sequence[torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """Run ``fn`` on the inputs of a backward benchmark, the ``grad_inputs`` made leaves
    that require gradients; return the output, its gradient (the last input) and the leaves."""
    *args, grad_output = inputs
    args = [
        t.detach().requires_grad_() if i in spec.grad_inputs else t
        for i, t in enumerate(args)
    ]
    return fn(*args), grad_output, [args[i] for i in spec.grad_inputs]


def evaluate(
    spec: BenchmarkSpec, fn: Callable[..., Output], inputs: Sequence[torch.Tensor]
) -> Output:
    """What the check compares: ``fn``'s output, or for a backward benchmark the gradients
    of the ``grad_inputs`` after back-propagating the last input through ``fn``."""
    if not spec.backward:
        return fn(*inputs)
    out, grad_output, leaves = _forward_for_backward(spec, fn, inputs)
    out.backward(grad_output)
    return tuple(leaf.grad for leaf in leaves)


def _poison_free_memory(outputs: list[tuple[torch.Size, torch.device]]) -> None:
    # Fill blocks the size of each output (shape, device) with NaN and free them: the
    # caching allocator tends to hand those blocks to the next outputs, so elements a
    # kernel fails to write show up as NaN instead of as an earlier run's right values.
    for shape, device in outputs:
        torch.full(shape, math.nan, dtype=torch.float64, device=device)


def check(
    spec: BenchmarkSpec,
    size: int,
    provider: Callable[..., torch.Tensor] | None = None,
    *,
    provider_name: str = "Triton",
    dtype: torch.dtype | None = None,
    seed: int = 0,
) -> CheckResult:
    """Run ``provider`` (the Triton launcher by default) on random inputs of ``size`` and
    compare with the reference evaluated in float64 on the same device (for a backward
    benchmark, compare the gradients).

    Raises :class:`CorrectnessError` if the relative error exceeds :func:`tolerance`.
    """
    dtype = dtype or spec.dtype
    device = kernel_device()
    generator = torch.Generator(device=device).manual_seed(seed)
    inputs = spec.make_inputs(size, dtype, device, generator)
    # Copied before the provider runs: some write into their inputs (Liger-Kernel's
    # cross-entropy stores the gradient over the logits, its RMSNorm dx over dy).
    reference_inputs = [_float64_copy(t) for t in inputs]
    provider = provider or spec.triton
    # The first call compiles and may tune, and an autotuner runs every candidate into
    # the same output: one that leaves part of it unwritten would show the values
    # another wrote. So the call judged is the next one, into poisoned memory. The
    # first runs on copies: a provider may write into its inputs.
    first = evaluate(spec, provider, [t.clone() for t in inputs])
    outputs = [
        (t.shape, t.device) for t in (first if isinstance(first, tuple) else (first,))
    ]
    del first  # its blocks, freed, are among those poisoned next
    _poison_free_memory(outputs)
    out = evaluate(spec, provider, inputs)
    reference = evaluate(spec, spec.reference or spec.torch_eager, reference_inputs)
    error = relative_error(out, reference)
    allowed = tolerance(out, reference, dtype)
    if not error <= allowed:
        raise CorrectnessError(
            f"{spec.name} [{provider_name}] at {spec.x_name}={size:,} ({dtype}): relative error "
            f"{error:.2e} exceeds {allowed:.0e} against the float64 reference",
            error,
            allowed,
        )
    return CheckResult(
        spec.name, provider_name, spec.x_name, size, dtype, error, allowed
    )


def _compiled_for_one_shape(
    fn: Callable[..., torch.Tensor],
) -> Callable[..., torch.Tensor]:
    # A fresh static compile per size: dynamo's recompile limit would otherwise send
    # later sizes back to eager without a word, or a dynamic-shape kernel would be timed.
    torch._dynamo.reset()
    # Timing calls backward() again and again on one graph (retain_graph=True), which
    # compiled graphs that donate their buffers to the backward pass refuse.
    torch._functorch.config.donated_buffer = False
    return torch.compile(fn, dynamic=False)


def providers(spec: BenchmarkSpec) -> dict[str, Callable[..., Output]]:
    """The timed providers of ``spec`` by series name, for one size (``torch.compile`` is
    compiled afresh each time this is called)."""
    if spec.baselines is None:
        return {
            "Triton": spec.triton,
            "PyTorch": spec.torch_eager,
            "torch.compile": _compiled_for_one_shape(spec.torch_eager),
            **spec.extra_baselines,
            **peers.resolve(spec),
        }
    return {
        "Triton": spec.triton,
        **spec.baselines,
        **spec.extra_baselines,
        **peers.resolve(spec),
    }


def _timed_call(
    spec: BenchmarkSpec, fn: Callable[..., Output], inputs: Sequence[torch.Tensor]
) -> tuple[Callable[[], Any], list[torch.Tensor]]:
    """What to time for one provider, and the tensors whose gradients to clear."""
    if not spec.backward:
        return (lambda: fn(*inputs)), []
    # The forward pass runs once, outside the timing; each timed run is one backward.
    out, grad_output, leaves = _forward_for_backward(spec, fn, inputs)
    return (lambda: out.backward(grad_output, retain_graph=True)), leaves


def peak_memory_mb(step: Callable[[], None]) -> float | None:
    """Peak GPU memory that ``step`` allocates beyond what is already allocated, in MB;
    None if it ran out of memory."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    try:
        step()
    except torch.cuda.OutOfMemoryError:
        pass
    else:
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - before) / 1e6
    # Out of memory. Here, past the except block, the traceback that held the step's
    # partial tensors is gone, so their memory can be returned.
    torch.cuda.empty_cache()
    return None


def code_of(spec: BenchmarkSpec) -> Code:
    """The fingerprint of the code that ``spec`` runs now, with its files and the commit."""
    files = fingerprint.code_digests(
        spec.module, extra_modules=peers.adapter_modules(spec)
    )
    return Code(
        fingerprint=fingerprint.combine(files), commit=fingerprint.commit(), files=files
    )


class _Unavailable:
    """Why each provider could not run or be timed, and at which sizes."""

    def __init__(self, x_name: str) -> None:
        self.x_name = x_name
        self.sizes: dict[str, dict[str, list[int]]] = {}

    def add(self, provider: str, size: int, reason: object) -> None:
        self.sizes.setdefault(provider, {}).setdefault(str(reason), []).append(size)

    def reasons(self) -> dict[str, str]:
        """One line per provider: ``at N=1,024 and 2,048: reason``."""
        return {
            provider: "; ".join(
                f"at {self.x_name}={', '.join(f'{s:,}' for s in sizes)}: {reason}"
                for reason, sizes in by_reason.items()
            )
            for provider, by_reason in self.sizes.items()
        }


def _what_is_measured(spec: BenchmarkSpec) -> dict[str, Any]:
    # The fields of a record that come from the spec alone: what, at which sizes, how much.
    return {
        "benchmark": spec.name,
        "metric": spec.metric,
        "x_name": spec.x_name,
        "dtype": str(spec.dtype).removeprefix("torch."),
        "x": tuple(spec.gpu_sizes),
        "work": tuple(float(spec.work(size, spec.dtype)) for size in spec.gpu_sizes),
    }


def measure(spec: BenchmarkSpec) -> Measurement:
    """Check, then time, every provider at every GPU size, two ways; return the record.

    A baseline that raises :class:`ProviderUnavailable` at a size's check, whose output
    misses the tolerance there, or whose kernel time the profiler cannot split into
    calls, is ``null`` at that size, and the reason is recorded under ``unavailable``.
    Triton must run, and be right, everywhere.
    """
    if interpreted():
        raise RuntimeError(
            f"{spec.name}: timing needs a CUDA GPU; none is available here"
        )
    started = time.perf_counter()
    device = kernel_device()
    names = spec.series_names
    series: dict[str, list[float | None]] = {name: [] for name in names}
    call_series: dict[str, list[float | None]] = {name: [] for name in names}
    unavailable = _Unavailable(spec.x_name)
    peak_memory: dict[str, list[float | None]] = {
        n: [] for n in (*names, *spec.memory_only)
    }
    # For a GB/s benchmark, a copy that moves as many bytes as one call, timed alike: the
    # rate a perfect kernel of that size could expect, cache effects included.
    same_size_copy: list[float] = []
    worst_error = 0.0
    what = _what_is_measured(spec)
    # Work per millisecond in the metric's unit: GB/s is bytes / 1e6 per ms.
    scale = measurements.RATE_SCALE[spec.metric] / 1e3
    for index, size in enumerate(spec.gpu_sizes):
        work = what["work"][index]
        running = providers(spec)
        # Where a record's time goes (issue 33's time goal): the checks include each
        # provider's first call, so compiling and autotuning; the rest is timing.
        phase_started = time.perf_counter()
        for name, fn in list(running.items()):
            if name != "Triton" and not spec.check_baselines:
                continue
            # Fresh random inputs for every check: a fast version must be right on any input.
            try:
                result = check(spec, size, fn, provider_name=name, seed=index + 1)
            except (ProviderUnavailable, CorrectnessError) as failure:
                if name == "Triton":
                    raise
                # A baseline is timed only where it is as right as Triton must be.
                reason = (
                    f"relative error {failure.relative_error:.1e} exceeds the tolerance "
                    f"{failure.tolerance:.0e} against the float64 reference"
                    if isinstance(failure, CorrectnessError)
                    else failure
                )
                unavailable.add(name, size, reason)
                del running[name]
                continue
            worst_error = max(worst_error, result.relative_error)
        checks_s = time.perf_counter() - phase_started
        generator = torch.Generator(device=device).manual_seed(size)
        inputs = spec.make_inputs(size, spec.dtype, device, generator)
        phase_started = time.perf_counter()
        for name in names:
            kernel_rate = call_rate = None
            if name in running:
                call, leaves = _timed_call(spec, running[name], inputs)
                try:
                    kernel_rate = work / timing.kernel_time_ms(call, leaves) / scale
                except timing.KernelTimeUnavailable as reason:
                    if name == "Triton":
                        raise
                    unavailable.add(name, size, f"kernel time: {reason}")
                else:
                    call_rate = work / timing.call_time_ms(call, leaves) / scale
                del call, leaves
            series[name].append(kernel_rate)
            call_series[name].append(call_rate)
        if spec.metric == "GB/s":
            same_size_copy.append(timing.copy_rate(work))
        if spec.peak_memory_step is not None:
            for name, fn in {**running, **spec.memory_only}.items():
                step = functools.partial(spec.peak_memory_step, fn, inputs)
                peak_memory[name].append(peak_memory_mb(step))
            for name in set(names) - set(running):
                peak_memory[name].append(None)
        del inputs, running
        torch.cuda.empty_cache()
        timing_s = time.perf_counter() - phase_started
        print(
            f"{spec.name} {spec.x_name}={size:>11,}: "
            + "  ".join(f"{n} {_shown(v[-1])}" for n, v in series.items())
            + f" {spec.metric} (kernel time; checks {checks_s:.1f} s,"
            f" timing {timing_s:.1f} s)",
            flush=True,
        )
    ceiling = ceilings.ceiling_for(spec.metric, spec.dtype)
    return Measurement(
        **what,
        series={name: tuple(values) for name, values in series.items()},
        call_series={name: tuple(values) for name, values in call_series.items()},
        ceiling=Ceiling(
            name=ceiling.pop("name"),
            value=ceiling.pop("value"),
            timings=ceiling.pop("timings"),
            details=ceiling,
        ),
        code=code_of(spec),
        environment=provenance.capture(),
        unavailable=unavailable.reasons(),
        same_size_copy=tuple(same_size_copy) if same_size_copy else None,
        peak_memory_mb=(
            {name: tuple(values) for name, values in peak_memory.items()}
            if spec.peak_memory_step is not None
            else None
        ),
        details={
            **spec.details,
            **_library_versions(names),
            "pass": "backward" if spec.backward else "forward",
            "timing": {
                "kernel_time": (
                    "median over repeated calls of the summed durations of each call's GPU "
                    "kernels, memsets and copies (torch.profiler, CUPTI), L2 flushed before each"
                ),
                "call_time": "triton.testing.do_bench, median, L2 flushed before each call",
                "call_warmup_ms": timing.WARMUP_MS,
                "call_rep_ms": timing.REP_MS,
                # How long measuring took, which the shards are balanced by.
                "measured_s": round(time.perf_counter() - started, 1),
            },
            "check": {
                "reference": "float64",
                "providers": list(names) if spec.check_baselines else ["Triton"],
                "worst_relative_error": worst_error,
            },
        },
        fresh=True,
    )


def _library_versions(names: Sequence[str]) -> dict[str, str]:
    # The release of each peer library that a series of the record times.
    return peers.library_versions(names)


def _shown(rate: float | None) -> str:
    return "     n/a" if rate is None else f"{rate:9.1f}"


def _changed_files(recorded: Code, current: Code) -> list[str]:
    # Empty when the fingerprints match.
    if current.fingerprint == recorded.fingerprint:
        return []
    return fingerprint.changed_files(recorded.files, current.files) or ["(unknown)"]


def stale_files(measurement: Measurement, spec: BenchmarkSpec) -> list[str]:
    """The files that changed since ``measurement`` was recorded from ``spec``'s code
    (empty when its fingerprint matches the code as it is now)."""
    return _changed_files(measurement.code, code_of(spec))


def refuse_if_stale(
    name: str, recorded: Code, current: Code, gpu: str | None = None
) -> None:
    """Raise :class:`~kernels.harness.measurements.StaleMeasurementError` when record ``name`` of
    ``gpu`` was recorded from ``recorded`` code that differs from the ``current`` code,
    naming the files that changed and the two ways on."""
    changed = _changed_files(recorded, current)
    if changed:
        raise StaleMeasurementError(
            f"{measurements.path_for(name, gpu)} is stale: it was recorded from other code "
            f"than runs now ({', '.join(changed)} changed since commit "
            f"{recorded.commit}). Re-measure it on that GPU (`nox -s bench -- "
            f"{name}`), or build a draft (`nox -s docs -- --draft`)."
        )


def load_current(spec: BenchmarkSpec, gpu: str | None = None) -> Measurement:
    """The recorded measurement of ``spec`` on ``gpu`` (the primary GPU by default), which
    must come from the code as it is now.

    Raises :class:`~kernels.harness.measurements.StaleMeasurementError` naming the record and
    the files that changed, or :class:`~kernels.harness.measurements.MeasurementError` when the
    record is missing or malformed.
    """
    measurement = measurements.load(spec.name, metric=spec.metric, gpu=gpu)
    assert isinstance(measurement, Measurement)  # a rate metric reads as a rate record
    refuse_if_stale(spec.name, measurement.code, code_of(spec), gpu)
    _refuse_if_unlike_spec(spec, measurement, gpu)
    return measurement


# How far above its own run's ceiling a rate may read: a ceiling is timed at the end of
# the run, and the GPU's clock moves with its temperature (in the H200 records, rates
# reached 1.10 times their ceiling); a rate far above it was not measured.
CEILING_MARGIN = 1.5
# How far above its dtype's tolerance a record's worst check error may be. The check's
# tolerance widens only where rounding the exact answer to the dtype already loses more
# (bench.tolerance: a float16 softmax over 151,936 columns, whose record's worst error
# is 1.6 times float16's tolerance); an error far beyond that was not a passed check.
CHECK_MARGIN = 10


def _refuse_if_unlike_spec(
    spec: BenchmarkSpec, record: Measurement, gpu: str | None = None
) -> None:
    """Raise :class:`MeasurementError` naming the record's file and key unless the record
    agrees with ``spec`` (what is measured, at which sizes, the fixed dimensions, how much
    work, which series, which pass), with its own check (passed) and with its ceiling (no
    rate above it by more than CEILING_MARGIN), and Triton has a rate at every size. A
    record edited by hand, or written for another version of the spec, is refused, not
    drawn."""
    path = measurements.path_for(spec.name, gpu)
    expected = _what_is_measured(spec)
    for key in ("x_name", "dtype", "x"):
        if getattr(record, key) != expected[key]:
            raise MeasurementError(
                f"{path}: {key!r} is {getattr(record, key)!r}; the benchmark's spec says "
                f"{expected[key]!r}"
            )
    for key, value in spec.details.items():
        # As the record's JSON holds it, compared with its type: JSON's 0 is not the
        # spec's False, though Python finds them equal.
        wanted = json.loads(json.dumps(value))
        got = record.details.get(key)
        if type(got) is not type(wanted) or got != wanted:
            raise MeasurementError(
                f"{path}: {key!r} is {got!r}; the benchmark's spec says {wanted!r}"
            )
    for size, work, wanted in zip(record.x, record.work, expected["work"], strict=True):
        if not math.isclose(work, wanted, rel_tol=1e-9):
            raise MeasurementError(
                f"{path}: 'work' at {spec.x_name}={size} is {work:g}; the spec counts {wanted:g}"
            )
    if record.providers != spec.series_names:
        raise MeasurementError(
            f"{path}: the series are {list(record.providers)}; the spec times "
            f"{list(spec.series_names)}"
        )
    wanted_pass = "backward" if spec.backward else "forward"
    if record.details.get("pass") != wanted_pass:
        # Every rate record names its pass: one without says nothing of what it timed.
        got = repr(record.details["pass"]) if "pass" in record.details else "missing"
        raise MeasurementError(
            f"{path}: 'pass' is {got}; the spec times the {wanted_pass} pass"
        )
    missing = [
        size
        for size, rate in zip(record.x, record.series["Triton"], strict=True)
        if rate is None
    ]
    if missing:
        raise MeasurementError(
            f"{path}: Triton has no rate at {spec.x_name}={missing}; Triton must run everywhere"
        )
    error = record.details.get("check", {}).get("worst_relative_error")
    bound = relative_tolerance(spec.dtype) * CHECK_MARGIN
    # JSON's false reads as False, an int equal to 0: no check wrote it.
    if (
        not isinstance(error, int | float)
        or isinstance(error, bool)
        or not 0 <= error <= bound
    ):
        raise MeasurementError(
            f"{path}: 'check.worst_relative_error' is {error!r}; no check that passed is "
            f"more than {bound:g} off for {expected['dtype']}"
        )
    limit = record.ceiling.value * CEILING_MARGIN
    for key, series in (("series", record.series), ("call_series", record.call_series)):
        for provider, rates in series.items():
            for size, rate in zip(record.x, rates, strict=True):
                if rate is not None and rate > limit:
                    raise MeasurementError(
                        f"{path}: {key}[{provider!r}] at {spec.x_name}={size} is {rate:g} "
                        f"{spec.metric}, more than {CEILING_MARGIN:g} times the run's "
                        f"ceiling ({record.ceiling.value:g})"
                    )


def placeholder(spec: BenchmarkSpec, reason: str) -> Measurement:
    """A stand-in for a record a draft build cannot use: no numbers, a reason."""
    empty: dict[str, tuple[float | None, ...]] = {}
    return Measurement(
        **_what_is_measured(spec),
        series=empty,
        call_series=empty,
        ceiling=Ceiling(name="not measured", value=math.nan, timings=0),
        code=code_of(spec),
        environment={},
        details={"reason": reason},
        placeholder=True,
    )


def recorded(spec: BenchmarkSpec) -> Measurement:
    """The primary GPU's record of ``spec`` that a page may draw: one from the code as it
    is now.

    A draft build (``$NINJA_GAP_DRAFT`` = 1) gets a placeholder instead of an error when
    the record is missing, malformed or stale.
    """
    try:
        return load_current(spec)
    except MeasurementError as error:
        if not draft():
            raise
        print(f"Draft build: {error}")
        return placeholder(spec, str(error))


def save_and_keep_primary(record: Record, primary: Callable[[], Record]) -> Record:
    """Save ``record`` (just measured) in its GPU's folder and say so; return it when its
    GPU is the primary one, else ``primary()``: the primary GPU's record of the same
    benchmark, which the prose and verdicts use."""
    path = measurements.save(record)
    where = f"{path.parent.name}/{path.name}"
    print(
        _("Recorded {file} on {gpu}.").format(file=where, gpu=record.environment["gpu"])
    )
    return record if path.parent.name == measurements.PRIMARY_GPU else primary()


def measure_or_load(spec: BenchmarkSpec) -> Measurement:
    """On a GPU, measure ``spec`` and record the file in that GPU's folder; otherwise check
    the kernel at its small sizes and print the checks. Return the measurement on the
    primary GPU: the one just made when this is the primary GPU, else :func:`recorded`
    (the page shows the other GPUs' records beside it)."""
    if measuring():
        return save_and_keep_primary(measure(spec), lambda: recorded(spec))
    print(
        _("Not measuring here: checking {benchmark} on {device}.").format(
            benchmark=spec.name, device=translated(describe_device())
        )
    )
    for size in spec.interpreter_sizes:
        print(check(spec, size))
    return recorded(spec)


def records_of(modules: Collection[str]) -> set[str]:
    """The records that code importing ``modules`` (names such as ``kernels.operations.softmax``)
    can draw: those of the benchmarks the modules declare, and every family's launch-cost
    record for the module that times them."""
    names = {spec.name for spec in discover().values() if spec.module in modules}
    if LAUNCH_MODULE in modules:
        names |= {
            measurements.launch_record_name(family)
            for family in families.launch_cost_families()
        }
    return names


def discover() -> dict[str, BenchmarkSpec]:
    """Every :class:`BenchmarkSpec` defined at the top level of a module of the
    operations room (:mod:`kernels.operations`)."""
    package = importlib.import_module(families.OPERATIONS)
    found: dict[str, BenchmarkSpec] = {}
    for module_info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{families.OPERATIONS}.{module_info.name}")
        for value in vars(module).values():
            if isinstance(value, BenchmarkSpec):
                if found.get(value.name, value) is not value:
                    raise ValueError(f"two benchmarks are named {value.name!r}")
                found[value.name] = value
    return dict(sorted(found.items()))

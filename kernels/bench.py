"""The benchmark harness: check every size, then time every provider, then record.

On a GPU, :func:`measure` checks each provider against a float64 reference at every
size, times Triton, PyTorch eager and ``torch.compile`` with ``triton.testing.do_bench``
(median of repeated runs, L2 flushed before each, warm-up outside the timing), measures
the machine's ceiling in the same run, and :func:`measure_or_load` writes the result to
``gallery/measurements/<name>.json``. Without a GPU nothing is timed: the kernel is
checked in Triton's interpreter on small inputs and the recorded file is returned.

Run ``python -m kernels.bench [NAME ...]`` (or ``nox -s bench``) on a GPU to refresh the
recorded files without building the site.
"""

import argparse
import functools
import importlib
import math
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from kernels import measurements, provenance
from kernels.runtime import describe_device, interpreted, kernel_device

Metric = Literal["GB/s", "TFLOP/s"]

# ||out - ref|| / ||ref|| allowed against a float64 reference: a few units of the
# dtype's rounding error (bfloat16 has 8 significant bits, float16 11, float32 24).
RELATIVE_TOLERANCE = {torch.bfloat16: 1e-2, torch.float16: 1e-3, torch.float32: 1e-5}

# do_bench settings, in milliseconds of warm-up and of timed repetitions.
WARMUP_MS = 25
REP_MS = 100


Output = torch.Tensor | tuple[torch.Tensor, ...]


@dataclass(frozen=True)
class BenchmarkSpec:
    """What a kernel module tells the harness about one benchmark.

    ``make_inputs(size, dtype, device, generator)`` returns the positional inputs of one
    call; ``triton`` and ``torch_eager`` take them and return the output; ``work(size,
    dtype)`` is the bytes (``GB/s``) or floating-point operations (``TFLOP/s``) that one
    call needs at least. ``reference`` (default ``torch_eager``) is evaluated on float64
    copies of the inputs to check every provider.

    A *backward* benchmark names in ``grad_inputs`` the inputs that receive gradients;
    its last input is then the gradient of the output. The check compares those
    gradients, and only the backward pass is timed.
    """

    name: str
    metric: Metric
    x_name: str
    dtype: torch.dtype
    gpu_sizes: Sequence[int]
    interpreter_sizes: Sequence[int]
    make_inputs: Callable[..., tuple[torch.Tensor, ...]]
    triton: Callable[..., Output]
    torch_eager: Callable[..., Output]
    work: Callable[[int, torch.dtype], float]
    reference: Callable[..., Output] | None = None
    grad_inputs: tuple[int, ...] = ()
    # False for random operations, whose baselines draw other random numbers.
    check_baselines: bool = True
    # A training step ``step(provider, inputs)`` whose peak GPU memory is recorded.
    peak_memory_step: Callable[[Callable[..., Output], tuple[torch.Tensor, ...]], None] | None = (
        None
    )
    # Extra keys for the measurement file, such as the fixed dimensions of the inputs.
    details: Mapping[str, Any] = field(default_factory=dict)
    # The series Triton is compared with, by name. None: PyTorch eager (``torch_eager``)
    # and ``torch.compile`` of it, compiled afresh for each size.
    baselines: Mapping[str, Callable[..., Output]] | None = None
    # Providers whose peak memory is recorded beside the others but that are not timed,
    # such as a naive version that runs out of memory at large sizes.
    memory_only: Mapping[str, Callable[..., Output]] = field(default_factory=dict)

    @property
    def backward(self) -> bool:
        """Whether this benchmark times a backward pass."""
        return bool(self.grad_inputs)

    @property
    def series_names(self) -> tuple[str, ...]:
        """The names of the timed series, Triton first."""
        baselines = DEFAULT_BASELINES if self.baselines is None else tuple(self.baselines)
        return ("Triton", *baselines)

    def providers(self) -> dict[str, Callable[..., Output]]:
        """The timed providers by series name, for one size (``torch.compile`` is compiled
        afresh each time this is called)."""
        if self.baselines is None:
            return {
                "Triton": self.triton,
                "PyTorch": self.torch_eager,
                "torch.compile": _compiled_for_one_shape(self.torch_eager),
            }
        return {"Triton": self.triton, **self.baselines}


DEFAULT_BASELINES = ("PyTorch", "torch.compile")


class ProviderUnavailable(RuntimeError):
    """Raised by a baseline that cannot run on this machine (a missing SDPA backend, say);
    the harness records why and leaves its series out."""


class CorrectnessError(AssertionError):
    """A provider's output differs from the float64 reference by more than the tolerance."""


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
        dtype = str(self.dtype).removeprefix("torch.")
        return (
            f"{self.provider} {self.benchmark}, {self.x_name}={self.size:,}, {dtype}: "
            f"relative error {self.relative_error:.1e} <= {self.tolerance:.0e}: OK"
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


def _float64(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.double() if tensor.is_floating_point() else tensor


def _forward_for_backward(
    spec: BenchmarkSpec, fn: Callable[..., Output], inputs: Sequence[torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """Run ``fn`` on the inputs of a backward benchmark, the ``grad_inputs`` made leaves
    that require gradients; return the output, its gradient (the last input) and the leaves."""
    *args, grad_output = inputs
    args = [t.detach().requires_grad_() if i in spec.grad_inputs else t for i, t in enumerate(args)]
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


def _poison_free_memory(like: torch.Tensor) -> None:
    # Fill a block the size of the output with NaN and free it: the caching allocator
    # tends to hand that block to the next output, so elements a kernel fails to
    # write show up as NaN instead of as an earlier run's correct values.
    torch.full(like.shape, math.nan, dtype=torch.float32, device=like.device)


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

    Raises :class:`CorrectnessError` if the relative error exceeds the dtype's tolerance.
    """
    dtype = dtype or spec.dtype
    device = kernel_device()
    generator = torch.Generator(device=device).manual_seed(seed)
    inputs = spec.make_inputs(size, dtype, device, generator)
    _poison_free_memory(inputs[0])
    out = evaluate(spec, provider or spec.triton, inputs)
    reference = evaluate(spec, spec.reference or spec.torch_eager, [_float64(t) for t in inputs])
    error = relative_error(out, reference)
    tolerance = RELATIVE_TOLERANCE[dtype]
    if not error <= tolerance:
        raise CorrectnessError(
            f"{spec.name} [{provider_name}] at {spec.x_name}={size:,} ({dtype}): relative error "
            f"{error:.2e} exceeds {tolerance:.0e} against the float64 reference"
        )
    return CheckResult(spec.name, provider_name, spec.x_name, size, dtype, error, tolerance)


def time_ms(fn: Callable[[], Any], grad_to_none: Sequence[torch.Tensor] = ()) -> float:
    """Median time of ``fn`` in milliseconds, L2 flushed before each run (GPU only).

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


def copy_rate(n_bytes_moved: int) -> float:
    """GB/s of a device-to-device copy that moves ``n_bytes_moved`` bytes (half of them
    read, half written), timed the way the kernels are."""
    src = torch.randn(max(1, n_bytes_moved // 8), device="cuda")
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src))
    return 2 * src.numel() * src.element_size() / ms / 1e6


# A ceiling is the best the machine does, and one timing of it can come out low: in one
# H200 build, the copy ceiling timed for one page read 3,805 GB/s where the seven other
# copy ceilings of the same build read 4,245 to 4,250, and that page's kernel showed 110%
# "of the ceiling". Each ceiling is therefore the best of a few timings.
CEILING_TIMINGS = 3


def best_of(rate: Callable[[], float], timings: int = CEILING_TIMINGS) -> float:
    """The highest of ``timings`` calls of ``rate``: a ceiling, robust to one slow run."""
    return max(rate() for _ in range(timings))


def copy_ceiling(n_bytes: int = 2**30) -> dict[str, Any]:
    """The device-to-device copy bandwidth of this GPU in GB/s, counting bytes read and
    written: the best of CEILING_TIMINGS timed copies."""
    return {
        "name": "device copy",
        "value": best_of(lambda: copy_rate(2 * n_bytes)),
        "bytes_copied": n_bytes,
        "timings": CEILING_TIMINGS,
    }


def matmul_ceiling(n: int = 8192) -> dict[str, Any]:
    """The cuBLAS bf16 matrix-product rate of this GPU in TFLOP/s, on random data: the
    best of CEILING_TIMINGS timed products."""
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    value = best_of(lambda: 2 * n**3 / time_ms(lambda: a @ b) / 1e9)
    return {
        "name": "cuBLAS bf16 matmul",
        "value": value,
        "shape": [n, n, n],
        "timings": CEILING_TIMINGS,
    }


def _rate(spec: BenchmarkSpec, size: int, ms: float) -> float:
    scale = 1e6 if spec.metric == "GB/s" else 1e9
    return spec.work(size, spec.dtype) / ms / scale


def _compiled_for_one_shape(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    # A fresh static compile per size: dynamo's recompile limit would otherwise send
    # later sizes back to eager without a word, or a dynamic-shape kernel would be timed.
    torch._dynamo.reset()
    # Timing calls backward() again and again on one graph (retain_graph=True), which
    # compiled graphs that donate their buffers to the backward pass refuse.
    torch._functorch.config.donated_buffer = False
    return torch.compile(fn, dynamic=False)


def measure(spec: BenchmarkSpec) -> dict[str, Any]:
    """Check, then time, every provider at every GPU size; return a measurement document.

    A baseline that raises :class:`ProviderUnavailable` at any size's check is left out
    of the series, and the size and the reason are recorded under ``unavailable``.
    """
    if interpreted():
        raise RuntimeError(f"{spec.name}: timing needs a CUDA GPU; none is available here")
    device = kernel_device()
    series: dict[str, list[float]] = {name: [] for name in spec.series_names}
    unavailable: dict[str, str] = {}
    peak_memory: dict[str, list[float | None]] = {
        name: [] for name in (*spec.series_names, *spec.memory_only)
    }
    # For a GB/s benchmark, a copy that moves as many bytes as one call, timed alike: the
    # rate a perfect kernel of that size could expect, launch and cache effects included.
    same_size_copy: list[float] = []
    worst_error = 0.0
    for size in spec.gpu_sizes:
        providers = {n: fn for n, fn in spec.providers().items() if n not in unavailable}
        for name, fn in list(providers.items()):
            if name != "Triton" and not spec.check_baselines:
                continue
            # Fresh random inputs for every check: a fast version must be right on any input.
            try:
                result = check(spec, size, fn, provider_name=name, seed=len(series[name]) + 1)
            except ProviderUnavailable as reason:
                # A series with a hole would draw a misleading line: leave it out whole.
                unavailable[name] = f"at {spec.x_name}={size}: {reason}"
                del providers[name], series[name], peak_memory[name]
                continue
            worst_error = max(worst_error, result.relative_error)
        generator = torch.Generator(device=device).manual_seed(size)
        inputs = spec.make_inputs(size, spec.dtype, device, generator)
        for name, fn in providers.items():
            call, leaves = _timed_call(spec, fn, inputs)
            series[name].append(_rate(spec, size, time_ms(call, leaves)))
            del call, leaves
        if spec.metric == "GB/s":
            same_size_copy.append(copy_rate(spec.work(size, spec.dtype)))
        if spec.peak_memory_step is not None:
            for name, fn in {**providers, **spec.memory_only}.items():
                step = functools.partial(spec.peak_memory_step, fn, inputs)
                peak_memory[name].append(peak_memory_mb(step))
        del inputs
        torch.cuda.empty_cache()
        print(
            f"{spec.name} {spec.x_name}={size:>11,}: "
            + "  ".join(f"{n} {v[-1]:9.1f}" for n, v in series.items())
            + f" {spec.metric}",
            flush=True,
        )
    ceiling = copy_ceiling() if spec.metric == "GB/s" else matmul_ceiling()
    doc: dict[str, Any] = {
        "benchmark": spec.name,
        "metric": spec.metric,
        "x_name": spec.x_name,
        "x": list(spec.gpu_sizes),
        "series": series,
        "ceiling": ceiling,
        "dtype": str(spec.dtype).removeprefix("torch."),
        **spec.details,
        "pass": "backward" if spec.backward else "forward",
        "timing": {
            "function": "triton.testing.do_bench",
            "statistic": "median",
            "warmup_ms": WARMUP_MS,
            "rep_ms": REP_MS,
            "l2_flushed": True,
        },
        "check": {
            "reference": "float64",
            "providers": list(series) if spec.check_baselines else ["Triton"],
            "worst_relative_error": worst_error,
        },
        "environment": provenance.capture(),
    }
    if same_size_copy:
        doc["same_size_copy"] = same_size_copy
    if unavailable:
        doc["unavailable"] = unavailable
    if spec.peak_memory_step is not None:
        doc["peak_memory_mb"] = peak_memory
    return doc


@dataclass(frozen=True)
class Measurement:
    """A measurement document and whether this run measured it (``fresh``) or loaded it."""

    doc: dict[str, Any]
    fresh: bool


def measure_or_load(spec: BenchmarkSpec) -> Measurement:
    """On a GPU, measure ``spec`` and record the file; otherwise check the kernel in the
    interpreter at its small sizes, print the checks, and load the recorded file."""
    if interpreted():
        print(f"No GPU here: checking {spec.name} on {describe_device()}.")
        for size in spec.interpreter_sizes:
            print(check(spec, size))
        return Measurement(measurements.load(spec.name), fresh=False)
    doc = measure(spec)
    path = measurements.save(doc)
    print(f"Recorded {path.name} on {doc['environment']['gpu']}.")
    return Measurement(doc, fresh=True)


def discover() -> dict[str, BenchmarkSpec]:
    """Every :class:`BenchmarkSpec` defined at the top level of a :mod:`kernels` module."""
    import kernels

    found: dict[str, BenchmarkSpec] = {}
    for module_info in pkgutil.iter_modules(kernels.__path__):
        module = importlib.import_module(f"kernels.{module_info.name}")
        for value in vars(module).values():
            if isinstance(value, BenchmarkSpec):
                if found.get(value.name, value) is not value:
                    raise ValueError(f"two benchmarks are named {value.name!r}")
                found[value.name] = value
    return dict(sorted(found.items()))


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: measure the named benchmarks (all by default) and record their files."""
    specs = discover()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"benchmarks to measure (default: all of {', '.join(specs)})",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(specs))
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; known: {', '.join(specs)}")
    if interpreted():
        parser.exit(2, "kernels.bench: no CUDA GPU here; benchmarks are measured on GPUs only\n")
    for name in args.names or specs:
        path = measurements.save(measure(specs[name]))
        print(f"wrote {path}")


if __name__ == "__main__":
    # Run as a script, this file is the module __main__, whose BenchmarkSpec is another
    # class than the one the kernel modules import: call the real module's main.
    from kernels.bench import main as kernels_bench_main

    kernels_bench_main()

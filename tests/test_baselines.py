"""Extra baselines and Liger-Kernel: how the wrappers call the library, what the harness
records when it is missing, refuses an input or is not accurate enough, and what the
tables and figures make of a series with gaps."""

import dataclasses
import inspect
import sys
import types
from collections.abc import Iterator
from typing import Any

import matplotlib
import pytest
import torch
from records import X, sample

from kernels.declarations.spec import ProviderUnavailable
from kernels.figures.plotting import plot_measurement
from kernels.figures.report import results_table
from kernels.harness import bench, liger, measurements, peers
from kernels.operations import cross_entropy, layer_norm, rms_norm, softmax, vector_add

matplotlib.use("Agg")

FUNCTIONAL = "liger_kernel.transformers.functional"


@pytest.fixture
def without_liger(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """liger_kernel cannot be imported, whether or not it is installed here."""
    monkeypatch.setitem(sys.modules, "liger_kernel", None)
    monkeypatch.setitem(sys.modules, FUNCTIONAL, None)
    liger._functional.cache_clear()
    yield
    liger._functional.cache_clear()


@pytest.fixture
def fake_liger(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, tuple, dict]]]:
    """A stand-in for Liger-Kernel's functional API that records each call and returns
    a marker; yields the list of calls."""
    calls: list[tuple[str, tuple, dict]] = []
    module = types.ModuleType(FUNCTIONAL)
    for name in ("liger_softmax", "liger_layer_norm", "liger_rms_norm", "liger_cross_entropy"):

        def record(*args: Any, _name: str = name, **kwargs: Any) -> str:
            calls.append((_name, args, kwargs))
            return _name

        setattr(module, name, record)
    monkeypatch.setitem(sys.modules, FUNCTIONAL, module)
    liger._functional.cache_clear()
    yield calls
    liger._functional.cache_clear()


def _inputs(spec: Any, size: int) -> tuple[torch.Tensor, ...]:
    return spec.make_inputs(size, spec.dtype, torch.device("cpu"), torch.Generator().manual_seed(0))


@pytest.mark.usefixtures("without_liger")
@pytest.mark.parametrize(
    ("wrapper", "spec"),
    [
        (liger.softmax, softmax.BENCHMARK),
        (liger.layer_norm, layer_norm.BENCHMARK),
        (liger.rms_norm, rms_norm.BENCHMARK),
        (liger.cross_entropy, cross_entropy.BENCHMARK),
    ],
)
def test_without_liger_kernel_each_wrapper_is_unavailable_and_says_why(wrapper, spec) -> None:
    with pytest.raises(ProviderUnavailable, match="liger-kernel cannot be imported here"):
        wrapper(*_inputs(spec, 64))


def test_each_wrapper_calls_the_functional_api_with_the_references_arguments(
    fake_liger: list[tuple[str, tuple, dict]],
) -> None:
    x, weight, bias = _inputs(layer_norm.BENCHMARK, 64)
    logits, targets = _inputs(cross_entropy.BENCHMARK, 64)
    assert liger.softmax(x) == "liger_softmax"
    assert liger.layer_norm(x, weight, bias) == "liger_layer_norm"
    assert liger.rms_norm(x, weight) == "liger_rms_norm"
    assert liger.cross_entropy(logits, targets) == "liger_cross_entropy"
    assert [(name, len(args), kwargs) for name, args, kwargs in fake_liger] == [
        ("liger_softmax", 1, {}),
        ("liger_layer_norm", 4, {}),
        ("liger_rms_norm", 3, {}),
        ("liger_cross_entropy", 2, {"ignore_index": cross_entropy.IGNORE_INDEX}),
    ]
    softmax_args, ln_args, rms_args, ce_args = (args for _, args, _ in fake_liger)
    assert softmax_args[0] is x
    assert ln_args[:3] == (x, weight, bias) and ln_args[3] == 1e-5
    assert rms_args[:2] == (x, weight) and rms_args[2] == 1e-6
    assert ce_args == (logits, targets)


def _default(fn: Any, name: str) -> Any:
    return inspect.signature(fn).parameters[name].default


def test_the_wrappers_defaults_are_the_pytorch_references() -> None:
    assert _default(liger.layer_norm, "eps") == _default(layer_norm.torch_layer_norm, "eps")
    assert _default(liger.rms_norm, "eps") == _default(rms_norm.torch_rms_norm, "eps")
    assert _default(liger.cross_entropy, "ignore_index") == cross_entropy.IGNORE_INDEX


@pytest.mark.usefixtures("fake_liger")
def test_rows_longer_than_liger_takes_are_unavailable_not_an_error() -> None:
    too_long = torch.zeros(1, liger.MAX_ROW + 1)
    for wrapper in (liger.softmax, lambda x: liger.rms_norm(x, x[0])):
        with pytest.raises(ProviderUnavailable, match="at most 65,536 values"):
            wrapper(too_long)


def test_liger_has_no_cross_entropy_backward_alone_to_time() -> None:
    spec = cross_entropy.BACKWARD_BENCHMARK
    assert peers.resolve(spec)[liger.SERIES] is liger.cross_entropy_backward_alone
    with pytest.raises(ProviderUnavailable, match="computes the gradient of the logits"):
        bench.check(spec, 100, liger.cross_entropy_backward_alone, provider_name=liger.SERIES)


# Liger-Kernel's own kernels, run in Triton's interpreter where the library is installed
# (for instance with its wheel unzipped onto PYTHONPATH). Its LayerNorm and RMSNorm
# kernels call ``eps.to(...)`` on a scalar, which the interpreter cannot run: their
# argument mapping is tested above. bfloat16 gradients come out garbled in the
# interpreter (not on a GPU), so the backward pass is checked in float16.
@pytest.mark.parametrize(
    ("spec", "wrapper", "dtype"),
    [
        (softmax.BENCHMARK, liger.softmax, torch.bfloat16),
        (softmax.BENCHMARK, liger.softmax, torch.float16),
        (softmax.BACKWARD_BENCHMARK, liger.softmax, torch.float16),
        (cross_entropy.BENCHMARK, liger.cross_entropy, torch.bfloat16),
        (cross_entropy.BENCHMARK, liger.cross_entropy, torch.float16),
    ],
    # A wrapper by its name: its repr holds an address, which differs between processes.
    ids=lambda value: getattr(value, "name", None) or getattr(value, "__name__", str(value)),
)
def test_liger_kernel_itself_passes_the_check(spec, wrapper, dtype: torch.dtype) -> None:
    pytest.importorskip(FUNCTIONAL)
    liger._functional.cache_clear()
    for size in (1, 781):
        result = bench.check(spec, size, wrapper, provider_name=liger.SERIES, dtype=dtype)
        assert result.relative_error <= result.tolerance


def test_the_reference_is_computed_from_inputs_the_provider_cannot_change() -> None:
    # As Liger-Kernel's cross-entropy writes the gradient over the logits.
    def add_then_clobber(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = x + y
        x.fill_(1e6)
        return out

    result = bench.check(vector_add.BENCHMARK, 1000, add_then_clobber)
    assert result.relative_error <= result.tolerance


# The bookkeeping of measure() without a GPU, as in test_bench.py: stand-ins for timing.
@pytest.fixture
def measure_without_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "interpreted", lambda: False)
    monkeypatch.setattr(bench.timing, "kernel_time_ms", lambda fn, leaves=(): 1.0)
    monkeypatch.setattr(bench.timing, "call_time_ms", lambda fn, leaves=(): 2.0)
    monkeypatch.setattr(
        bench.timing, "copy_ceiling", lambda: {"name": "device copy", "value": 1.0, "timings": 3}
    )
    monkeypatch.setattr(bench.timing, "copy_rate", lambda n_bytes_moved: 1.0)
    environment = dict.fromkeys(measurements.ENVIRONMENT_KEYS, "stand-in")
    monkeypatch.setattr(
        bench.provenance, "capture", lambda: {**environment, "date": "2026-12-03T10:00:00Z"}
    )


def _softmax_spec(**extra: Any) -> Any:
    # Explicit baselines: torch.compile would compile on the CPU for nothing.
    return dataclasses.replace(
        softmax.BENCHMARK, gpu_sizes=[64, 128], baselines={"PyTorch": softmax.torch_softmax},
        **extra,
    )  # fmt: skip


@pytest.mark.usefixtures("measure_without_timing", "without_liger")
def test_a_build_without_liger_records_its_series_unavailable_with_the_reason() -> None:
    spec = _softmax_spec()
    assert spec.series_names == ("Triton", "PyTorch", liger.SERIES)
    record = bench.measure(spec)
    assert record.series[liger.SERIES] == (None, None) == record.call_series[liger.SERIES]
    assert record.series["PyTorch"] == (
        spec.work(64, spec.dtype) / 1e6,
        spec.work(128, spec.dtype) / 1e6,
    )
    reason = record.unavailable[liger.SERIES]
    assert reason.startswith("at N=64, 128: liger-kernel cannot be imported here")
    assert record.details["liger_kernel"] == "cannot be imported"
    # The record is valid as it is, and says why the line is missing under its table.
    assert measurements.from_json(record.to_json(), "x") == record
    notes = results_table(record, min_work=0).notes
    # The table lists the sizes separated by semicolons ("64, 128" could read as 64,128).
    shown = reason.replace("at N=64, 128:", "at N = 64; 128:")
    assert notes == [f"No Liger rate {shown}."]


@pytest.mark.usefixtures("measure_without_timing")
def test_a_baseline_outside_the_tolerance_is_recorded_with_its_error_not_timed() -> None:
    def rough(x: torch.Tensor) -> torch.Tensor:
        return softmax.torch_softmax(x) * 1.05

    spec = _softmax_spec(extra_baselines={"rough": rough})
    record = bench.measure(spec)
    assert record.series["rough"] == (None, None)
    assert record.unavailable["rough"] == (
        "at N=64, 128: relative error 5.0e-02 exceeds the tolerance 1e-02 against the "
        "float64 reference"
    )


@pytest.mark.usefixtures("measure_without_timing")
def test_triton_outside_the_tolerance_still_stops_the_run() -> None:
    spec = dataclasses.replace(_softmax_spec(), triton=lambda x: softmax.torch_softmax(x) * 2)
    with pytest.raises(bench.CorrectnessError):
        bench.measure(spec)


def test_a_series_that_never_ran_is_neither_drawn_nor_in_the_legend() -> None:
    record = sample(
        series={"Triton": [3600.0] * len(X), "PyTorch": [None] * len(X),
                "torch.compile": [3400.0] * len(X)},
        call_series={"Triton": [3000.0] * len(X), "PyTorch": [None] * len(X),
                     "torch.compile": [2900.0] * len(X)},
        unavailable={"PyTorch": "at N=1: gone"},
    )  # fmt: skip
    figure = plot_measurement(record)
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert "PyTorch" not in labels and {"Triton", "torch.compile"} <= set(labels)


def test_a_record_with_a_liger_series_names_the_release_it_ran(fake_liger: list) -> None:
    versions = bench._library_versions(("Triton", "PyTorch", liger.SERIES))
    assert versions == {"liger_kernel": liger.installed_version()}
    assert versions["liger_kernel"] not in (None, "cannot be imported")
    assert bench._library_versions(("Triton", "PyTorch")) == {}


def test_every_peer_series_a_benchmark_names_resolves_to_its_adapter() -> None:
    named = {spec.name: spec for spec in bench.discover().values() if spec.peer_baselines}
    assert {"softmax", "layer_norm", "rms_norm", "cross_entropy"} <= set(named)
    for spec in named.values():
        resolved = peers.resolve(spec)
        assert set(resolved) == set(spec.peer_baselines)
        assert all(fn.__module__ == liger.__name__ for fn in resolved.values())
        # The record covers the adapter's code, though the kernel module never imports it.
        assert "kernels/liger.py" in bench.code_of(spec).files


@pytest.mark.parametrize(
    ("peer_baselines", "message"),
    [
        ({"Flash": "softmax"}, r"softmax: no adapter times the peer series 'Flash'"),
        ({"Liger": "softmin"}, r"softmax: the Liger adapter \(kernels\.harness\.liger\) has no "),
        ({"Liger": "_check_row"}, r"has no operation '_check_row'"),
    ],
)
def test_a_peer_series_without_an_adapter_or_operation_is_named(
    peer_baselines: dict, message: str
) -> None:
    spec = dataclasses.replace(softmax.BENCHMARK, peer_baselines=peer_baselines)
    with pytest.raises(ValueError, match=message):
        peers.resolve(spec)

"""The GB/s sweeps hold the shapes models use, beside the powers of two; a second dtype
has a benchmark of its own; Liger-Kernel is a series wherever it has the operation."""

import pytest
import torch

from kernels.harness import families, liger
from kernels.harness.bench import discover
from kernels.operations import cross_entropy, layer_norm, rms_norm, softmax

BENCHMARKS = discover()
GBPS = {name: spec for name, spec in BENCHMARKS.items() if spec.metric == "GB/s"}

# The sizes each GB/s benchmark must time, beside its powers of two, as its family
# declares them (model_shapes in kernels/declarations/family.py).
REQUIRED = {
    name: sizes
    for family in families.discover().values()
    for name, sizes in family.model_shapes.items()
}
# Benchmarks whose size is a number of rows at one hidden size.
ROW_SWEEPS = {"layer_norm_rows": layer_norm, "rms_norm_rows": rms_norm}
# A lesson's experiment, not a model's operation: no model shapes to hold.
LESSON_SWEEPS = {"row_sums_loops"}
# Kernels with a benchmark in bfloat16 and its float16 twin.
FP16_TWINS = ("softmax", "layer_norm", "rms_norm", "cross_entropy")
# The modules whose every benchmark has a Liger series.
LIGER_MODULES = {softmax.__name__, layer_norm.__name__, rms_norm.__name__, cross_entropy.__name__}


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def test_every_gbps_benchmark_holds_model_shapes_or_counts_rows() -> None:
    # A sweep over a model's sizes declares them; one over a number of rows (at one
    # hidden size, or a lesson's experiment) has none to hold.
    assert set(REQUIRED) <= set(GBPS)
    for name, spec in GBPS.items():
        assert name in REQUIRED or spec.x_name == "rows", f"{name} declares no model shapes"
    assert set(ROW_SWEEPS) | LESSON_SWEEPS == {n for n, s in GBPS.items() if s.x_name == "rows"}


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_the_sweep_holds_real_shapes_beside_powers_of_two(name: str) -> None:
    sizes = GBPS[name].gpu_sizes
    assert REQUIRED[name] <= set(sizes), f"{name} lacks {sorted(REQUIRED[name] - set(sizes))}"
    if not name.endswith("_fp16"):  # a second dtype may time only a few real shapes
        assert any(is_power_of_two(size) for size in sizes)


@pytest.mark.parametrize("name", sorted(GBPS))
def test_sizes_grow_and_never_repeat(name: str) -> None:
    sizes = list(GBPS[name].gpu_sizes)
    assert sizes == sorted(set(sizes))


def test_the_softmax_sweep_reaches_2_to_the_18() -> None:
    assert max(softmax.BENCHMARK.gpu_sizes) == 262144


@pytest.mark.parametrize("name", sorted(ROW_SWEEPS))
def test_a_row_sweep_has_fewer_than_1024_rows_and_more_than_16k(name: str) -> None:
    spec, module = GBPS[name], ROW_SWEEPS[name]
    assert spec.x_name == "rows"
    assert min(spec.gpu_sizes) < 1024 and max(spec.gpu_sizes) > 16384
    assert module.ROWS == 16384  # the rows of the module's other benchmarks
    # The inputs have as many rows as the size says, of the sweep's hidden size.
    generator = torch.Generator().manual_seed(0)
    x, *_ = spec.make_inputs(3, spec.dtype, torch.device("cpu"), generator)
    assert x.shape == (3, module.ROW_SWEEP_COLS)
    # Its byte count is the forward benchmark's, with the rows and columns swapped in.
    forward = module.BENCHMARK
    assert spec.work(module.ROWS, spec.dtype) == forward.work(module.ROW_SWEEP_COLS, spec.dtype)


@pytest.mark.parametrize("name", FP16_TWINS)
def test_a_bfloat16_benchmark_has_a_float16_twin(name: str) -> None:
    spec, twin = BENCHMARKS[name], BENCHMARKS[f"{name}_fp16"]
    assert (spec.dtype, twin.dtype) == (torch.bfloat16, torch.float16)
    assert twin.module == spec.module and twin.series_names == spec.series_names
    assert twin.make_inputs is spec.make_inputs and twin.work is spec.work


def test_vector_add_is_recorded_in_float16_too() -> None:
    assert BENCHMARKS["vector_add_fp16"].dtype == torch.float16


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_liger_is_a_series_exactly_where_it_has_the_operation(name: str) -> None:
    spec = BENCHMARKS[name]
    has_liger = liger.SERIES in spec.series_names
    assert has_liger == (spec.module in LIGER_MODULES)
    if has_liger:
        assert spec.series_names == ("Triton", "PyTorch", "torch.compile", liger.SERIES)

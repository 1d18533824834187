"""kernels.harness.ceilings and the tolerances per dtype: a benchmark in a dtype the harness has
not met (fp32, fp8) gets its own ceiling and tolerance without an edit of the harness."""

import pytest
import torch

from kernels.harness import bench, ceilings, timing


def _stand_ins(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr(timing, "copy_ceiling", lambda: calls.append("copy") or {})
    monkeypatch.setattr(timing, "matmul_ceiling", lambda n=8192: calls.append(f"bf16 {n}") or {})
    return calls


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float8_e4m3fn])
def test_bytes_are_held_against_the_copy_whatever_they_hold(
    monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype
) -> None:
    calls = _stand_ins(monkeypatch)
    ceilings.ceiling_for("GB/s", dtype)
    assert calls == ["copy"]


def test_a_bf16_product_is_held_against_the_ceiling_every_record_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _stand_ins(monkeypatch)
    ceilings.ceiling_for("TFLOP/s", torch.bfloat16)
    assert calls == ["bf16 8192"]


@pytest.mark.parametrize(
    ("dtype", "name"),
    [
        (torch.float16, "cuBLAS fp16 matmul"),
        (torch.float32, "cuBLAS fp32 matmul"),
        (torch.float8_e4m3fn, "cuBLAS fp8 e4m3 matmul"),
        (torch.float8_e5m2, "cuBLAS fp8 e5m2 matmul"),
    ],
)
def test_another_dtype_s_product_is_timed_in_that_dtype(
    monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype, name: str
) -> None:
    timed = []

    def kernel_time_ms(call) -> float:
        timed.append(call())
        return 2.0

    monkeypatch.setattr(timing, "kernel_time_ms", kernel_time_ms)
    real = ceilings.product  # the product, small and on the CPU: no GPU here
    monkeypatch.setattr(ceilings, "product", lambda d, n: real(d, 32, device="cpu"))
    ceiling = ceilings.ceiling_for("TFLOP/s", dtype)
    assert ceiling["name"] == name and ceiling["shape"] == [8192] * 3
    assert ceiling["value"] == pytest.approx(2 * 8192**3 / 2.0 / 1e9)
    assert len(timed) == timing.CEILING_TIMINGS
    assert timed[0].shape == (32, 32)


def test_the_product_is_the_library_s_in_that_dtype() -> None:
    for dtype in (torch.float16, torch.float32, torch.float8_e4m3fn):
        out = ceilings.product(dtype, 16, device="cpu")()
        assert out.shape == (16, 16)
        expected = torch.bfloat16 if dtype in ceilings.FP8 else dtype
        assert out.dtype == expected


def test_a_dtype_with_no_product_ceiling_is_named() -> None:
    with pytest.raises(ValueError, match=r"no matrix-product ceiling for torch\.int8"):
        ceilings.ceiling_for("TFLOP/s", torch.int8)


def test_a_metric_with_no_ceiling_is_named() -> None:
    with pytest.raises(ValueError, match="no ceiling for the metric 'us'"):
        ceilings.ceiling_for("us", torch.bfloat16)


def test_tolerances_of_the_dtypes_the_table_holds_are_the_table_s() -> None:
    for dtype, allowed in bench.RELATIVE_TOLERANCE.items():
        assert bench.relative_tolerance(dtype) == allowed


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2, torch.float64])
def test_another_floating_dtype_is_allowed_one_unit_of_its_rounding(
    dtype: torch.dtype,
) -> None:
    assert bench.relative_tolerance(dtype) == torch.finfo(dtype).eps


def test_an_integer_dtype_has_no_relative_tolerance() -> None:
    with pytest.raises(ValueError, match=r"no relative tolerance for torch\.int8"):
        bench.relative_tolerance(torch.int8)

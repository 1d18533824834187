"""The ablation's kernel: every series computes causal attention, whatever it takes out."""

import pytest
import torch
from kernel_inputs import assert_close_to_float64, randn

from kernels.operations import attention, attention_ablation
from kernels.operations.attention_ablation import ABLATIONS, Ablation, ablated_attention


@pytest.mark.parametrize("seq_len", [32, 37], ids=["whole-blocks", "ragged"])
@pytest.mark.parametrize("name", ABLATIONS, ids=lambda name: name.replace(" ", "-"))
def test_every_ablation_matches_float64_causal_attention(name: str, seq_len: int) -> None:
    q, k, v = (randn(1, 2, seq_len, 64, dtype=torch.float16, seed=s) for s in range(3))
    out = ablated_attention(q, k, v, ABLATIONS[name])
    reference = attention.naive_attention(q.double(), k.double(), v.double(), causal=True)
    assert_close_to_float64(out, reference, torch.float16)


def test_the_ablations_take_out_one_thing_each() -> None:
    # Each series differs from the course's settings in exactly one field, and the first
    # is the course's kernel rebuilt, so that a series' rate says what that one thing gave.
    course = Ablation()
    changed = {
        name: [key for key in vars(course) if getattr(ablation, key) != getattr(course, key)]
        for name, ablation in ABLATIONS.items()
    }
    assert changed.pop("rebuilt, nothing taken out") == []
    assert all(len(fields) == 1 for fields in changed.values()), changed


def test_the_benchmark_times_the_course_kernel_beside_each_ablation_and_cudnn() -> None:
    spec = attention_ablation.ABLATION_BENCHMARK
    assert spec.details["causal"] is True
    assert set(spec.baselines) == {*ABLATIONS, "SDPA cuDNN"}
    assert any(size % 128 for size in spec.gpu_sizes)
    assert any(size % 128 == 0 for size in spec.gpu_sizes)

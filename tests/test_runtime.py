"""kernels.triton_helpers.runtime.bind_cuda_context: each thread binds each CUDA device's context
once,
by a runtime call that needs it, before Triton builds a TMA descriptor there."""

import threading

import pytest
import torch

from kernels.triton_helpers import runtime


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[torch.device]:
    """The devices torch.cuda.mem_get_info is called for (not called for real: no GPU here)."""
    made: list[torch.device] = []
    monkeypatch.setattr(torch.cuda, "mem_get_info", made.append)
    monkeypatch.setattr(runtime, "_bound", threading.local())
    return made


def test_a_thread_binds_each_cuda_device_once(calls: list[torch.device]) -> None:
    first, second = torch.device("cuda", 0), torch.device("cuda", 1)
    for device in (first, first, second, first, second):
        runtime.bind_cuda_context(device)
    assert calls == [first, second]


def test_every_thread_binds_its_own(calls: list[torch.device]) -> None:
    device = torch.device("cuda", 0)
    runtime.bind_cuda_context(device)
    worker = threading.Thread(target=runtime.bind_cuda_context, args=(device,))
    worker.start()
    worker.join()
    assert calls == [device, device]


def test_the_cpu_has_no_context_to_bind(calls: list[torch.device]) -> None:
    runtime.bind_cuda_context(torch.device("cpu"))
    assert calls == []

"""kernels.triton_helpers.direct_launch: the compiled kernel is reused with the arguments in the
order
Triton's own launch passes them, and a new specialisation compiles anew. Triton's CPU
interpreter has no compiled kernels, so a stand-in kernel and driver take their place."""

import types

import pytest
import torch
from triton import knobs

from kernels.triton_helpers import direct_launch


class _Compiled:
    function = "function"
    packed_metadata = "packed"

    def __init__(self, launches: list) -> None:
        self.launches = launches

    def run(self, *launched: object) -> None:
        self.launches.append(launched)


class _Kernel:
    """Three parameters and two constexprs, the last with a default, like a @triton.jit."""

    def __init__(self) -> None:
        self.arg_names = ["x_ptr", "out_ptr", "n", "BLOCK", "EVEN"]
        self.params = [types.SimpleNamespace(name=n, default=None) for n in self.arg_names]
        self.params[-1].default = False
        self.compiles: list[dict] = []
        self.launches: list[tuple] = []

    def run(self, *args: object, grid: tuple, warmup: bool, **kwargs: object) -> _Compiled:
        self.compiles.append(kwargs)
        return _Compiled(self.launches)

    def __getitem__(self, grid: tuple):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch) -> _Kernel:
    fake_driver = types.SimpleNamespace(
        active=types.SimpleNamespace(
            get_current_device=lambda: 0, get_current_stream=lambda device: "stream"
        )
    )
    monkeypatch.setattr(direct_launch, "_INTERPRETED", False)
    monkeypatch.setattr(direct_launch, "driver", fake_driver)
    monkeypatch.setattr(direct_launch, "_compiled", {})
    return _Kernel()


def test_a_second_call_launches_the_compiled_kernel_with_every_parameter_in_order(
    direct: _Kernel,
) -> None:
    x, out = torch.zeros(64), torch.zeros(64)
    direct_launch.launch(direct, (4,), x, out, 64, BLOCK=16, num_warps=4)
    assert len(direct.compiles) == 1 and direct.launches == []  # Triton's launch, once
    direct_launch.launch(direct, (4,), x, out, 64, BLOCK=16, num_warps=4)
    assert len(direct.compiles) == 1
    (launched,) = direct.launches
    # grid padded to three, stream, function, metadata (none for an empty chain of launch
    # hooks), the hooks, then the parameters: the positional ones, then the constexprs by
    # name in signature order (num_warps is an option, not a parameter), defaults filled in.
    hooks = (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook)
    assert launched == (4, 1, 1, "stream", "function", "packed", None, *hooks,
                        x, out, 64, 16, False)  # fmt: skip


@pytest.mark.parametrize(
    "changed",
    [
        {"n": 32},  # still a multiple of 16: the same kernel
        {"n": 1},  # 1 is specialised as a constant
        {"n": 63},  # no longer a multiple of 16
        {"x": torch.zeros(64, dtype=torch.float64)},  # another dtype
        {"x": torch.zeros(65)[1:]},  # no longer on a 16-byte boundary
        {"BLOCK": 32},
        {"num_warps": 8},
    ],
    ids=["same-divisibility", "one", "odd", "dtype", "misaligned", "constexpr", "option"],
)
def test_what_triton_specialises_on_selects_the_compiled_kernel(
    direct: _Kernel, changed: dict
) -> None:
    call = {"x": torch.zeros(64), "n": 64, "BLOCK": 16, "num_warps": 4}
    out = torch.zeros(64)

    def launch(x, n, BLOCK, num_warps) -> None:
        direct_launch.launch(direct, (4,), x, out, n, BLOCK=BLOCK, num_warps=num_warps)

    launch(**call)
    launch(**{**call, **changed})
    if changed == {"n": 32}:
        assert len(direct.compiles) == 1  # Triton would reuse its kernel too
    else:
        assert len(direct.compiles) == 2


def test_off_it_is_kernel_grid(direct: _Kernel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(direct_launch, "DIRECT", False)
    for _ in range(2):
        direct_launch.launch(direct, (4,), torch.zeros(4), torch.zeros(4), 4, BLOCK=4)
    assert len(direct.compiles) == 2 and direct.launches == []


def test_a_launch_traced_by_torch_compile_leaves_eager_calls_a_kernel_to_launch(
    direct: _Kernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # While Dynamo traces, kernel.run is recorded into its graph and returns None, not a
    # compiled kernel. On an H100 the launcher cached that None, and the next eager call
    # of swiglu at the same shapes failed: 'NoneType' object has no attribute 'run'.
    tracing = True
    compile_for_real = direct.run

    def run(*args: object, **kwargs: object) -> _Compiled | None:
        compiled = compile_for_real(*args, **kwargs)
        return None if tracing else compiled

    monkeypatch.setattr(direct, "run", run)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: tracing)
    x, out = torch.zeros(64), torch.zeros(64)
    direct_launch.launch(direct, (4,), x, out, 64, BLOCK=16)
    assert direct_launch._compiled == {}  # traced: kernel[grid](...), nothing kept
    tracing = False
    for _ in range(2):
        direct_launch.launch(direct, (4,), x, out, 64, BLOCK=16)
    assert len(direct.compiles) == 2 and len(direct.launches) == 1

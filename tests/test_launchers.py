"""The launchers' hot path: host helpers that replace Triton's, the cached device
properties and autotune choices (never stale for another key), launches without autograd
when no gradient is wanted, row launchers on any contiguous layout, and the
cross-entropy target check read from the loss."""

import math
from types import SimpleNamespace

import pytest
import torch
import triton
import triton.language as tl
from kernel_inputs import DEVICE, assert_close_to_float64, randn

from kernels.operations import (
    attention,
    cross_entropy,
    dropout,
    layer_norm,
    rms_norm,
    softmax,
    swiglu,
    vector_add,
)
from kernels.triton_helpers import launch


def test_cdiv_and_row_block_agree_with_triton() -> None:
    for n in [*range(1, 300), 2**16 - 1, 2**16, 2**16 + 1, 2**31 - 1, 2**31, 2**40 + 3]:
        assert launch.row_block(n) == triton.next_power_of_2(n), n
        for d in (1, 3, 16, 1024, 2**20):
            assert launch.cdiv(n, d) == triton.cdiv(n, d), (n, d)
    assert launch.cdiv(0, 8) == 0


@pytest.mark.parametrize(
    ("helper", "torch_function", "answers", "read"),
    [
        ("device_capability", "get_device_capability", [(9, 0), (8, 0)], lambda v: v),
        (
            "multiprocessors",
            "get_device_properties",
            [SimpleNamespace(multi_processor_count=132), SimpleNamespace(multi_processor_count=78)],
            lambda v: v.multi_processor_count,
        ),
    ],
)
def test_device_properties_are_asked_once_per_device(
    helper: str, torch_function: str, answers: list, read, monkeypatch: pytest.MonkeyPatch
) -> None:
    devices = [torch.device("cuda", 0), torch.device("cuda", 1)]
    asked = []

    def ask(device):
        asked.append(device)
        return answers[device.index]

    monkeypatch.setattr(torch.cuda, torch_function, ask)
    cached = getattr(launch, helper)
    cached.cache_clear()
    try:
        for device in devices + devices:
            assert cached(device) == read(answers[device.index])
        assert asked == devices
    finally:
        cached.cache_clear()


@triton.jit
def _write_block_kernel(out_ptr, n, BLOCK: tl.constexpr):
    # Each element in range gets the tile size the launch used.
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, offsets * 0 + BLOCK, mask=offsets < n)


def _by_size(configs: list, named_args: dict, **kwargs) -> list:
    # The choice is a function of the key, n: tiles of 16 below 64 elements, else 32.
    return [configs[0] if named_args["n"] < 64 else configs[1]]


def _tuner_and_hook_calls() -> tuple:
    hook_calls = []

    def record(args: dict) -> None:
        hook_calls.append(args["BLOCK"])

    configs = [triton.Config({"BLOCK": 16}, pre_hook=record), triton.Config({"BLOCK": 32})]
    tuner = triton.autotune(
        configs=configs, key=["n"], prune_configs_by={"early_config_prune": _by_size}
    )(_write_block_kernel)
    return tuner, hook_calls


def _grid(n: int):
    return lambda meta: (launch.cdiv(n, meta["BLOCK"]),)


def test_launch_tuned_keeps_each_keys_choice_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    tuner, hook_calls = _tuner_and_hook_calls()
    tuner_runs = []
    run = tuner.run
    monkeypatch.setattr(tuner, "run", lambda *a, **k: tuner_runs.append(1) or run(*a, **k))

    def launch_and_read(n: int, dtype: torch.dtype, by_keyword: bool = False) -> set:
        out = torch.zeros(100, dtype=dtype, device=DEVICE)
        if by_keyword:
            launch.launch_tuned(tuner, _grid(n), out, n=n)
        else:
            launch.launch_tuned(tuner, _grid(n), out, n)
        assert not out[n:].any()
        return set(out[:n].tolist())

    assert launch_and_read(50, torch.int32) == {16}
    assert (len(tuner_runs), hook_calls[-1]) == (1, 16)
    assert launch_and_read(100, torch.int32) == {32}
    assert len(tuner_runs) == 2
    # Seen keys launch without the autotuner, each with its own choice, and the
    # chosen configuration's pre-hook still runs.
    hooks_before = len(hook_calls)
    assert launch_and_read(50, torch.int32) == {16}
    assert launch_and_read(100, torch.int32) == {32}
    assert launch_and_read(50, torch.int32) == {16}
    assert len(tuner_runs) == 2
    assert hook_calls[hooks_before:] == [16, 16]
    # Another dtype is another key for the autotuner: it goes through it again.
    assert launch_and_read(50, torch.int64) == {16}
    assert len(tuner_runs) == 3
    # A key argument passed by keyword is in the key too.
    assert launch_and_read(50, torch.int32, by_keyword=True) == {16}
    assert launch_and_read(100, torch.int32, by_keyword=True) == {32}
    assert launch_and_read(100, torch.int32, by_keyword=True) == {32}
    assert len(tuner_runs) == 5


def _inputs(name: str) -> tuple[object, tuple[torch.Tensor, ...], dict]:
    """A launcher and small inputs for it: (function, tensors, other arguments)."""
    x, y = randn(4, 40), randn(4, 40, seed=1)
    if name == "add":
        return vector_add.add, (x, y), {}
    if name == "softmax":
        return softmax.softmax, (x,), {}
    if name == "layer_norm":
        return layer_norm.layer_norm, (x, randn(40, seed=2), randn(40, seed=3)), {}
    if name == "rms_norm":
        return rms_norm.rms_norm, (x, randn(40, seed=2)), {}
    if name == "dropout":
        return dropout.dropout, (x,), {"p": 0.3, "seed": 7}
    if name == "swiglu":
        return swiglu.swiglu, (x, y), {}
    if name == "attention":
        q, k, v = (randn(1, 2, 20, 16, dtype=torch.float16, seed=s) for s in range(3))
        return attention.attention, (q, k, v), {"causal": True}
    targets = torch.tensor([1, 39, 0, -100], device=DEVICE)
    return lambda logits: cross_entropy.cross_entropy(logits, targets), (x,), {}


LAUNCHERS = [
    "add",
    "softmax",
    "layer_norm",
    "rms_norm",
    "dropout",
    "swiglu",
    "attention",
    "cross_entropy",
]


@pytest.mark.parametrize("name", LAUNCHERS)
def test_without_a_gradient_to_record_the_result_is_the_same(name: str) -> None:
    function, tensors, kwargs = _inputs(name)
    through_autograd = function(*[t.detach().requires_grad_() for t in tensors], **kwargs)
    assert through_autograd.grad_fn is not None
    direct = function(*tensors, **kwargs)
    assert direct.grad_fn is None and not direct.requires_grad
    with torch.no_grad():
        without_grad_mode = function(*[t.detach().requires_grad_() for t in tensors], **kwargs)
    assert without_grad_mode.grad_fn is None
    for result in (direct, without_grad_mode):
        assert result.shape == through_autograd.shape
        # The same bits: a launcher may store less without a backward pass to come, but
        # it must not compute the result another way.
        assert torch.equal(result, through_autograd.detach())


def test_layer_norm_runs_one_compiled_kernel_with_or_without_statistics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # On the H200, LayerNorm with STATS a compile-time flag gave results that differed in
    # the last bits with and without a gradient to record: two binaries, which the GPU's
    # assembler scheduled differently. Now both calls launch the same specialisation.
    launched = []

    def spy(kernel, grid, *args, **constexprs):
        kinds = tuple(a.dtype if isinstance(a, torch.Tensor) else type(a) for a in args)
        launched.append((kernel, kinds, tuple(sorted(constexprs.items()))))

    monkeypatch.setattr(layer_norm, "launch", spy)
    x, weight, bias = randn(4, 40), randn(40, seed=2), randn(40, seed=3)
    layer_norm.layer_norm(x, weight, bias)
    layer_norm.layer_norm(x.requires_grad_(), weight, bias)
    assert len(launched) == 2 and launched[0] == launched[1]


ROW_LAUNCHERS = {
    "softmax": (lambda x, w, b: softmax.softmax(x), lambda x, w, b: torch.softmax(x, -1)),
    "layer_norm": (
        layer_norm.layer_norm,
        lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b),
    ),
    "rms_norm": (
        lambda x, w, b: rms_norm.rms_norm(x, w),
        lambda x, w, b: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6),
    ),
}


@pytest.mark.parametrize("name", ROW_LAUNCHERS)
@pytest.mark.parametrize(
    "make_x",
    [
        lambda: randn(2, 3, 40),
        # Contiguous, though the size-one dimension's stride is not 3 * 40.
        lambda: randn(3, 1, 40).transpose(0, 1),
        lambda: randn(40),
    ],
    ids=["3-d", "size-one dim with another stride", "one row"],
)
def test_row_launchers_take_any_contiguous_layout(name: str, make_x) -> None:
    launcher, reference = ROW_LAUNCHERS[name]
    x, weight, bias = make_x(), randn(40, seed=2), randn(40, seed=3)
    assert x.is_contiguous()
    out = launcher(x, weight, bias)
    assert out.shape == x.shape and out.is_contiguous()
    expected = reference(x.double(), weight.double(), bias.double())
    assert_close_to_float64(out, expected, torch.float32)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_cross_entropy_refuses_a_bad_target_whatever_the_logits_need(requires_grad: bool) -> None:
    logits = randn(3, 10).requires_grad_(requires_grad)
    targets = torch.tensor([1, 10, 2], device=DEVICE)
    message = r"^targets holds 10, outside 0\.\.9 \(and not ignore_index\)$"
    with pytest.raises(ValueError, match=message):
        cross_entropy.cross_entropy(logits, targets)


# The interpreter's 0 / 0 in the kernel for the mean warns; the GPU's does not.
@pytest.mark.filterwarnings("ignore:invalid value encountered in divide:RuntimeWarning")
def test_a_nan_loss_from_the_logits_is_not_blamed_on_the_targets() -> None:
    logits = randn(3, 10)
    logits[1, 4] = math.nan
    targets = torch.tensor([1, 4, 0], device=DEVICE)
    assert math.isnan(cross_entropy.cross_entropy(logits, targets).item())
    # Every row ignored: 0 / 0 rows, NaN as in PyTorch, and no target to blame.
    ignored = torch.full((3,), -100, device=DEVICE)
    assert math.isnan(cross_entropy.cross_entropy(randn(3, 10), ignored).item())
    assert math.isnan(torch.nn.functional.cross_entropy(randn(3, 10), ignored).item())


def test_cross_entropy_with_an_ignore_index_among_the_classes() -> None:
    logits, targets = randn(4, 10), torch.tensor([3, 3, 9, 0], device=DEVICE)
    loss = cross_entropy.cross_entropy(logits, targets, ignore_index=3)
    expected = torch.nn.functional.cross_entropy(logits.double(), targets, ignore_index=3)
    assert_close_to_float64(loss, expected, torch.float32)
    with pytest.raises(ValueError, match=r"^targets holds -100, outside 0\.\.9"):
        cross_entropy.cross_entropy(logits, torch.tensor([3, -100, 9, 0], device=DEVICE), 3)

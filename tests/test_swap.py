"""swap_in: a reader's version of a course function, class or kernel runs where the
course's own code calls it (launchers, benchmark specs, autotune wrappers)."""

import functools
import types

import pytest
import torch
import triton
import triton.language as tl

from kernels.declarations.spec import BenchmarkSpec
from kernels.harness.swap import swap_in


def _module() -> types.ModuleType:
    # A small kernel module: a kernel, its autotuned wrapper, a cached helper, a
    # launcher, an autograd Function and a spec that holds the launcher.
    module = types.ModuleType("course_module")
    code = """
import functools
import torch
import triton
import triton.language as tl
from kernels.declarations.spec import BenchmarkSpec

@triton.jit
def scale_kernel(x_ptr, out_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * FACTOR, mask=mask)

def first(configs, named_args, **kwargs):
    return configs[:1]  # one candidate left: chosen without timing (no GPU here)

tuned = triton.autotune(
    [triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"],
    prune_configs_by={"early_config_prune": first},
)(scale_kernel)

@functools.cache
def factor():
    return 2

def scale(x):
    out = torch.empty_like(x)
    tuned[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, out, x.numel(), FACTOR=factor())
    return out

class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return scale(x)

    @staticmethod
    def backward(ctx, grad):
        return scale(grad)

SPEC = BenchmarkSpec(
    name="scale", metric="GB/s", x_name="N", dtype=torch.float32, gpu_sizes=(16,),
    interpreter_sizes=(16,), make_inputs=lambda *a: (), triton=scale,
    torch_eager=lambda x: 2 * x, work=lambda n, d: n,
)
"""
    exec(compile(code, "course_module.py", "exec"), vars(module))
    return module


X = torch.arange(20, dtype=torch.float32)


def test_a_launcher_swapped_in_runs_through_the_spec_with_the_module_s_names() -> None:
    module = _module()
    assert torch.equal(module.SPEC.triton(X), 2 * X)

    def scale(x: torch.Tensor) -> torch.Tensor:
        # A reader's edit: reads `tuned` and `factor`, which this test's globals lack.
        out = torch.empty_like(x)
        grid = (triton.cdiv(x.numel(), 16),)  # BLOCK is 16, the pruned candidate
        tuned[grid](x, out, x.numel(), FACTOR=factor() + 1)  # noqa: F821
        return out + 1

    bound = swap_in(module, scale)
    assert module.scale is bound and bound.__globals__ is vars(module)
    assert torch.equal(module.SPEC.triton(X), 3 * X + 1)  # the spec holds the new one
    assert module.SPEC.name == "scale" and isinstance(module.SPEC, BenchmarkSpec)
    # The autograd Function looks the launcher up in the module when it runs.
    assert torch.equal(module.Twice.apply(X), 3 * X + 1)


def test_a_kernel_swapped_in_runs_through_the_autotune_wrapper_tuned_again() -> None:
    module = _module()
    assert torch.equal(module.scale(X), 2 * X)
    assert module.tuned.cache  # tuned once, for the module's kernel

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) - FACTOR, mask=mask)

    assert swap_in(module, scale_kernel) is scale_kernel  # a kernel keeps its globals
    assert module.scale_kernel is scale_kernel and module.tuned.fn is scale_kernel
    assert not module.tuned.cache
    assert torch.equal(module.scale(X), X - 2)


def test_a_cached_helper_and_a_class_get_the_module_s_names() -> None:
    module = _module()

    @functools.lru_cache(maxsize=4)
    def factor() -> int:
        return 5

    bound = swap_in(module, factor)
    assert bound.__wrapped__.__globals__ is vars(module)
    assert bound.cache_parameters()["maxsize"] == 4
    assert torch.equal(module.scale(X), 5 * X)

    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
            return scale(x) + 1  # noqa: F821 (the module's launcher)

        @staticmethod
        def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
            return scale(grad.contiguous())  # noqa: F821

    swap_in(module, Twice)
    x = X.clone().requires_grad_()
    module.Twice.apply(x).sum().backward()
    assert torch.equal(x.grad, torch.full_like(X, 5.0))
    assert torch.equal(module.Twice.apply(X), 5 * X + 1)


def test_a_tuning_hook_swapped_in_is_what_the_wrapper_calls() -> None:
    module = _module()

    def first(configs: list, named_args: dict, **kwargs: object) -> list:
        return configs[1:]  # the other candidate: BLOCK 32

    swap_in(module, first)
    assert module.tuned.early_config_prune is module.first
    assert torch.equal(module.scale(X), 2 * X)
    assert [config.kwargs["BLOCK"] for config in module.tuned.cache.values()] == [32]


def test_a_new_name_is_added_and_bad_arguments_are_named() -> None:
    module = _module()

    def helper() -> int:
        return factor()  # noqa: F821 (the module's)

    assert swap_in(module, helper)() == 2 and module.helper() == 2
    with pytest.raises(TypeError, match="takes a module"):
        swap_in("course_module", helper)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="named function"):
        swap_in(module, 3)

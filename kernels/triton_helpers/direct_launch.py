"""Launching a compiled kernel again without Triton's per-call work.

``kernel[grid](*args, **constexprs)`` does, on every call, what only the first call of a
shape needs: it binds the arguments to the kernel's signature, works out how Triton
specialises each of them (a tensor's dtype and whether it starts on a 16-byte boundary,
whether an integer is 1 or a multiple of 16), turns that and the options into a key,
looks the compiled kernel up, checks the globals it read, and only then hands it to the
driver. On a launcher called in a training loop, that is most of the host's time.

:func:`launch` does the same the first time it sees a specialisation, keeps the compiled
kernel under a key built from the arguments as Triton would specialise them, and later
calls hand it to the driver directly (``CompiledKernel.run``, the call Triton's own
launch ends with). In Triton's interpreter, with :data:`DIRECT` off, or while
``torch.compile`` traces the launcher, it is ``kernel[grid](...)``.
"""

from collections.abc import Sequence

import torch
import triton
from triton import knobs
from triton.runtime.driver import driver
from triton.tools.tensor_descriptor import TensorDescriptor

from .runtime import interpreted

# Whether launchers launch compiled kernels directly (off: through kernel[grid](...)).
DIRECT = True

# The compiled kernel of each specialisation launched so far, with the values of the
# kernel's parameters that follow the positional arguments (its constexprs, in order).
_compiled: dict[tuple, tuple[object, tuple]] = {}
_INTERPRETED = interpreted()


def _specialisation(arg: object) -> object:
    # What Triton specialises a compiled kernel on for this argument (a superset of it).
    if isinstance(arg, torch.Tensor):
        return arg.dtype, arg.data_ptr() % 16 == 0
    if type(arg) is int:
        return int, arg == 1, arg % 16 == 0, -(2**31) <= arg < 2**31, arg < 2**63
    if isinstance(arg, TensorDescriptor):
        return (
            TensorDescriptor,
            arg.base.dtype,
            tuple(arg.block_shape),
            tuple(arg.shape),
        )
    return type(arg)


def launch(
    kernel: triton.runtime.JITFunction,
    grid: Sequence[int],
    *args: object,
    **constexprs: object,
) -> None:
    """``kernel[grid](*args, **constexprs)``, the compiled kernel launched directly after
    the first call of each specialisation. ``grid``: a tuple of up to three ints (not a
    function of the configuration); ``args``: the kernel's leading parameters, in order;
    ``constexprs``: the rest by name, and launch options such as ``num_warps``."""
    # Under torch.compile, Dynamo records ``kernel[grid](...)`` into its graph as a
    # launch of a user-defined Triton kernel. It cannot trace a direct launch, and a
    # ``kernel.run`` it traces returns no compiled kernel: cached, that None broke every
    # later eager call of the same specialisation (seen on an H100).
    if _INTERPRETED or not DIRECT or torch.compiler.is_compiling():
        kernel[grid](*args, **constexprs)
        return
    device = driver.active.get_current_device()
    key = (kernel, device, tuple(map(_specialisation, args)), *constexprs.items())
    found = _compiled.get(key)
    if found is None:
        compiled = kernel.run(*args, grid=grid, warmup=False, **constexprs)
        names = kernel.arg_names[len(args) :]
        defaults = {p.name: p.default for p in kernel.params}
        tail = tuple(constexprs[n] if n in constexprs else defaults[n] for n in names)
        _compiled[key] = (compiled, tail)
        return
    compiled, tail = found
    stream = driver.active.get_current_stream(device)
    full = (*args, *tail)
    grid_0, grid_1, grid_2 = (*grid, 1, 1)[:3]
    enter, leave = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
    # The launch's metadata is for the hooks (a profiler's): an empty chain of hooks (how
    # Triton 3.6 and later leave them) needs none.
    hooked = enter is not None and getattr(enter, "calls", True)
    metadata = compiled.launch_metadata(grid, stream, *full) if hooked else None
    compiled.run(
        grid_0,
        grid_1,
        grid_2,
        stream,
        compiled.function,
        compiled.packed_metadata,
        metadata,
        enter,
        leave,
        *full,
    )

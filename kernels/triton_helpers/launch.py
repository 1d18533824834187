"""Small decisions shared by the launchers: accumulator type, tile size, warps, grids, and
an autotuned launch that does the autotuner's lookup once per key."""

import functools
from collections.abc import Callable

import torch
import triton
import triton.language as tl

# Every float dtype a row-wise kernel takes; float64 is there for gradcheck.
ROW_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def accumulator(dtype: torch.dtype) -> tl.dtype:
    """The type to reduce in: float32 for half and single precision, float64 for double."""
    return tl.float64 if dtype == torch.float64 else tl.float32


def stats_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of the per-row statistics a forward pass keeps for its backward pass
    (a mean, an inverse deviation): the accumulator's, as a torch dtype."""
    return torch.float64 if dtype == torch.float64 else torch.float32


@functools.cache
def unused_stats(device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """Where a forward call without a backward pass points its kernel's statistics: never
    written (the kernel's STATS flag is false), but of the dtype they have when stored, so
    that calls with and without a gradient run the same compiled kernel."""
    return torch.empty(1, dtype=dtype, device=device)


def cdiv(n: int, d: int) -> int:
    """``n / d`` rounded up, for grids: ``triton.cdiv`` in plain Python. Triton's goes
    through its compile-time function machinery, which every launch would pay for."""
    return -(-n // d)


def row_block(n_cols: int) -> int:
    """The smallest power of two that holds a row of ``n_cols >= 1`` (tl.arange needs a
    power of two): ``triton.next_power_of_2`` in plain Python, as :func:`cdiv`."""
    return 1 << (n_cols - 1).bit_length()


def warps_for(block: int, per_thread: int = 32, most: int = 32) -> int:
    """Warps for a program holding ``block`` values: about ``per_thread`` values per
    thread, at least 4 warps and at most ``most``."""
    return min(most, max(4, block // (32 * per_thread)))


def as_rows(x: torch.Tensor) -> torch.Tensor:
    """``x`` as a (rows, last dimension) matrix: a view, as launchers take contiguous input."""
    return x.reshape(-1, x.shape[-1])


# Triton's interpreter runs every program in Python: checks on the CPU use a few rows.
INTERPRETER_ROWS = 7


def benchmark_rows(device: torch.device, gpu_rows: int) -> int:
    """How many rows a benchmark's inputs have: ``gpu_rows`` on a GPU, a handful otherwise."""
    return gpu_rows if device.type == "cuda" else INTERPRETER_ROWS


def resident_programs(
    n_work: int, num_warps: int, device: torch.device, per_sm_warps: int = 32
) -> int:
    """How many programs a persistent kernel launches: enough to give every multiprocessor
    ``per_sm_warps`` warps, and no more than there are rows (or tiles) of work."""
    if device.type != "cuda":
        return max(1, min(n_work, 4))
    return max(
        1, min(n_work, multiprocessors(device) * max(1, per_sm_warps // num_warps))
    )


@functools.cache
def multiprocessors(device: torch.device) -> int:
    """The number of streaming multiprocessors of GPU ``device``, asked once per device:
    reading the device's properties is too slow to repeat on every launch."""
    return torch.cuda.get_device_properties(device).multi_processor_count


@functools.cache
def device_capability(device: torch.device) -> tuple[int, int]:
    """The compute capability of GPU ``device``, asked once per device, as
    :func:`multiprocessors`."""
    return torch.cuda.get_device_capability(device)


# Each autotuner's chosen configuration by launch key (see launch_tuned), with the
# launch options it expands to.
_chosen: dict[tuple, tuple[triton.Config, dict[str, object]]] = {}


def launch_tuned(
    tuner: triton.runtime.Autotuner,
    grid: tuple | Callable,
    *args: object,
    **constexprs: object,
) -> tuple[triton.Config, dict[str, object]]:
    """``tuner[grid](*args, **constexprs)``, with the autotuner's lookup done once per key;
    returns the configuration launched and the launch options it expands to.

    On every call, an autotuner builds dictionaries of all its arguments to find its key
    (the values of its ``key`` arguments and the dtype of every argument that has one),
    then the configuration it chose for that key. Here that key, with the keyword
    arguments added, indexes a dictionary of the autotuner's choices, and the chosen
    configuration is launched directly, its pre-hook run first as the autotuner would. A
    key seen for the first time goes through the autotuner, which times the candidates
    and chooses.
    """
    key_values = tuple(args[i] for i in _key_positions(tuner, len(args)))
    dtypes = tuple(getattr(arg, "dtype", None) for arg in args)
    key = (tuner, key_values, dtypes, *constexprs.items())
    chosen = _chosen.get(key)
    if chosen is None:
        tuner[grid](*args, **constexprs)
        chosen = _chosen[key] = (tuner.best_config, tuner.best_config.all_kwargs())
        return chosen
    config, options = chosen
    if config.pre_hook is not None:
        named = dict(zip(tuner.arg_names, args, strict=False))
        config.pre_hook({**named, **constexprs, **options})
    tuner.fn.run(*args, grid=grid, warmup=False, **constexprs, **options)
    return chosen


@functools.cache
def _key_positions(tuner: triton.runtime.Autotuner, n_args: int) -> tuple[int, ...]:
    # Key arguments passed by keyword are in the key through the keyword arguments.
    positions = (
        tuner.arg_names.index(name) for name in tuner.keys if name in tuner.arg_names
    )
    return tuple(i for i in positions if i < n_args)

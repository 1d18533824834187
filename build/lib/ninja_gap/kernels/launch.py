"""Small decisions shared by the row-wise launchers: accumulator type, tile size, warps."""

import torch
import triton
import triton.language as tl

# Every float dtype a row-wise kernel takes; float64 is there for gradcheck.
ROW_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def accumulator(dtype: torch.dtype) -> tl.dtype:
    """The type to reduce in: float32 for half and single precision, float64 for double."""
    return tl.float64 if dtype == torch.float64 else tl.float32


def row_block(n_cols: int) -> int:
    """The smallest power of two that holds a row of ``n_cols`` (tl.arange needs a power of two)."""
    return triton.next_power_of_2(n_cols)


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
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return max(1, min(n_work, sms * max(1, per_sm_warps // num_warps)))

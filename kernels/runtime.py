"""Where kernels run: on the GPU when there is one, else in Triton's CPU interpreter.

Triton decides between compiling a kernel and interpreting it when the kernel is
defined, from the ``TRITON_INTERPRET`` variable, so the variable is set here, on import,
before any kernel module is loaded.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def interpreted() -> bool:
    """True when Triton kernels run in the interpreter (on the CPU) instead of a GPU."""
    return os.environ.get("TRITON_INTERPRET") == "1"


_DEVICES = {True: torch.device("cpu"), False: torch.device("cuda")}


def kernel_device() -> torch.device:
    """The device whose tensors Triton kernels take here: ``cuda``, or ``cpu`` when interpreted."""
    return _DEVICES[interpreted()]


def describe_device() -> str:
    """A short phrase for printed output: which GPU runs the kernels, or the interpreter."""
    if interpreted():
        return "the CPU, through Triton's interpreter"
    return torch.cuda.get_device_name()

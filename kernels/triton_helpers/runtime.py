"""Where kernels run: on the GPU when there is one, else in Triton's CPU interpreter.

Triton decides between compiling a kernel and interpreting it when the kernel is
defined, from the ``TRITON_INTERPRET`` variable, so the variable is set here, on import,
before any kernel module is loaded.
"""

import os
import threading

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


# The CUDA devices this thread has bound its context to (see bind_cuda_context).
_bound = threading.local()


def bind_cuda_context(device: torch.device) -> None:
    """Bind the calling thread to ``device``'s CUDA context, once per thread and device.

    Triton builds a TMA descriptor (``cuTensorMapEncodeTiled``) before its launcher makes
    sure the thread has a current context, so a thread whose first CUDA work is a TMA
    launch fails with "invalid device context". Autograd runs backward passes on a
    thread of its own, so a matmul's backward with no PyTorch kernel before it was such
    a thread (seen on the H200). A runtime call that needs the context binds it.
    """
    devices = _bound.__dict__.setdefault("devices", set())
    if device not in devices:
        if device.type == "cuda":
            torch.cuda.mem_get_info(device)
        devices.add(device)

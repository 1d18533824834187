"""The course's Triton kernels, one kernel family per module.

Importing this package first picks how kernels run: on a CUDA GPU when one is present,
otherwise in Triton's interpreter on the CPU (see :mod:`kernels.triton_helpers.runtime`).
"""

from .triton_helpers import runtime as _runtime  # noqa: F401  (sets TRITON_INTERPRET before triton loads)

"""The lessons' Jupyter kernels talk to the build over encrypted sockets.

myst-nb runs each lesson in a Jupyter kernel through nbclient, which talks to it over
ZeroMQ on localhost. By default that traffic is plain TCP, and ipykernel (7.x) logs a
warning about it at every start: one per lesson in the build log. jupyter_client (8.10
and later) can give each kernel CurveZMQ keys instead, where the kernel's spec says it
supports them (ipykernel's does), and then the kernel starts without a warning.

IPC (Unix sockets) would also silence it, but leaves socket files in the folder each
lesson runs in, that is, in the site's sources (``docs/kernel-ipc-1`` ...).

nbclient makes its ``KernelManager`` with no configuration of ours (myst-nb gives it
none), so the policy is set where every manager reads it: the trait's default.
"""

import zmq
from jupyter_client.manager import KernelManager
from sphinx.application import Sphinx

# Encrypt where the kernel supports it, as jupyter_client's "auto" policy does; a
# kernel whose spec does not say so still starts, over plain TCP.
POLICY = "auto"


def encrypt_kernel_traffic() -> bool:
    """Make every Jupyter kernel started from this process use CurveZMQ encryption where
    its spec supports it. False where this jupyter_client or libzmq cannot."""
    traits = KernelManager.class_traits()
    if "transport_encryption" not in traits or not zmq.has("curve"):
        return False
    traits["transport_encryption"].default_value = POLICY
    return True


def setup(app: Sphinx) -> dict[str, bool]:
    encrypt_kernel_traffic()
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The lessons' Jupyter kernels talk to the build over local sockets, not TCP.

myst-nb runs each lesson in a Jupyter kernel through nbclient, which talks to it over
ZeroMQ. jupyter_client's default transport is TCP on localhost, unencrypted, and
ipykernel (7.x) logs a warning about it at every start: one per lesson in the build log.
A build has no reason to open ports at all, so the kernels use IPC (Unix sockets, files
beside the kernel's connection file in Jupyter's runtime folder), which ipykernel
accepts without a warning.

nbclient makes its ``KernelManager`` with no configuration of ours (myst-nb gives it
none), so the transport is set where every manager reads it: the trait's default.
"""

from jupyter_client.connect import ConnectionFileMixin
from sphinx.application import Sphinx

TRANSPORT = "ipc"


def use_local_sockets() -> None:
    """Make every Jupyter kernel started from this process use IPC, not TCP."""
    ConnectionFileMixin.class_traits()["transport"].default_value = TRANSPORT


def setup(app: Sphinx) -> dict[str, bool]:
    use_local_sockets()
    return {"parallel_read_safe": True, "parallel_write_safe": True}

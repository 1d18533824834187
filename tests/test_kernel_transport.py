"""The lessons' Jupyter kernels run encrypted: no warning, and nothing left behind."""

import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import ROOT

# A fresh interpreter, so that the default this test changes does not leak into others.
SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {ext!r})
    import nbformat
    from nbclient import NotebookClient
    from jupyter_client.manager import KernelManager
    import kernel_transport
    print("encrypted", kernel_transport.encrypt_kernel_traffic())
    print("policy", KernelManager().transport_encryption)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    nb.metadata["kernelspec"] = {{"name": "python3", "display_name": "Python 3"}}
    NotebookClient(nb, timeout=120).execute()
    print("output", nb.cells[0].outputs[0]["text"].strip())
    """
)


def test_a_lesson_kernel_runs_encrypted_without_a_warning_or_a_file(tmp_path: Path) -> None:
    script = SCRIPT.format(ext=str(ROOT / "docs" / "_ext"))
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "encrypted True" in run.stdout
    assert "policy auto" in run.stdout
    assert "output 42" in run.stdout
    # ipykernel warns of an unencrypted TCP kernel on stderr at each start.
    assert "WARNING" not in run.stderr, run.stderr[-3000:]
    # The folder the kernel ran in keeps nothing of it (IPC sockets would stay there).
    assert list(tmp_path.iterdir()) == []

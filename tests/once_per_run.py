"""Work done once per test run, however many pytest-xdist workers ask for it.

A session-scoped fixture runs once in each xdist worker process. The site's builds take
minutes (more on a GPU runner, where every example compiles and autotunes its kernels),
so the fixtures that build it go through :func:`once_per_run`: the first worker to ask
does the work while the others wait on a file lock, then every worker reads the same
result. The tests that use a build can then spread over all the workers.
"""

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

# Set by pytest-xdist in each worker process (gw0, gw1, ...); absent without xdist.
WORKER_VARIABLE = "PYTEST_XDIST_WORKER"


def shared_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of this test run that every xdist worker sees.

    Under xdist each worker's base folder (``pytest-N/popen-gw0``) sits in the run's own
    folder; without xdist the base folder is the run's folder (its parent would be
    shared by every run of the user's).
    """
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get(WORKER_VARIABLE) else base


def once_per_run(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], dict[str, Any]]
) -> dict[str, Any]:
    """What ``make(folder)`` returned, calling it only the first time ``name`` is asked
    for in this test run, in any worker; ``folder`` is an empty folder for its files.

    The result must survive JSON (it is how the other workers receive it). If ``make``
    raises, nothing is kept and the next caller tries again with a new folder.
    """
    shared = shared_temp_dir(tmp_path_factory)
    result = shared / f"{name}.json"
    with FileLock(str(shared / f"{name}.lock")):
        if not result.exists():
            # A new folder each attempt: one that failed part way leaves its own.
            folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=shared))
            result.write_text(json.dumps(make(folder)), encoding="utf-8")
        return json.loads(result.read_text(encoding="utf-8"))

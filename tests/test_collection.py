"""How the suite is collected: ids that every pytest-xdist worker agrees on."""

import pytest
from conftest import ids_that_change_between_runs


def test_an_id_with_a_memory_address_is_found() -> None:
    ids = ["tests/a.py::t[softmax-<function softmax at 0x7f4f890936a0>-torch.float16]",
           "tests/a.py::t[softmax-softmax-torch.float16]"]  # fmt: skip
    assert ids_that_change_between_runs(ids) == ids[:1]


def test_no_test_in_this_session_has_an_id_that_changes_between_runs(
    request: pytest.FixtureRequest,
) -> None:
    assert ids_that_change_between_runs([i.nodeid for i in request.session.items]) == []

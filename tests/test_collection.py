"""How the suite is collected: ids that every pytest-xdist worker agrees on, and the
tests that build the site marked, so that a fast tier can leave them out."""

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


def test_the_tests_that_build_the_site_are_marked_and_only_those(
    request: pytest.FixtureRequest,
) -> None:
    from conftest import SITE_FIXTURES

    items = request.session.items
    marked = {item.nodeid for item in items if item.get_closest_marker("site")}
    needing = {item.nodeid for item in items
               if SITE_FIXTURES & set(getattr(item, "fixturenames", ()))}  # fmt: skip
    assert marked == needing
    # In a whole run (not when this file runs alone), the site's own tests are marked.
    rebuild = "tests/test_docs_build.py::test_a_rebuild_runs_only_what_changed_and_refuses"
    if any(item.nodeid.startswith(rebuild) for item in items):
        assert any(nodeid.startswith(rebuild) for nodeid in marked)

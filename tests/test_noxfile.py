"""The nox sessions' own decisions, without running a session."""

import pytest

import noxfile


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], True),
        (["tests/test_quiz_bank.py"], True),
        (["-m", "browser"], True),
        (["-m", "not browser"], False),
        (["-m", "not browser and not slow", "-x"], False),
        (["-m not browser"], False),
    ],
)
def test_chromium_is_installed_only_when_the_browser_tests_may_run(
    args: list[str], expected: bool
) -> None:
    assert noxfile.runs_browser_tests(args) is expected

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


def test_catalogs_drop_the_gallerys_running_times() -> None:
    catalog = (
        '#: a.rst:1\nmsgid "Quiz"\nmsgstr "Вопросы"\n\n'
        '#: a.rst:9\nmsgid "**Total running time of the script:** (0 minutes 2.176 seconds)"\n'
        'msgstr ""\n\n'
        '#~ msgid "**Total running time of the script:** (0 minutes 1.169 seconds)"\n'
        '#~ msgstr ""\n'
    )
    assert noxfile.without_running_times(catalog) == '#: a.rst:1\nmsgid "Quiz"\nmsgstr "Вопросы"\n'


def test_a_catalog_without_running_times_is_left_as_it_is() -> None:
    catalog = '#: a.rst:1\nmsgid "Quiz"\nmsgstr "Вопросы"\n\n'
    assert noxfile.without_running_times(catalog) is catalog

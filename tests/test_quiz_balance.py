"""The length of an option must not give the answer away.

A reader who guesses "the longest option" should be no better off than one who guesses
at random, so in every question at least one wrong option is at least as long (in
characters of its text) as the right one. The fix for an offender is a better
distractor or a tighter right answer, never filler words.
"""

from pathlib import Path

import pytest

from quiz.bank import Question, load_bank

ROOT = Path(__file__).resolve().parent.parent
# The English banks and their translations (quiz/ru/).
BANKS = sorted((ROOT / "quiz").glob("**/*.yaml"))


def longest_is_right(question: Question) -> bool:
    """Whether the right option is strictly longer than every wrong one."""
    right = next(option for option in question.options if option.correct)
    longest_wrong = max(len(option.text) for option in question.options if not option.correct)
    return len(right.text) > longest_wrong


def test_there_are_banks() -> None:
    assert BANKS


@pytest.mark.parametrize("path", BANKS, ids=lambda p: p.name)
def test_the_right_option_is_never_the_longest(path: Path) -> None:
    offenders = [
        question.id for question in load_bank(path).questions if longest_is_right(question)
    ]
    assert not offenders, (
        f"{path.name}: in {', '.join(offenders)} the right option is longer than every "
        "wrong one; write a wrong option as long, or tighten the right one"
    )


def test_the_check_catches_a_longest_right_option(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(
        "questions:\n  - id: q1\n    question: Which?\n    options:\n"
        "      - text: The right answer, long.\n        correct: true\n        why: It is.\n"
        "      - text: Short.\n        why: It is not.\n"
        "  - id: q2\n    question: Which?\n    options:\n"
        "      - text: Right.\n        correct: true\n        why: It is.\n"
        "      - text: Wrong.\n        why: Same length, so no clue.\n",
        encoding="utf-8",
    )
    questions = load_bank(path).questions
    assert [longest_is_right(question) for question in questions] == [True, False]

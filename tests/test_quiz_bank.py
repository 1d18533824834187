"""The question banks: the intro bank against the seed, and each kind of malformed bank."""

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from quiz.bank import QuizBankError, load_bank

ROOT = Path(__file__).resolve().parent.parent
BANKS = sorted((ROOT / "quiz").glob("*.yaml"))
# A copy of the seed lesson from the project's shared folder, so that this test never skips.
SEED = ROOT / "tests" / "data" / "000_33f2ad8b9079013d.txt"


@pytest.mark.parametrize("path", BANKS, ids=lambda p: p.name)
def test_every_bank_loads(path: Path) -> None:
    bank = load_bank(path)
    assert bank.questions
    for question in bank.questions:
        assert sum(option.correct for option in question.options) == 1


def read_seed_quiz(text: str) -> list[tuple[str, list[str]]]:
    """The seed's questions: after each 'QUESTION n', the question and its four options."""
    questions = []
    for block in re.split(r"^QUESTION \d+$", text, flags=re.MULTILINE)[1:]:
        lines = [line.strip() for line in block.strip().splitlines() if line.strip()]
        questions.append((lines[0], lines[1:5]))
    return questions


def test_intro_bank_holds_the_seed_quiz() -> None:
    """The seed's five questions come first, their prompts and right answers word for word.

    A wrong option is the seed's or begins with the seed's words (its final full stop
    aside): a few are longer than the seed's, so that the right answer is not the longest
    option of its question. Questions after the seed's are the course's own.
    """
    seed = read_seed_quiz(SEED.read_text(encoding="utf-8"))
    bank = load_bank(ROOT / "quiz" / "intro.yaml")
    assert len(seed) == 5
    assert len(bank.questions) >= len(seed)
    for (prompt, options), question in zip(seed, bank.questions[: len(seed)], strict=True):
        assert question.question == prompt
        assert len(question.options) == len(options)
        # The seed gives every right answer second.
        assert [option.correct for option in question.options] == [False, True, False, False]
        assert question.options[1].text == options[1]
        for option, seed_text in zip(question.options, options, strict=True):
            assert (
                option.text == seed_text
                or option.text.startswith(seed_text.rstrip(".") + " ")
                or option.text.startswith(seed_text.rstrip(".") + ",")
            ), (option.text, seed_text)
            assert len(option.why) > 40, option.why


def test_intro_options_are_shuffled_stably_and_not_all_alike() -> None:
    bank = load_bank(ROOT / "quiz" / "intro.yaml")
    positions = [
        [option.correct for option in question.shuffled_options()].index(True)
        for question in bank.questions
    ]
    assert len(set(positions)) > 1, positions
    again = load_bank(ROOT / "quiz" / "intro.yaml")
    assert positions == [
        [option.correct for option in question.shuffled_options()].index(True)
        for question in again.questions
    ]
    for question in bank.questions:
        assert sorted(question.shuffled_options(), key=question.options.index) == list(
            question.options
        )


GOOD_OPTIONS = """
      - text: Right.
        correct: true
        why: Because it is.
      - text: Wrong.
        why: Because it is not.
"""

MALFORMED = {
    "no correct option": (
        "questions:\n  - id: q1\n    question: Which?\n    options:\n"
        "      - text: A\n        why: Not so.\n      - text: B\n        why: Not so.\n",
        r"question 'q1' \(#1\): no option is marked 'correct: true'",
    ),
    "two correct options": (
        "questions:\n  - id: q1\n    question: Which?\n    options:\n"
        "      - text: A\n        correct: true\n        why: So it is.\n"
        "      - text: B\n        correct: true\n        why: So it is.\n",
        r"question 'q1' \(#1\): 2 options are marked 'correct: true'",
    ),
    "missing option text": (
        "questions:\n  - id: q1\n    question: Which?\n    options:\n"
        "      - correct: true\n        why: So it is.\n      - text: B\n        why: Not so.\n",
        r"question 'q1' \(#1\), option 1: 'text' must be non-empty text",
    ),
    "missing why": (
        "questions:\n  - id: q1\n    question: Which?\n    options:\n"
        "      - text: A\n        correct: true\n      - text: B\n        why: Not so.\n",
        r"question 'q1' \(#1\), option 1: 'why' must be non-empty text",
    ),
    "missing question text": (
        "questions:\n  - id: q1\n    options:" + GOOD_OPTIONS,
        r"question 'q1' \(#1\): 'question' must be non-empty text",
    ),
    "unknown question key": (
        "questions:\n  - id: q1\n    question: Which?\n    hint: none\n    options:" + GOOD_OPTIONS,
        r"question 'q1' \(#1\): unknown key 'hint'",
    ),
    "unknown option key": (
        "questions:\n  - id: q1\n    question: Which?\n    options:\n"
        "      - text: A\n        correct: true\n        why: So it is.\n        score: 1\n"
        "      - text: B\n        why: Not so.\n",
        r"question 'q1' \(#1\), option 1: unknown key 'score'",
    ),
    "unknown top-level key": (
        "title: Quiz\nquestions:\n  - id: q1\n    question: Which?\n    options:" + GOOD_OPTIONS,
        r"unknown key 'title'",
    ),
    "an id used twice": (
        "questions:\n  - id: q1\n    question: Which?\n    options:"
        + GOOD_OPTIONS
        + "  - id: q1\n    question: Again?\n    options:"
        + GOOD_OPTIONS,
        r"question 'q1' \(#2\): the id is used twice",
    ),
    "missing id": (
        "questions:\n  - question: Which?\n    options:" + GOOD_OPTIONS,
        r"question #1: 'id' must be non-empty text",
    ),
    "correct that is not a boolean": (
        "questions:\n  - id: q1\n    question: Which?\n    options:\n"
        "      - text: A\n        correct: 'yes'\n        why: So it is.\n"
        "      - text: B\n        why: Not so.\n",
        r"question 'q1' \(#1\), option 1: 'correct' must be true or false",
    ),
    "unquoted yes read as a boolean": (
        "questions:\n  - id: q1\n    question: Which?\n    options:\n"
        "      - text: yes\n        correct: true\n        why: So it is.\n"
        "      - text: B\n        why: Not so.\n",
        r"option 1: 'text' must be text, but YAML read a boolean here: put it in quotes",
    ),
    "one option only": (
        "questions:\n  - id: q1\n    question: Which?\n    options:\n"
        "      - text: A\n        correct: true\n        why: So it is.\n",
        r"question 'q1' \(#1\): 'options' must list at least two options",
    ),
    "an id that is not a slug": (
        'questions:\n  - id: "q1\\n\\n   .. raw:: html\\n\\n      <script>alert(1)</script>"\n'
        "    question: Which?\n    options:" + GOOD_OPTIONS,
        r"question .* \(#1\): the id must be lower-case letters, digits and single hyphens",
    ),
    "an id in capitals": (
        "questions:\n  - id: Q1\n    question: Which?\n    options:" + GOOD_OPTIONS,
        r"question 'Q1' \(#1\): the id must be lower-case",
    ),
    "an id with an underscore": (
        "questions:\n  - id: a_b\n    question: Which?\n    options:" + GOOD_OPTIONS,
        r"question 'a_b' \(#1\): the id must be lower-case",
    ),
    "more options than letters": (
        "questions:\n  - id: q1\n    question: Which?\n    options:"
        + GOOD_OPTIONS
        + "      - text: More.\n        why: Not so.\n" * 25,
        r"question 'q1' \(#1\): 27 options, more than the 26 letters",
    ),
    "an alias": (
        "questions:\n  - &q\n    id: q1\n    question: Which?\n    options:"
        + GOOD_OPTIONS
        + "  - *q\n",
        r"anchors and aliases \(& and \*\) are not allowed",
    ),
    "an alias bomb": (
        "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nquestions: [*c]\n",
        r"anchors and aliases",
    ),
    "a repeated key": (
        "questions:\n  - id: q1\n    question: Which?\n    options:"
        + GOOD_OPTIONS
        + "questions:\n  - id: q2\n    question: Which?\n    options:"
        + GOOD_OPTIONS,
        r"the key 'questions' is repeated",
    ),
    "a repeated option key": (
        "questions:\n  - id: q1\n    question: Which?\n    options:\n"
        "      - text: A\n        text: B\n        correct: true\n        why: So.\n"
        "      - text: C\n        why: Not so.\n",
        r"the key 'text' is repeated",
    ),
    "nested too deeply": ("questions: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    "no questions": ("questions: []\n", r"'questions' must be a non-empty list"),
    "not YAML": ("questions: [\n", r"not valid YAML"),
    "not a mapping": ("- just\n- a list\n", r"the bank must be a mapping"),
    # Before: the escape character reached the page's HTML as it was.
    "a control character": (
        'questions:\n  - id: q1\n    question: "Which\\e[31m?"\n    options:\n'
        "      - text: A\n        correct: true\n        why: So.\n"
        "      - text: B\n        why: Not so.\n",
        r"question 'q1' \(#1\): 'question' holds the control character U\+001B",
    ),
    # Before: a TypeError from sorting a number beside a string.
    "a number and a string as unknown keys": (
        "questions:\n  - id: q1\n    1: one\n    extra: two\n    question: Which?\n"
        "    options:\n      - text: A\n        correct: true\n        why: So.\n"
        "      - text: B\n        why: Not so.\n",
        r"unknown key 'extra', 1 ",
    ),
    # Before: a TypeError (unhashable type) from the check for repeated keys, which the
    # build reported as a crash of Sphinx's.
    "a key that is a list": (
        "questions:\n  - id: q1\n    [1, 2]: x\n    question: Which?\n    options:" + GOOD_OPTIONS,
        r"question 'q1' \(#1\): a key is a list",
    ),
    "a key that is a mapping": (
        "questions:\n  - id: q1\n    question: Which?\n    {a: 1}: x\n    options:" + GOOD_OPTIONS,
        r"question 'q1' \(#1\): a key is a mapping",
    ),
    "an explicit key that is a list": (
        "questions:\n  - id: q1\n    question: Which?\n    ? [a, b]\n    : c\n    options:"
        + GOOD_OPTIONS,
        r"question 'q1' \(#1\): a key is a list",
    ),
    "an option key that is a list": (
        "questions:\n  - id: q1\n    question: Which?\n    options:\n"
        "      - text: A\n        correct: true\n        why: So.\n        [x]: y\n"
        "      - text: B\n        why: Not so.\n",
        r"question 'q1' \(#1\), option 1: a key is a list",
    ),
    "a top-level key that is a list": (
        "? [a, b]\n: c\nquestions:\n  - id: q1\n    question: Which?\n    options:" + GOOD_OPTIONS,
        r"a key is a list, where it must be a word \(allowed: questions\)",
    ),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_malformed_bank_is_rejected_with_file_and_question(tmp_path: Path, case: str) -> None:
    text, message = MALFORMED[case]
    path = tmp_path / "broken.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(QuizBankError, match=re.escape(str(path)) + ".*" + message):
        load_bank(path)


# The line (1-based) each error names: the key at fault, or the option or question
# where the key is missing or its value wrong as a whole.
LINES = {
    "no correct option": 4,  # the options' key
    "more options than letters": 4,
    "missing why": 5,  # option 1
    "missing question text": 2,  # the question
    "missing id": 2,
    "an id in capitals": 2,  # the id's key
    "unknown question key": 4,
    "unknown option key": 8,
    "correct that is not a boolean": 6,
    "a control character": 3,
    "an id used twice": 10,  # the second question
    "a repeated key": 10,
    "a key that is a list": 3,
    "a key that is a mapping": 4,
    "an explicit key that is a list": 4,
    "an option key that is a list": 8,
    "a top-level key that is a list": 1,
    "not YAML": 2,
}


@pytest.mark.parametrize("case", LINES, ids=list(LINES))
def test_an_error_names_the_line_of_the_bank_where_it_is(tmp_path: Path, case: str) -> None:
    # Before: the file and the question's number only, to be counted by hand.
    text, message = MALFORMED[case]
    path = tmp_path / "broken.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(QuizBankError, match=re.escape(f"{path}:{LINES[case]}: ") + ".*" + message):
        load_bank(path)


def test_a_bank_that_is_not_utf8_or_too_large_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("questions:\n  - id: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(QuizBankError, match=r"latin1\.yaml: not UTF-8 text"):
        load_bank(path)
    path = tmp_path / "huge.yaml"
    path.write_text("questions: []\n" + "# padding\n" * 30_000, encoding="utf-8")
    with pytest.raises(QuizBankError, match=r"huge\.yaml: larger than 262,144 bytes"):
        load_bank(path)


def test_missing_bank_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(QuizBankError, match=r"nothere\.yaml: cannot read the bank"):
        load_bank(tmp_path / "nothere.yaml")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (os.mkfifo, r"not a regular file"),
        (lambda path: path.symlink_to("/dev/zero"), r"not a regular file"),
        (lambda path: path.mkdir(), r"Is a directory"),
        (lambda path: path.symlink_to(path.name), r"Too many levels of symbolic links"),
    ],
    ids=["fifo", "dev-zero", "directory", "link-loop"],
)
def test_a_bank_that_is_no_file_is_named_without_hanging(
    tmp_path: Path, make: Callable[[Path], object], message: str
) -> None:
    # Before: a FIFO hung the build and a link to /dev/zero filled the memory.
    path = tmp_path / "odd.yaml"
    make(path)
    with pytest.raises(QuizBankError, match=r"odd\.yaml: cannot read the bank \(" + message):
        load_bank(path)

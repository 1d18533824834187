"""Question banks: one YAML file per lesson, read and checked before anything renders.

A bank looks like this::

    questions:
      - id: ninja-gap                 # unique within the bank; stable across edits
        question: What is the 'Ninja Gap'?
        options:
          - text: The performance difference between ...
            correct: true
            why: One or two sentences on why this is right.
          - text: The physical distance between ...
            why: One or two sentences on why this is wrong.

Text may use `backticks` for inline code; everything else in it is shown as written,
never read as markup. Exactly one option per question is correct. An id is lower-case
letters, digits and single hyphens (it becomes part of the page's anchors). A bank is
plain YAML: anchors, aliases and repeated keys are refused, and so is a bank over
MAX_BANK_BYTES.
"""

import hashlib
import os
import random
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

BANK_KEYS = {"questions"}
QUESTION_KEYS = {"id", "question", "options"}
OPTION_KEYS = {"text", "correct", "why"}
# The options of a question are lettered A to Z on the page.
MAX_OPTIONS = 26
# The largest bank is a few kilobytes; this leaves room and refuses what cannot be one.
MAX_BANK_BYTES = 256 * 1024
ID_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# A bank's name is its file name without ``.yaml``: the same, underscores allowed.
NAME_PATTERN = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")


class QuizBankError(ValueError):
    """A malformed bank; the message names the file and, where it can, the question."""


@dataclass(frozen=True)
class Option:
    """One answer to a question, with the reason it is right or wrong."""

    text: str
    correct: bool
    why: str


@dataclass(frozen=True)
class Question:
    """One question and its options, in the order the bank lists them."""

    id: str
    question: str
    options: tuple[Option, ...]

    def shuffled_options(self) -> tuple[Option, ...]:
        """The options in the order the page shows them.

        Banks are often written with the right answer in the same place; the page mixes
        the order with a generator seeded by the question's id, so two builds give the
        same page and an edit to the wording does not reshuffle it.
        """
        seed = int.from_bytes(hashlib.sha256(self.id.encode("utf-8")).digest()[:8], "big")
        options = list(self.options)
        random.Random(seed).shuffle(options)
        return tuple(options)


@dataclass(frozen=True)
class Bank:
    """A lesson's questions, read from ``path``."""

    path: Path
    questions: tuple[Question, ...]


class _PlainLoader(yaml.SafeLoader):
    """YAML without anchors, aliases or repeated keys: what a bank needs and no more.

    An alias can expand a small file into gigabytes (and an error message quoting the
    value with it); a repeated key silently replaces the first, a second ``questions:``
    dropping every question above it.
    """

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise yaml.constructor.ConstructorError(
                None, None, "anchors and aliases (& and *) are not allowed", event.start_mark
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is repeated", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _text(value: Any, where: str, key: str) -> str:
    if isinstance(value, bool | int | float):
        # YAML reads unquoted yes, no, on, off, 1.0 ... as booleans and numbers.
        kind = "boolean" if isinstance(value, bool) else "number"
        raise QuizBankError(
            f"{where}: {key!r} must be text, but YAML read a {kind} here: put it in quotes"
        )
    if not isinstance(value, str) or not value.strip():
        raise QuizBankError(f"{where}: {key!r} must be non-empty text")
    # A double-quoted YAML string can spell control characters ("\e", "\x08"), which
    # would reach the page's HTML as they are: only line breaks and tabs are text.
    control = [char for char in value if unicodedata.category(char) == "Cc" and char not in "\n\t"]
    if control:
        raise QuizBankError(
            f"{where}: {key!r} holds the control character U+{ord(control[0]):04X}; "
            "remove it (a bank's text is printable)"
        )
    return value.strip()


def _unknown_keys(mapping: dict[str, Any], allowed: set[str], where: str) -> None:
    # Keys may be numbers beside strings (YAML reads 1: as a number): sorted as written.
    unknown = sorted(map(repr, set(mapping) - allowed))
    if unknown:
        raise QuizBankError(
            f"{where}: unknown key {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})"
        )


def _option(raw: Any, where: str) -> Option:
    if not isinstance(raw, dict):
        raise QuizBankError(f"{where}: an option must be a mapping with 'text' and 'why'")
    _unknown_keys(raw, OPTION_KEYS, where)
    correct = raw.get("correct", False)
    if not isinstance(correct, bool):
        raise QuizBankError(f"{where}: 'correct' must be true or false, got {correct!r}")
    return Option(
        _text(raw.get("text"), where, "text"), correct, _text(raw.get("why"), where, "why")
    )


def _question(raw: Any, number: int, source: str) -> Question:
    where = f"{source}: question #{number}"
    if not isinstance(raw, dict):
        raise QuizBankError(f"{where}: a question must be a mapping")
    if isinstance(raw.get("id"), str) and raw["id"].strip():
        where = f"{source}: question {raw['id'].strip()!r} (#{number})"
    _unknown_keys(raw, QUESTION_KEYS, where)
    question_id = _text(raw.get("id"), where, "id")
    if not ID_PATTERN.fullmatch(question_id):
        raise QuizBankError(
            f"{where}: the id must be lower-case letters, digits and single hyphens "
            "(such as 'tile-model')"
        )
    prompt = _text(raw.get("question"), where, "question")
    raw_options = raw.get("options")
    if not isinstance(raw_options, list) or len(raw_options) < 2:
        raise QuizBankError(f"{where}: 'options' must list at least two options")
    if len(raw_options) > MAX_OPTIONS:
        raise QuizBankError(
            f"{where}: {len(raw_options)} options, more than the {MAX_OPTIONS} letters "
            "that label them"
        )
    options = tuple(
        _option(option, f"{where}, option {index}") for index, option in enumerate(raw_options, 1)
    )
    n_correct = sum(option.correct for option in options)
    if n_correct != 1:
        found = "no option is" if n_correct == 0 else f"{n_correct} options are"
        raise QuizBankError(f"{where}: {found} marked 'correct: true'; exactly one must be")
    return Question(question_id, prompt, options)


def _bank_bytes(path: Path) -> bytes:
    # A bank is a regular file of at most MAX_BANK_BYTES. Opened without blocking and
    # read no further than that: a FIFO named like a bank would hang the build, a link
    # to /dev/zero would fill the memory (its size reads as 0 before it is read).
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as file:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(f"not a regular file ({stat.filemode(mode)})")
        content = file.read(MAX_BANK_BYTES + 1)
    if len(content) > MAX_BANK_BYTES:
        raise QuizBankError(f"{path}: larger than {MAX_BANK_BYTES:,} bytes; not a bank")
    return content


def load_bank(path: Path | str) -> Bank:
    """Read and validate the bank at ``path``; raise :class:`QuizBankError` if it is malformed."""
    path = Path(path)
    source = str(path)
    try:
        raw = yaml.load(_bank_bytes(path).decode("utf-8"), Loader=_PlainLoader)
    except OSError as error:
        reason = error.strerror or str(error)
        raise QuizBankError(f"{source}: cannot read the bank ({reason})") from None
    except UnicodeDecodeError as error:
        raise QuizBankError(
            f"{source}: not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    except yaml.YAMLError as error:
        raise QuizBankError(f"{source}: not valid YAML ({error})") from None
    except RecursionError:
        raise QuizBankError(f"{source}: nested too deeply to be a bank") from None
    if not isinstance(raw, dict):
        raise QuizBankError(f"{source}: the bank must be a mapping with a 'questions' list")
    _unknown_keys(raw, BANK_KEYS, source)
    raw_questions = raw.get("questions")
    if not isinstance(raw_questions, list) or not raw_questions:
        raise QuizBankError(f"{source}: 'questions' must be a non-empty list")
    questions = tuple(_question(q, number, source) for number, q in enumerate(raw_questions, 1))
    seen: set[str] = set()
    for number, question in enumerate(questions, 1):
        if question.id in seen:
            raise QuizBankError(
                f"{source}: question {question.id!r} (#{number}): the id is used twice"
            )
        seen.add(question.id)
    return Bank(path, questions)


def load_translation(path: Path | str, original: Bank) -> Bank:
    """Read the bank at ``path``, a translation of ``original`` (``quiz/<language>/<name>.yaml``
    beside ``quiz/<name>.yaml``), validate it as a bank, then check that it matches the
    original: the same questions by id and in the same order, each with as many options
    and its correct option in the same place. Only the texts may differ.

    Raise :class:`QuizBankError`, naming the file and the question, where it does not.
    """
    translation = load_bank(path)
    source = str(Path(path))
    ids = [question.id for question in translation.questions]
    original_ids = {question.id for question in original.questions}
    for number, translated in enumerate(translation.questions, 1):
        if translated.id not in original_ids:
            raise QuizBankError(
                f"{source}: question {translated.id!r} (#{number}): {original.path} has no "
                "question of this id; a translation adds none"
            )
    for number, question in enumerate(original.questions, 1):
        if question.id not in ids:
            raise QuizBankError(
                f"{source}: question {question.id!r} (#{number} of {original.path}) is "
                "missing; a translation has every question of the original"
            )
    for number, (translated, question) in enumerate(
        zip(translation.questions, original.questions, strict=True), 1
    ):
        where = f"{source}: question {translated.id!r} (#{number})"
        if translated.id != question.id:
            raise QuizBankError(
                f"{where}: the original has {question.id!r} here; keep the original's order"
            )
        if len(translated.options) != len(question.options):
            raise QuizBankError(
                f"{where}: {len(translated.options)} options, but the original has "
                f"{len(question.options)}"
            )
        right = [option.correct for option in question.options].index(True) + 1
        translated_right = [option.correct for option in translated.options].index(True) + 1
        if translated_right != right:
            raise QuizBankError(
                f"{where}: option {translated_right} is marked correct, but in the original "
                f"option {right} is; the options keep the original's order"
            )
    return translation

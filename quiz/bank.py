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
MAX_BANK_BYTES. An error names the file and, where it can, the line and the question.
"""

import hashlib
import os
import random
import re
import stat
import unicodedata
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
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
    """A malformed bank; the message names the file and, where it can, the line (as
    ``path:line:``) and the question."""


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
    # The line (1-based) of the bank where the question starts, for errors about it; not
    # part of what the question is.
    line: int | None = field(default=None, compare=False)

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


@dataclass(frozen=True)
class _Where:
    """Where in a bank an error is: its file, the line (1-based) where one is known, and the
    part of the bank, such as "question 'q1' (#1), option 2". Written as ``path:line: part``."""

    source: str
    line: int | None = None
    part: str = ""

    def at(self, line: int | None) -> "_Where":
        """The same part at ``line`` (a key's, within a question), where that is known."""
        return self if line is None else replace(self, line=line)

    def inner(self, line: int | None, part: str) -> "_Where":
        """A part within this one (``part`` appended, as ", option 2"), at ``line``."""
        return _Where(self.source, self.line, self.part + part).at(line)

    def __str__(self) -> str:
        place = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{place}: {self.part}" if self.part else place


@dataclass(frozen=True, eq=False)
class _OddKey:
    """A key that YAML read as a list, a set or a mapping (``[1, 2]: x``, ``? [a, b]``),
    which a Python dict cannot hold. It stands in for that key, so that the bank is read
    and the error about the key names the question it is in. Each is unequal to any other
    (eq=False): two such keys are not a repeated key."""

    kind: str


def _kind(value: Any) -> str:
    """What YAML read ``value`` as, a key that no dict can hold: a mapping, a set or a list."""
    return "mapping" if isinstance(value, dict) else "set" if isinstance(value, set) else "list"


class _Mapping(dict[Any, Any]):
    """A mapping of a bank, with the line (1-based) of each of its keys."""

    __slots__ = ("key_lines",)

    def __init__(self) -> None:
        super().__init__()
        self.key_lines: dict[Any, int] = {}


class _Sequence(list[Any]):
    """A sequence of a bank, with the line (1-based) of each of its items."""

    __slots__ = ("item_lines",)

    def __init__(self) -> None:
        super().__init__()
        self.item_lines: list[int] = []


def _line_of(node: yaml.Node) -> int:
    # PyYAML counts lines from 0; an editor, and an error message, from 1.
    return node.start_mark.line + 1


class _PlainLoader(yaml.SafeLoader):
    """YAML without anchors, aliases or repeated keys: what a bank needs and no more.

    An alias can expand a small file into gigabytes (and an error message quoting the
    value with it); a repeated key silently replaces the first, a second ``questions:``
    dropping every question above it. Mappings and sequences come out as :class:`_Mapping`
    and :class:`_Sequence`, which keep the lines that errors name.
    """

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise yaml.constructor.ConstructorError(
                None, None, "anchors and aliases (& and *) are not allowed", event.start_mark
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep=deep)  # refuses it, with its line
        # Not flattened: a merge key (<<) is refused as a tag without a constructor.
        mapping = _Mapping()
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                key = _OddKey(_kind(key))
            if key in mapping:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is repeated", key_node.start_mark
                )
            mapping[key] = self.construct_object(value_node, deep=deep)
            mapping.key_lines[key] = _line_of(key_node)
        return mapping

    def construct_yaml_map(self, node: Any) -> Any:
        data = _Mapping()
        yield data  # PyYAML's way: the container first, empty, then what it holds
        located = self.construct_mapping(node)
        data.update(located)
        data.key_lines.update(located.key_lines)

    def construct_yaml_seq(self, node: Any) -> Any:
        data = _Sequence()
        yield data
        data.extend(self.construct_sequence(node))
        data.item_lines.extend(_line_of(item) for item in node.value)


# PyYAML looks its constructors up in a table by tag, not as methods.
_PlainLoader.add_constructor("tag:yaml.org,2002:map", _PlainLoader.construct_yaml_map)
_PlainLoader.add_constructor("tag:yaml.org,2002:seq", _PlainLoader.construct_yaml_seq)


def _key_line(mapping: Any, key: Any) -> int | None:
    """The line of ``key`` in ``mapping``; None where the key is missing."""
    return getattr(mapping, "key_lines", {}).get(key)


def _with_lines(sequence: list[Any]) -> list[tuple[Any, int | None]]:
    """Each item of ``sequence`` with its line (None where unknown)."""
    lines = getattr(sequence, "item_lines", None) or [None] * len(sequence)
    return list(zip(sequence, lines, strict=True))


def _text(mapping: dict[Any, Any], key: str, where: _Where) -> str:
    """The text under ``key`` in ``mapping``, stripped. An error, at the key's line (at
    ``where``'s where the key is missing), unless it is non-empty printable text."""
    value = mapping.get(key)
    where = where.at(_key_line(mapping, key))
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


def _unknown_keys(mapping: dict[Any, Any], allowed: set[str], where: _Where) -> None:
    """An error, at the first offending key's line, for a key that is not in ``allowed``."""
    odd = [key for key in mapping if isinstance(key, _OddKey)]
    if odd:
        raise QuizBankError(
            f"{where.at(_key_line(mapping, odd[0]))}: a key is a {odd[0].kind}, where it must "
            f"be a word (allowed: {', '.join(sorted(allowed))})"
        )
    # Keys may be numbers beside strings (YAML reads 1: as a number): sorted as written.
    unknown = sorted(set(mapping) - allowed, key=repr)
    if unknown:
        lines = [line for key in unknown if (line := _key_line(mapping, key)) is not None]
        raise QuizBankError(
            f"{where.at(min(lines, default=None))}: unknown key "
            f"{', '.join(map(repr, unknown))} (allowed: {', '.join(sorted(allowed))})"
        )


def _option(raw: Any, where: _Where) -> Option:
    if not isinstance(raw, dict):
        raise QuizBankError(f"{where}: an option must be a mapping with 'text' and 'why'")
    _unknown_keys(raw, OPTION_KEYS, where)
    correct = raw.get("correct", False)
    if not isinstance(correct, bool):
        raise QuizBankError(
            f"{where.at(_key_line(raw, 'correct'))}: 'correct' must be true or false, "
            f"got {correct!r}"
        )
    return Option(_text(raw, "text", where), correct, _text(raw, "why", where))


def _question(raw: Any, number: int, where: _Where) -> Question:
    """The question ``raw``, the ``number``-th of its bank, at ``where`` (its file and
    line)."""
    where = replace(where, part=f"question #{number}")
    if not isinstance(raw, dict):
        raise QuizBankError(f"{where}: a question must be a mapping")
    if isinstance(raw.get("id"), str) and raw["id"].strip():
        where = replace(where, part=f"question {raw['id'].strip()!r} (#{number})")
    _unknown_keys(raw, QUESTION_KEYS, where)
    question_id = _text(raw, "id", where)
    if not ID_PATTERN.fullmatch(question_id):
        raise QuizBankError(
            f"{where.at(_key_line(raw, 'id'))}: the id must be lower-case letters, digits and "
            "single hyphens (such as 'tile-model')"
        )
    prompt = _text(raw, "question", where)
    raw_options = raw.get("options")
    # Errors about the options as a whole point at their key.
    options_at = where.at(_key_line(raw, "options"))
    if not isinstance(raw_options, list) or len(raw_options) < 2:
        raise QuizBankError(f"{options_at}: 'options' must list at least two options")
    if len(raw_options) > MAX_OPTIONS:
        raise QuizBankError(
            f"{options_at}: {len(raw_options)} options, more than the {MAX_OPTIONS} letters "
            "that label them"
        )
    options = tuple(
        _option(option, where.inner(line, f", option {index}"))
        for index, (option, line) in enumerate(_with_lines(raw_options), 1)
    )
    n_correct = sum(option.correct for option in options)
    if n_correct != 1:
        found = "no option is" if n_correct == 0 else f"{n_correct} options are"
        raise QuizBankError(f"{options_at}: {found} marked 'correct: true'; exactly one must be")
    return Question(question_id, prompt, options, where.line)


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


def _parse(text: str, source: str) -> Any:
    """The data of the YAML ``text``, the bank at ``source``, read as plain YAML."""
    loader = _PlainLoader(text)
    loader.name = source  # YAML's own messages would name "<unicode string>"
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_bank(path: Path | str) -> Bank:
    """Read and validate the bank at ``path``; raise :class:`QuizBankError` if it is malformed."""
    path = Path(path)
    source = str(path)
    try:
        raw = _parse(_bank_bytes(path).decode("utf-8"), source)
    except OSError as error:
        reason = error.strerror or str(error)
        raise QuizBankError(f"{source}: cannot read the bank ({reason})") from None
    except UnicodeDecodeError as error:
        raise QuizBankError(
            f"{source}: not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = _Where(source, None if mark is None else mark.line + 1)
        raise QuizBankError(f"{where}: not valid YAML ({error})") from None
    except yaml.YAMLError as error:
        raise QuizBankError(f"{source}: not valid YAML ({error})") from None
    except RecursionError:
        raise QuizBankError(f"{source}: nested too deeply to be a bank") from None
    if not isinstance(raw, dict):
        raise QuizBankError(f"{source}: the bank must be a mapping with a 'questions' list")
    _unknown_keys(raw, BANK_KEYS, _Where(source))
    raw_questions = raw.get("questions")
    if not isinstance(raw_questions, list) or not raw_questions:
        raise QuizBankError(
            f"{_Where(source, _key_line(raw, 'questions'))}: 'questions' must be a non-empty list"
        )
    questions = tuple(
        _question(question, number, _Where(source, line))
        for number, (question, line) in enumerate(_with_lines(raw_questions), 1)
    )
    seen: set[str] = set()
    for number, question in enumerate(questions, 1):
        if question.id in seen:
            raise QuizBankError(
                f"{_Where(source, question.line)}: question {question.id!r} (#{number}): "
                "the id is used twice"
            )
        seen.add(question.id)
    return Bank(path, questions)


def load_translation(path: Path | str, original: Bank) -> Bank:
    """Read the bank at ``path``, a translation of ``original`` (``quiz/<language>/<name>.yaml``
    beside ``quiz/<name>.yaml``), validate it as a bank, then check that it matches the
    original: the same questions by id and in the same order, each with as many options
    and its correct option in the same place. Only the texts may differ.

    Raise :class:`QuizBankError`, naming the file, the line and the question, where it does
    not.
    """
    translation = load_bank(path)
    source = str(Path(path))
    ids = [question.id for question in translation.questions]
    original_ids = {question.id for question in original.questions}
    for number, translated in enumerate(translation.questions, 1):
        if translated.id not in original_ids:
            raise QuizBankError(
                f"{_Where(source, translated.line)}: question {translated.id!r} (#{number}): "
                f"{original.path} has no question of this id; a translation adds none"
            )
    for number, question in enumerate(original.questions, 1):
        if question.id not in ids:
            # Missing here, it has no line here: the original's line says which it is.
            raise QuizBankError(
                f"{source}: question {question.id!r} (#{number} at "
                f"{_Where(str(original.path), question.line)}) is missing; a translation "
                "has every question of the original"
            )
    for number, (translated, question) in enumerate(
        zip(translation.questions, original.questions, strict=True), 1
    ):
        where = _Where(source, translated.line, f"question {translated.id!r} (#{number})")
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

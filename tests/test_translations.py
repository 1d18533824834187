"""The Russian edition: a catalog for every page, complete translations of every page
and every quiz bank (the banks matching the English ones), the kernels' printed phrases,
and lesson 1 in the seed's own words."""

import ast
import re
import string
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from conftest import ROOT, markdown_pages

from kernels.text import messages
from quiz.bank import QuizBankError, load_bank, load_translation

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
from course_build import lesson_code

LOCALES = ROOT / "docs" / "locales" / "ru" / "LC_MESSAGES"
# Messages with a value of one run in them (sphinx-gallery's running time): not text to
# translate, and different in every build.
RUN_SPECIFIC = re.compile(r"\A\*\*Total running time of the script:\*\*")
# The seed lesson (Russian) and its quiz, as the project received them.
SEED = ROOT / "tests" / "data" / "000_33f2ad8b9079013d.txt"
# Slips of the seed's text that the Russian lesson corrects: a word typed twice.
SEED_SLIPS = {
    "потоковой модели модели": "потоковой модели",
    "модель тайлов модели": "модель тайлов",
}


def pages() -> list[str]:
    """Every page of the site, by docname: the Markdown pages and the gallery's."""
    names = [p.relative_to(ROOT).with_suffix("").as_posix() for p in markdown_pages()]
    names += ["docs/examples/index"]
    names += [f"docs/examples/{p.stem}" for p in (ROOT / "gallery").glob("plot_*.py")]
    return sorted(names)


def catalog(page: str) -> list:
    """The messages of a page's Russian catalog, in page order, without the header."""
    with (LOCALES / f"{page}.po").open(encoding="utf-8") as file:
        return [message for message in read_po(file) if message.id]


def test_every_page_has_a_catalog() -> None:
    missing = [page for page in pages() if not (LOCALES / f"{page}.po").exists()]
    assert not missing, f"no catalog (run nox -s catalogs): {missing}"


# Paragraphs with measured values are glued whole, in the build's language, from
# kernels/text/locales/ (in a translated paragraph myst-nb would find no glue data): the
# page catalogs hold only text that stays the same from build to build.
@pytest.mark.parametrize("page", pages())
def test_every_message_of_every_page_is_translated(page: str) -> None:
    for message in catalog(page):
        if RUN_SPECIFIC.match(message.id):
            continue
        assert message.string, f"{page}: no translation of {message.id!r}"
        assert not message.fuzzy, f"{page}: the translation of {message.id!r} is fuzzy"


# A number whose digits are grouped by plain spaces ("50 257"): the Russian edition
# groups them with no-break spaces, as kernels.text.messages.number writes them, so that a
# number never breaks across lines on a phone.
SPACED_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?: \d{3})+(?!\d)")


@pytest.mark.parametrize("page", pages())
def test_russian_numbers_group_their_digits_with_no_break_spaces(page: str) -> None:
    for message in catalog(page):
        found = SPACED_NUMBER.findall(message.string or "")
        assert not found, f"{page}: {found} in the translation of {message.id[:60]!r}"


def test_russian_banks_group_their_digits_with_no_break_spaces() -> None:
    for path in sorted((ROOT / "quiz" / "ru").glob("*.yaml")):
        found = SPACED_NUMBER.findall(path.read_text(encoding="utf-8"))
        assert not found, f"{path.name}: {found}"


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "quiz").glob("*.yaml")))
def test_every_bank_has_a_translation_that_matches_it(name: str) -> None:
    original = load_bank(ROOT / "quiz" / f"{name}.yaml")
    translation = load_translation(ROOT / "quiz" / "ru" / f"{name}.yaml", original)
    assert len(translation.questions) == len(original.questions)


def test_every_bank_translation_has_an_original() -> None:
    for path in sorted((ROOT / "quiz" / "ru").glob("*.yaml")):
        load_translation(path, load_bank(ROOT / "quiz" / path.name))


def _write(path: Path, bank: str) -> Path:
    path.write_text(bank, encoding="utf-8")
    return path


ORIGINAL = """questions:
  - id: first
    question: One?
    options:
      - {text: a, why: w}
      - {text: b, why: w, correct: true}
  - id: second
    question: Two?
    options:
      - {text: a, why: w, correct: true}
      - {text: b, why: w}
"""


def _swapped(bank: str) -> str:
    """``bank`` (ORIGINAL) with its two questions in the other order."""
    at = bank.index("  - id: second")
    return "questions:\n" + bank[at:] + bank[len("questions:\n") : at]


# Each error names the translation's line where the question is there (the line of the
# original's question where it is missing), then the question.
@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda b: b.replace("  - id: second", "  - id: other"),
         ":7: question 'other' \\(#2\\): .* has no question"),
        (lambda b: b[: b.index("  - id: second")],
         ": question 'second' \\(#2 at .*bank.yaml:7\\) is missing"),
        (lambda b: b.replace("{text: b, why: w, correct: true}", "{text: b, why: w}")
         .replace("{text: a, why: w}", "{text: a, why: w, correct: true}", 1),
         ":2: question 'first' \\(#1\\): option 1 is marked correct, but in the original "
         "option 2"),
        (lambda b: b.replace("      - {text: b, why: w}\n", "      - {text: b, why: w}\n"
                             "      - {text: c, why: w}\n"),
         ":7: question 'second' \\(#2\\): 3 options"),
        (_swapped, ":2: question 'second' \\(#1\\): the original has 'first' here; keep the "
                   "original's order"),
    ],
    ids=["an-added-question", "a-missing-question", "another-correct-option",
         "another-number-of-options", "another-order"],
)  # fmt: skip
def test_a_translation_that_does_not_match_names_file_line_and_question(
    tmp_path: Path, edit: object, expected: str
) -> None:
    original = load_bank(_write(tmp_path / "bank.yaml", ORIGINAL))
    (tmp_path / "ru").mkdir()
    translated = _write(tmp_path / "ru" / "bank.yaml", edit(ORIGINAL))  # type: ignore[operator]
    with pytest.raises(QuizBankError, match=f"ru/bank.yaml{expected}"):
        load_translation(translated, original)


def marked_phrases() -> set[str]:
    """Every phrase marked ``_("...")`` in the kernels package (its exercises included,
    whose texts are marked ``N_("...")`` and translated where shown), the gallery's
    scripts, the site's Sphinx extensions and the pages' code."""
    found = set()
    scripts = [*(ROOT / "kernels").glob("*.py"), *(ROOT / "kernels" / "exercises").glob("*.py"),
               *(ROOT / "gallery").glob("*.py"),
               *(ROOT / "docs" / "_ext").glob("*.py")]  # fmt: skip
    sources = {path: path.read_text(encoding="utf-8") for path in scripts}
    for page in markdown_pages():
        sources[page] = lesson_code(page.read_text(encoding="utf-8"))
    for path, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("_", "N_"):
                assert isinstance(node.args[0], ast.Constant), f"{path}: _() of a non-literal"
                found.add(node.args[0].value)
    return found


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_printed_phrase_has_a_russian_translation_with_its_fields() -> None:
    phrases = marked_phrases()
    russian = messages.read_po(messages.LOCALES / "ru.po")
    assert phrases
    for phrase in sorted(phrases):
        assert phrase in russian, f"kernels/text/locales/ru.po: no translation of {phrase!r}"
        assert fields(russian[phrase]) == fields(phrase), phrase


def test_printed_phrases_follow_the_language(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernels.harness.provenance import placeholder_caption

    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    assert placeholder_caption("softmax").startswith("Ещё не измерено: для `softmax`")
    assert messages.number("16,777,216 at 90.5%") == "16\u00a0777\u00a0216 at 90,5%"
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "en")
    assert placeholder_caption("softmax").startswith("Not measured yet: `softmax`")


def normalise(text: str) -> str:
    """Whitespace runs as one space, every kind of quote as one, no Markdown emphasis."""
    text = re.sub(r"[«»„“”\"]", '"', text).replace("**", "").replace("*", "")
    return " ".join(text.split())


def seed_sentences() -> list[str]:
    """The sentences of the seed's lesson (its quiz, after "TERMINAL", is English),
    headings without their numbers, each without its final full stop."""
    lesson = SEED.read_text(encoding="utf-8").split("TERMINAL")[0]
    for slip, fix in SEED_SLIPS.items():
        lesson = lesson.replace(slip, fix)
    sentences = []
    for line in filter(None, (line.strip() for line in lesson.splitlines())):
        line = re.sub(r"\A\d+\. ", "", line)
        sentences += re.split(r"(?<=[.:!?])\s+(?=[A-Z\u0410-\u042f])", line)
    return [normalise(sentence).removesuffix(".") for sentence in sentences]


def test_russian_lesson_1_contains_the_seed_sentences() -> None:
    text = normalise(" ".join(m.string for m in catalog("docs/lessons/01_intro")))
    sentences = seed_sentences()
    assert len(sentences) > 15
    for sentence in sentences:
        assert sentence in text, f"the Russian lesson 1 lacks the seed's sentence {sentence!r}"


def test_where_the_kernels_run_is_said_in_the_edition_s_language(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cpu = "the CPU, through Triton's interpreter"
    monkeypatch.setattr(messages, "describe_device", lambda: cpu)
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    assert messages.kernels_run_on() == "Ядра выполняются на CPU, через интерпретатор Triton."
    monkeypatch.setattr(messages, "describe_device", lambda: "NVIDIA H100 80GB HBM3")
    assert messages.kernels_run_on() == "Ядра выполняются на NVIDIA H100 80GB HBM3."

"""No measured number is typed into a page's prose or a quiz bank: a measurement reaches a
page through glue or printed output, from a record, so that it changes when the record
does. A number followed by a unit of speed, time or share in prose is taken for a typed
measurement unless it is in ALLOWED, the short list of those that are not measurements."""

import os
import re
from pathlib import Path

import pytest
from conftest import markdown_pages
from records import bounded_text, within

ROOT = Path(__file__).resolve().parents[1]

# A number, then a unit a measurement would carry ("%" right after the number: with a
# space between, as in "904 % 512", it is Python's remainder).
TYPED = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)*(?:%|\s*(?:GB/s|TB/s|GFLOP/s|TFLOP/s|µs|us|ms))(?![\w/])"
)
# (file, the matched text): numbers in prose that are facts or definitions, not results.
ALLOWED: set[tuple[str, str]] = set()


def gallery_prose(source: str) -> str:
    """The text sphinx-gallery shows as prose: the docstring and the comment lines."""
    docstring = re.match(r'\s*"""(.*?)"""', source, re.S)
    comments = [line.strip()[1:] for line in source.splitlines() if line.strip().startswith("#")]
    return (docstring.group(1) if docstring else "") + "\n" + "\n".join(comments)


def markdown_prose(source: str) -> str:
    """A MyST page without its front matter and its code (fenced blocks and code cells)."""
    source = re.sub(r"\A---\n.*?\n---\n", "", source, flags=re.S)
    return re.sub(r"^(```+).*?^\1\s*$", "", source, flags=re.S | re.M)


def bank_text(source: str) -> str:
    """A quiz bank's words: its questions, options and explanations."""
    return source


def prose_files(root: Path = ROOT) -> list[tuple[Path, str]]:
    files = [(p, gallery_prose(bounded_text(p))) for p in root.glob("gallery/*.py")]
    files += [
        (p, markdown_prose(bounded_text(p)))
        for p in markdown_pages(root)
        if "examples" not in p.parts and "locales" not in p.parts
    ]
    files += [(p, bank_text(bounded_text(p))) for p in root.glob("quiz/**/*.yaml")]
    return files


def typed_numbers(path: Path, text: str) -> list[str]:
    """The typed measurements of one file's prose, each with the line it is on."""
    name = path.relative_to(ROOT).as_posix()
    found = []
    for line in text.splitlines():
        for match in TYPED.finditer(line):
            if (name, match.group(0)) not in ALLOWED:
                found.append(f"{name}: {match.group(0)!r} in {line.strip()!r}")
    return found


@pytest.mark.parametrize("path", [p for p, _ in prose_files()], ids=lambda p: p.name)
def test_no_measurement_is_typed_into_prose(path: Path) -> None:
    text = dict(prose_files())[path]
    assert typed_numbers(path, text) == []


@pytest.mark.parametrize(
    "text",
    ["ran at 88% in four sweeps", "reaches 3.9 TB/s", "a 20 us launch", "took 1.5 ms"],
)
def test_the_check_finds_a_typed_measurement(text: str) -> None:
    assert typed_numbers(ROOT / "gallery" / "x.py", text)


def test_a_remainder_is_not_a_share() -> None:
    assert not typed_numbers(ROOT / "gallery" / "x.py", "row = 10 % 3 = 1")


def test_the_check_reads_prose_and_skips_code() -> None:
    page = "---\nfile_format: mystnb\n---\nProse 5%.\n```{code-cell} python\nprint('7%')\n```\n"
    assert markdown_prose(page).count("%") == 1
    script = '"""\nTitle 1%\n"""\nx = "2%"\n# %%\n# prose 3%\n'
    assert "2%" not in gallery_prose(script) and "3%" in gallery_prose(script)


def test_a_fifo_named_like_a_bank_is_named_without_hanging(tmp_path: Path) -> None:
    # Before: collecting these tests blocked forever on a FIFO named like a bank.
    (tmp_path / "quiz").mkdir()
    os.mkfifo(tmp_path / "quiz" / "odd.yaml")
    with within(10), pytest.raises(OSError, match=r"quiz/odd\.yaml: cannot read it \(not a reg"):
        prose_files(tmp_path)

"""The quiz directive in a small Sphinx project: rendering, and build failures on bad banks."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from quiz.rst import to_rst_inline

ROOT = Path(__file__).resolve().parent.parent

BANK = """
questions:
  - id: first
    question: What does `tl.constexpr` mark?
    options:
      - text: A value known when the kernel is compiled.
        correct: true
        why: It is baked into the compiled kernel.
      - text: A value that changes during execution.
        why: That is an ordinary argument.
      - text: A thread's index.
        why: That is `tl.program_id`, and it is per program.
  - id: second
    question: Is this the second question?
    options:
      - text: "Yes"
        correct: true
        why: It is listed second.
      - text: "No"
        why: Count again.
"""


def build(project: Path, page: str, bank: str) -> subprocess.CompletedProcess[str]:
    """Build a project with one page (``index.rst`` or ``index.md``) and ``quiz/demo.yaml``."""
    (project / "quiz").mkdir(parents=True)
    (project / "quiz" / "demo.yaml").write_text(bank, encoding="utf-8")
    (project / "conf.py").write_text(
        'extensions = ["myst_parser", "quiz"]\nroot_doc = "index"\n', encoding="utf-8"
    )
    name = "index.md" if page.startswith("#") else "index.rst"
    (project / name).write_text(page, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "-q",
            "-b",
            "html",
            str(project),
            str(project / "_out"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize(
    "page",
    ["Quiz\n====\n\n.. quiz:: demo\n", "# Quiz\n\n```{quiz} demo\n```\n"],
    ids=["rst", "myst"],
)
def test_renders_each_option_as_a_dropdown(tmp_path: Path, page: str) -> None:
    result = build(tmp_path, page, BANK)
    assert result.returncode == 0, result.stderr
    html = (tmp_path / "_out" / "index.html").read_text(encoding="utf-8")
    questions = html.split('class="quiz-question')[1:]
    assert len(questions) == 2
    assert [q.count("<details") for q in questions] == [3, 2]
    assert html.count("<strong>Correct.</strong>") == 2
    assert html.count("<strong>Not quite.</strong>") == 3
    # Inline code in bank text becomes code; text is kept as written (no curly quotes).
    assert re.search(r"<code[^>]*><span class=\"pre\">tl.constexpr</span></code>", html)
    assert "It is listed second." in html and "Yes" in html


def test_malformed_bank_fails_the_build_naming_file_and_question(tmp_path: Path) -> None:
    broken = BANK.replace(
        "        correct: true\n        why: It is listed second.",
        "        why: It is listed second.",
    )
    result = build(tmp_path, "Quiz\n====\n\n.. quiz:: demo\n", broken)
    assert result.returncode != 0
    assert "Malformed quiz bank" in result.stderr
    assert re.search(r"demo\.yaml: question 'second' \(#2\): no option is marked", result.stderr)


def test_missing_bank_fails_the_build(tmp_path: Path) -> None:
    result = build(tmp_path, "Quiz\n====\n\n.. quiz:: nosuchbank\n", BANK)
    assert result.returncode != 0
    assert re.search(r"nosuchbank\.yaml: cannot read the bank", result.stderr)


@pytest.mark.parametrize(
    ("text", "rst"),
    [
        ("plain words.", "plain words."),
        ("What is `tl.constexpr`?", "What is ``tl.constexpr``\\ ?"),
        # A space beside the code stays a space (it once vanished: "nox</code>on").
        ("by `nox -s docs` on", "by ``nox -s docs`` on"),
        ("(`x`s)", "(\\ ``x``\\ s)"),
        ("`x` first", "``x`` first"),
        ("a*b_c|d", "a\\*b\\_c\\|d"),
        ("an `unmatched backtick", "an \\`unmatched backtick"),
    ],
)
def test_bank_text_becomes_safe_inline_rst(text: str, rst: str) -> None:
    assert to_rst_inline(text) == rst

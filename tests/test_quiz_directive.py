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


def build(
    project: Path,
    page: str,
    bank: str,
    translation: str | None = None,
    script: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Build a project with one page (``index.rst`` or ``index.md``) and ``quiz/demo.yaml``;
    given a ``translation`` of the bank, its Russian edition, with ``quiz/ru/demo.yaml``;
    given a ``script``, a gallery-like ``plot_demo.py`` that the page offers for download,
    which the site's downloads extension makes whole once the site is written."""
    (project / "quiz").mkdir(parents=True)
    (project / "quiz" / "demo.yaml").write_text(bank, encoding="utf-8")
    extensions = ["myst_parser", "quiz"]
    if script is not None:
        (project / "plot_demo.py").write_text(script, encoding="utf-8")
        extensions.append("downloads")
    conf = f'extensions = {extensions!r}\nroot_doc = "index"\n'
    if translation is not None:
        (project / "quiz" / "ru").mkdir()
        (project / "quiz" / "ru" / "demo.yaml").write_text(translation, encoding="utf-8")
        conf += 'language = "ru"\n'
    (project / "conf.py").write_text(conf, encoding="utf-8")
    name = "index.md" if page.startswith("#") else "index.rst"
    (project / name).write_text(page, encoding="utf-8")
    path = [str(ROOT), str(ROOT / "docs" / "_ext"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
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


def test_verdicts_stay_out_of_the_search_index(tmp_path: Path) -> None:
    result = build(tmp_path, "Quiz\n====\n\n.. quiz:: demo\n", BANK)
    assert result.returncode == 0, result.stderr
    index = (tmp_path / "_out" / "searchindex.js").read_text(encoding="utf-8").lower()
    # The questions and options can be found; what opening an option tells cannot
    # (the index holds stems: "quite" as "quit", "ordinary" as "ordinari").
    for word in ("second", "constexpr", "thread"):
        assert f'"{word}"' in index, word
    for word in ("correct", "quit", "bake", "ordinari", "count"):
        assert f'"{word}"' not in index, word
    html = (tmp_path / "_out" / "index.html").read_text(encoding="utf-8")
    right = html.count('class="quiz-verdict quiz-right no-search docutils container"')
    wrong = html.count('class="quiz-verdict quiz-wrong no-search docutils container"')
    # Each verdict styled as right or wrong (before, the two looked the same).
    assert (right, right + wrong) == (BANK.count("correct: true"), 5)


def test_malformed_bank_fails_the_build_naming_file_and_question(tmp_path: Path) -> None:
    broken = BANK.replace(
        "        correct: true\n        why: It is listed second.",
        "        why: It is listed second.",
    )
    result = build(tmp_path, "Quiz\n====\n\n.. quiz:: demo\n", broken)
    assert result.returncode != 0
    # A located error (the page and the directive's line), not a crash with a traceback.
    # The bank's line too: the options of question 'second'.
    assert re.search(r"index\.rst:4: ERROR: .*demo\.yaml:15: question 'second' \(#2\): no "
                     r"option is marked", result.stderr)  # fmt: skip
    assert "Traceback" not in result.stderr and "Please also report" not in result.stderr


def test_a_malformed_bank_in_a_download_fails_the_build_naming_the_bank(tmp_path: Path) -> None:
    # Before: the directive reported the bank, then making the gallery's download whole
    # read it again when the site was written and crashed: "Extension error (downloads)!"
    # with a traceback.
    broken = BANK.replace("        correct: true\n        why: It is listed second.",
                          "        why: It is listed second.")  # fmt: skip
    page = "Quiz\n====\n\n.. quiz:: demo\n\nGet :download:`plot_demo.py`.\n"
    script = '"""\nDemo\n====\n\n.. quiz:: demo\n"""\n\nx = 1\n'
    result = build(tmp_path, page, broken, script=script)
    assert result.returncode != 0
    assert re.search(r"index\.rst:4: ERROR: .*demo\.yaml:15: question 'second'", result.stderr)
    assert re.search(r"plot_demo\.py: cannot make the download whole: .*demo\.yaml:15: "
                     r"question 'second' \(#2\): no option is marked", result.stderr), (
        result.stderr
    )  # fmt: skip
    for crash in ("Extension error", "Traceback", "Please also report"):
        assert crash not in result.stderr, result.stderr


def _swapped(bank: str) -> str:
    """``bank`` (two questions, 'first' and 'second') with its questions in the other order."""
    head, questions = bank.split("  - id: first")
    first, second = questions.split("  - id: second")
    return f"{head}  - id: second{second}  - id: first{first}"


def test_a_translation_out_of_order_fails_the_build_naming_file_line_and_question(
    tmp_path: Path,
) -> None:
    result = build(tmp_path, "Quiz\n====\n\n.. quiz:: demo\n", BANK, translation=_swapped(BANK))
    assert result.returncode != 0
    # Line 3 of the translation holds question 'second', where the original has 'first'.
    assert re.search(r"index\.rst:4: ERROR: .*ru/demo\.yaml:3: question 'second' \(#1\): the "
                     r"original has 'first' here; keep the original's order",
                     result.stderr), result.stderr  # fmt: skip
    assert "Traceback" not in result.stderr and "Please also report" not in result.stderr


def test_missing_bank_fails_the_build(tmp_path: Path) -> None:
    result = build(tmp_path, "Quiz\n====\n\n.. quiz:: nosuchbank\n", BANK)
    assert result.returncode != 0
    assert re.search(r"nosuchbank\.yaml: cannot read the bank", result.stderr)
    assert "Traceback" not in result.stderr and "Please also report" not in result.stderr


HOSTILE = [
    ".. raw:: html\n\n   <script>alert(1)</script>",
    "<script>alert(2)</script>",
    ":raw-html:`<b>bold</b>` and **strong** and `code` and ``double``",
    "- not a list\n- really",
    "an `odd backtick",
    "|sub| [#]_ `link <javascript:alert(3)>`_ :math:`x` $y$ {role}`z`",
]


def _bank_of(texts: list[str]) -> str:
    import json

    # JSON strings are valid YAML scalars: every character of the texts gets through.
    questions = [
        {
            "id": f"q{index}",
            "question": text,
            "options": [
                {"text": text, "correct": True, "why": text},
                {"text": "Plain.", "why": text},
            ],
        }
        for index, text in enumerate(texts)
    ]
    return json.dumps({"questions": questions})


@pytest.mark.parametrize(
    "page", ["Quiz\n====\n\n.. quiz:: demo\n", "# Quiz\n\n```{quiz} demo\n```\n"]
)
def test_bank_text_is_shown_as_written_never_as_markup(tmp_path: Path, page: str) -> None:
    result = build(tmp_path, page, _bank_of(HOSTILE))
    assert result.returncode == 0, result.stderr
    html = (tmp_path / "_out" / "index.html").read_text(encoding="utf-8")
    # The quiz, up to the theme's sidebar.
    body = html[html.index('class="quiz docutils') : html.index("sphinxsidebar")]
    for raw in ("<script>alert", "<b>bold</b>", 'href="javascript:', "<strong>strong", "<li>"):
        assert raw not in body, raw
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in body
    assert "**strong**" in body and "|sub|" in body and "- not a list - really" in body
    # Backticks still make code; an odd one is a character, and the dropdowns hold.
    assert re.search(r"<code[^>]*><span class=\"pre\">code</span></code>", body)
    assert "an `odd backtick" in body
    questions = body.split('class="quiz-question')[1:]
    assert [q.count("<details") for q in questions] == [2] * len(HOSTILE)
    for question in questions:
        verdicts = question.split("<details")[1:]
        assert sum("<strong>Correct.</strong>" in v for v in verdicts) == 1


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ("Q\n=\n\n.. quiz:: ../../outside\n", r"quiz '\.\./\.\./outside': a bank is named"),
        (
            "Q\n=\n\n.. quiz:: demo\n\n.. quiz:: demo\n",
            r"quiz 'demo': question 'first' would repeat the anchor 'quiz-demo-first'",
        ),
    ],
    ids=["outside-quiz-folder", "same-bank-twice"],
)
def test_a_directive_that_would_break_the_page_fails_the_build(
    tmp_path: Path, page: str, message: str
) -> None:
    result = build(tmp_path, page, BANK)
    assert result.returncode != 0
    assert re.search(r"index: " + message, result.stderr), result.stderr
    assert "Traceback" not in result.stderr and "Please also report" not in result.stderr


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


@pytest.mark.parametrize(
    ("label", "clash"),
    [("quiz-demo-first", True), ("some-label", False)],
    ids=["clash", "no-clash"],
)
def test_a_page_id_equal_to_a_question_s_anchor_fails_the_build(
    tmp_path: Path, label: str, clash: bool
) -> None:
    # The section's label gives it the id of the first question's anchor: the page would
    # hold two elements with one id.
    page = f"# Quiz\n\n({label})=\n## Notes\n\nText.\n\n```{{quiz}} demo\n```\n"
    result = build(tmp_path, page, BANK)
    assert (result.returncode != 0) == clash, result.stderr
    message = "the anchor 'quiz-demo-first' of a quiz question is also the id of another"
    assert (message in result.stderr) == clash


@pytest.mark.parametrize(
    ("page", "clash"),
    [
        ('Quiz\n====\n\n.. raw:: html\n\n   <div id="quiz-demo-first"></div>\n\n'
         ".. quiz:: demo\n", "quiz-demo-first"),
        ('# Quiz\n\n<div id="quiz-demo-first">Notes</div>\n\n```{quiz} demo\n```\n',
         "quiz-demo-first"),
        ("# Quiz\n\nSee <span ID='quiz-demo-second'>here</span>.\n\n```{quiz} demo\n```\n",
         "quiz-demo-second"),
        ('# Quiz\n\n<div id="demo" class="quiz-demo-first">Notes</div>\n\n```{quiz} demo\n```\n',
         None),
    ],
    ids=["rst-raw", "myst-html-block", "myst-inline-html", "no-clash"],
)  # fmt: skip
def test_an_id_in_raw_html_equal_to_a_question_s_anchor_fails_the_build(
    tmp_path: Path, page: str, clash: str | None
) -> None:
    # Before: the check read only the ids of docutils nodes, and the page held two
    # elements with one id while the -W build passed.
    result = build(tmp_path, page, BANK)
    assert (result.returncode != 0) == bool(clash), result.stderr
    message = f"the anchor {clash!r} of a quiz question is also the id of another"
    assert (message in result.stderr) == bool(clash), result.stderr

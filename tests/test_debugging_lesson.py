"""The debugging lesson, as built: the errors and wrong numbers it shows are the real ones."""

import re
from html import unescape

from conftest import DocsBuild


def test_debugging_lesson_shows_each_mistake_with_its_real_output(docs_build: DocsBuild) -> None:
    html = docs_build.page("docs/lessons/04_debugging.html")
    text = " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())
    for shown in (
        "(1, 0, 0) x: [4. 5. 0. 0.]",  # tl.device_print in the interpreter
        "InterpreterError AssertionError('out must be float32')",
        "debug=True: assertions ['n_elements is larger than one tile']",
        "debug=False: assertions []",
        "arange's range must be a power of 2",
        "int32: [0, 2147481610, -2147435429, -1001374801]",
        "INT64=False: assertions ['int32 overflow detected for operation mul']",
        "other=None: kernel 0.0, torch -1.5",
        "other=-inf: kernel -1.5, torch -1.5",
        "margin: [nan, -1.0, -1.0, -1.0]",
    ):
        assert shown in text, shown
    assert "Traceback" not in text
    questions = html.split('class="quiz-question')[1:]
    assert [q.count("<details") for q in questions] == [4] * 5

"""The ``quiz`` directive: one bank in, questions with sphinx-design dropdowns out.

Each option is a dropdown (a native ``<details>`` element, so it opens without
JavaScript). Its title is the option; opening it says whether the option is right and
why. Titles all look alike, so the page does not give the answer away before a click.
"""

from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from sphinx.errors import SphinxError
from sphinx.locale import get_translation
from sphinx.util.docutils import SphinxDirective

from quiz.bank import Bank, Option, QuizBankError, load_bank
from quiz.rst import escape, to_rst_inline

_ = get_translation("quiz")

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class QuizBuildError(SphinxError):
    """A malformed bank: stops the build with the bank's message."""

    category = "Malformed quiz bank"


def _indent(text: str, spaces: int) -> str:
    return "\n".join((" " * spaces + line) if line else line for line in text.splitlines())


def _option_rst(letter: str, option: Option) -> str:
    verdict = _("Correct.") if option.correct else _("Not quite.")
    return (
        f".. dropdown:: {letter}. {to_rst_inline(option.text)}\n"
        f"   :class-container: quiz-option\n\n"
        f"   **{escape(verdict)}** {to_rst_inline(option.why)}\n"
    )


def bank_to_rst(bank: Bank, name: str) -> str:
    """The whole quiz as reStructuredText, options in their shuffled, stable order."""
    blocks = []
    for number, question in enumerate(bank.questions, 1):
        body = [
            f".. rubric:: {escape(_('Question %d') % number)}",
            to_rst_inline(question.question),
        ]
        body += [
            _option_rst(letter, option)
            for letter, option in zip(LETTERS, question.shuffled_options(), strict=False)
        ]
        blocks.append(
            f".. container:: quiz-question\n   :name: quiz-{name}-{question.id}\n\n"
            + _indent("\n\n".join(body), 3)
        )
    return ".. container:: quiz\n\n" + _indent("\n\n".join(blocks), 3) + "\n"


class QuizDirective(SphinxDirective):
    """``quiz NAME``: render ``<quiz_bank_dir>/NAME.yaml``."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        path = Path(self.env.srcdir) / self.config.quiz_bank_dir / f"{name}.yaml"
        self.env.note_dependency(str(path))
        try:
            bank = load_bank(path)
        except QuizBankError as error:
            raise QuizBuildError(f"{error} (used by {self.env.docname})") from None
        # Parse as reStructuredText whatever the page is written in (MyST or RST), in a
        # scratch document that shares this build's settings and so its directives.
        scratch = new_document(self.get_source_info()[0], self.state.document.settings)
        Parser().parse(bank_to_rst(bank, name), scratch)
        for node in scratch.children:
            # Bank text is shown as written: no typographic quotes in questions or options.
            node["support_smartquotes"] = False
        return list(scratch.children)

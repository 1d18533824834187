"""The ``quiz`` directive: one bank in, questions with sphinx-design dropdowns out.

Each option is a dropdown (a native ``<details>`` element, so it opens without
JavaScript). Its title is the option; opening it says whether the option is right and
why. Titles all look alike, so the page does not give the answer away before a click.

Text from a bank never goes through a markup parser: the directive parses a skeleton
whose every place for bank text holds a token, then puts the text in as docutils text
and code nodes. Whatever a bank holds (directives, roles, HTML, odd backticks), the
page shows it as written.
"""

import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from sphinx.locale import get_translation
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from .bank import NAME_PATTERN, Bank, QuizBankError, load_bank, load_translation
from .rst import escape

logger = logging.getLogger(__name__)

_ = get_translation("quiz")

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Marks the place of the n-th piece of bank text in the skeleton: letters and digits
# only, so that no markup can form around it.
_TOKEN = "quizbanktext{:06d}x"
_TOKEN_PATTERN = re.compile(r"quizbanktext(\d{6})x")


def indent(text: str, spaces: int) -> str:
    """``text`` with each non-empty line indented by ``spaces``: the body of a directive."""
    return "\n".join((" " * spaces + line) if line else line for line in text.splitlines())


def inline_nodes(text: str) -> list[nodes.Node]:
    """``text`` as inline docutils nodes: `spans` in backticks become code, the rest is
    plain text, whitespace runs become one space. An unmatched backtick is a character."""
    text = " ".join(text.split())
    parts = text.split("`")
    if len(parts) % 2 == 0:
        return [nodes.Text(text)]
    out: list[nodes.Node] = []
    for index, part in enumerate(parts):
        if index % 2 and part.strip():
            out.append(nodes.literal(part, part))
        elif part:
            out.append(nodes.Text(part))
    return out


def bank_to_rst(bank: Bank, name: str) -> tuple[str, list[str]]:
    """The quiz as a reStructuredText skeleton, options in their shuffled, stable order,
    and the bank texts its tokens stand for, in token order."""
    texts: list[str] = []

    def token(text: str) -> str:
        texts.append(text)
        return _TOKEN.format(len(texts) - 1)

    blocks = []
    for number, question in enumerate(bank.questions, 1):
        body = [f".. rubric:: {escape(_('Question %d') % number)}", token(question.question)]
        options = question.shuffled_options()  # the bank allows no more than there are letters
        for letter, option in zip(LETTERS[: len(options)], options, strict=True):
            verdict = _("Correct.") if option.correct else _("Not quite.")
            # The class styles right and wrong apart (ninja-gap.css), besides the word.
            kind = "quiz-right" if option.correct else "quiz-wrong"
            body.append(
                f".. dropdown:: {letter}. {token(option.text)}\n"
                f"   :class-container: quiz-option\n\n"
                # no-search: Sphinx leaves the verdict out of its search index, and
                # quiz-search.js out of the quotes under search results.
                f"   .. container:: quiz-verdict {kind} no-search\n\n"
                f"      **{escape(verdict)}** {token(option.why)}\n"
            )
        blocks.append(
            f".. container:: quiz-question\n   :name: {anchor(name, question.id)}\n\n"
            + indent("\n\n".join(body), 3)
        )
    return ".. container:: quiz\n\n" + indent("\n\n".join(blocks), 3) + "\n", texts


def anchor(name: str, question_id: str) -> str:
    """The HTML id of a question, as the page will have it."""
    return nodes.make_id(f"quiz-{name}-{question_id}")


def fill_in(tree: nodes.Node, texts: list[str]) -> None:
    """Replace every token in ``tree`` by the bank text it stands for."""
    for text_node in list(tree.findall(nodes.Text)):
        pieces = _TOKEN_PATTERN.split(str(text_node))
        if len(pieces) == 1:
            continue
        replacement: list[nodes.Node] = []
        for index, piece in enumerate(pieces):
            if index % 2:
                replacement += inline_nodes(texts[int(piece)])
            elif piece:
                replacement.append(nodes.Text(piece))
        text_node.parent.replace(text_node, replacement)


def parse_skeleton(
    directive: SphinxDirective, rst: str, fill: Callable[[nodes.Node], None]
) -> list[nodes.Node]:
    """The nodes of ``rst``, a skeleton whose tokens ``fill`` replaces with the texts they
    stand for. Parsed as reStructuredText whatever the page is written in (MyST or RST),
    in a scratch document that shares the page's settings and reporter, so that every
    message goes through Sphinx's logging (and -W). The texts are shown as written (no
    typographic quotes) and stay out of the page's catalog: they are translated where
    they come from (a bank's translation, kernels/text/locales/)."""
    scratch = new_document(directive.get_source_info()[0], directive.state.document.settings)
    scratch.reporter = directive.state.document.reporter
    Parser().parse(rst, scratch)
    fill(scratch)
    for node in scratch.children:
        node["support_smartquotes"] = False
    for node in scratch.findall(nodes.TextElement):
        node["translatable"] = False
    return list(scratch.children)


class _HtmlIds(HTMLParser):
    """The ``id`` attributes of a piece of HTML, as a browser reads them (any case of
    ``ID``, quoted or not, character references resolved)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # Also called for a self-closing tag (<span id="x"/>), by HTMLParser's default.
        self.ids += [value for name, value in attrs if name == "id" and value]


def html_ids(html: str) -> list[str]:
    """The element ids that ``html``, a page's raw HTML, writes into the page."""
    parser = _HtmlIds()
    parser.feed(html)
    parser.close()
    return parser.ids


def page_ids(doctree: nodes.document) -> Iterator[str]:
    """Every id the page's HTML will hold, once for each element that holds it: the ids of
    its nodes, and those written in its raw HTML (``.. raw:: html``, HTML in Markdown)."""
    for node in doctree.findall(nodes.Element):
        yield from node["ids"]
        if isinstance(node, nodes.raw) and "html" in node.get("format", "").split():
            yield from html_ids(node.astext())


def warn_of_shared_anchors(doctree: nodes.document, docname: str, container_class: str,
                           what: str) -> None:  # fmt: skip
    """Warn (an error with -W) where the id of a container of ``container_class`` (a quiz
    question, an exercise) is also the id of another element of the page: a section, a
    label of the page's own, or an element of its raw HTML. The directives parse their
    texts in a document of their own, so docutils cannot see such a clash (nor any that
    raw HTML makes), and the page would hold two elements with one id (a link to it
    would land on either)."""
    owners: dict[str, int] = {}
    for node_id in page_ids(doctree):
        owners[node_id] = owners.get(node_id, 0) + 1
    for node in doctree.findall(nodes.container):
        if container_class not in node["classes"]:
            continue
        for node_id in node["ids"]:
            if owners[node_id] > 1:
                logger.warning(
                    f"{docname}: the anchor {node_id!r} of {what} is also the id of another "
                    "element of this page (a section, a label or raw HTML): rename that "
                    "element",
                    location=node,
                )


def bank_path(srcdir: Path, bank_dir: str, name: str) -> Path:
    """The file of the bank ``name`` in a build whose sources are in ``srcdir``, with its
    banks in ``bank_dir`` (the ``quiz_bank_dir`` setting) under it."""
    return srcdir / bank_dir / f"{name}.yaml"


class QuizDirective(SphinxDirective):
    """``quiz NAME``: render ``<quiz_bank_dir>/NAME.yaml``."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        where = f"{self.env.docname}: quiz {name!r}"
        if not NAME_PATTERN.fullmatch(name):
            raise self.error(
                f"{where}: a bank is named by its file in {self.config.quiz_bank_dir}/, "
                "without '.yaml': lower-case letters, digits, '-' and '_'"
            )
        path = bank_path(Path(self.env.srcdir), self.config.quiz_bank_dir, name)
        # A build in another language shows the bank's translation, where there is one:
        # quiz/<language>/<name>.yaml, checked against the original.
        translated = path.parent / self.config.language / path.name
        self.env.note_dependency(str(path))
        if translated.exists():  # a missing file would make the page outdated forever
            self.env.note_dependency(str(translated))
        try:
            bank = load_bank(path)
            if self.config.language != "en" and translated.exists():
                bank = load_translation(translated, bank)
        except QuizBankError as error:
            raise self.error(f"{error} (used by {self.env.docname})") from None
        # Each question's anchor must be unique on its page: the same bank twice, or two
        # banks whose names differ only by '-' and '_', would repeat one.
        anchors = self.env.temp_data.setdefault("quiz_anchors", set())
        for question in bank.questions:
            if anchor(name, question.id) in anchors:
                raise self.error(
                    f"{where}: question {question.id!r} would repeat the anchor "
                    f"{anchor(name, question.id)!r} already on this page"
                )
            anchors.add(anchor(name, question.id))
        rst, texts = bank_to_rst(bank, name)
        # A bank is translated as a whole (quiz/<language>/), not through the page's
        # catalog: its texts stay out of the page's messages.
        return parse_skeleton(self, rst, lambda tree: fill_in(tree, texts))

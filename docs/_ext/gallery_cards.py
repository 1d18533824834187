"""The gallery index's cards in the edition's language.

sphinx-gallery writes each card of the gallery's index as raw HTML: a box whose
``tooltip`` is the example's first paragraph and whose title is the example's title,
both taken from the English script. Raw HTML is not translated, so the Russian index
showed English cards under a Russian menu. Each card also holds a ``:doc:`` link to its
page, which Sphinx resolves to the page's title in the edition's language; this
extension gives the card that title, and the translated page's first paragraph as its
tooltip. The English edition's cards are left as sphinx-gallery wrote them.
"""

import html
import posixpath
import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

_TITLE = re.compile(r'(<div class="sphx-glr-thumbnail-title">)(.*?)(</div>)', re.DOTALL)
_TOOLTIP = re.compile(r'(<div class="sphx-glr-thumbcontainer" tooltip=")(.*?)(">)', re.DOTALL)


def card_parts(doctree: nodes.Node) -> list[tuple[nodes.raw, nodes.raw, nodes.reference]]:
    """Each card of a gallery index: its opening raw HTML (with the tooltip), its
    closing raw HTML (with the title) and the link to its page, in page order."""
    cards = []
    opening: nodes.raw | None = None
    link: nodes.reference | None = None
    for node in doctree.findall(lambda n: isinstance(n, nodes.raw | nodes.reference)):
        if isinstance(node, nodes.raw) and _TOOLTIP.search(node.astext()):
            opening, link = node, None
        elif isinstance(node, nodes.reference) and opening is not None:
            link = link or node
        elif isinstance(node, nodes.raw) and _TITLE.search(node.astext()):
            if opening is not None and link is not None:
                cards.append((opening, node, link))
            opening = link = None
    return cards


def _replace_raw(raw: nodes.raw, pattern: re.Pattern[str], text: str) -> None:
    escaped = html.escape(text, quote=True)
    new = pattern.sub(lambda m: m.group(1) + escaped + m.group(3), raw.astext(), count=1)
    raw.replace(raw.children[0], nodes.Text(new))


def first_paragraph(doctree: nodes.Node) -> str | None:
    """The text of a page's first paragraph directly under a section (not in a note)."""
    for paragraph in doctree.findall(nodes.paragraph):
        if isinstance(paragraph.parent, nodes.section):
            return " ".join(paragraph.astext().split())
    return None


def translate_cards(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """In an edition other than English: give each card of a gallery index its page's
    translated title and first paragraph."""
    if app.config.language in (None, "en") or app.builder.format != "html":
        return
    for opening, closing, link in card_parts(doctree):
        _replace_raw(closing, _TITLE, link.astext())
        target = link.get("refuri", "").partition("#")[0]
        if not target.endswith(app.builder.out_suffix):
            continue
        page = posixpath.normpath(
            posixpath.join(posixpath.dirname(docname), target[: -len(app.builder.out_suffix)])
        )
        if page in app.env.all_docs:
            paragraph = first_paragraph(app.env.get_doctree(page))
            if paragraph:
                _replace_raw(opening, _TOOLTIP, paragraph)


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the handler for resolved pages (the links hold their titles by then)."""
    app.connect("doctree-resolved", translate_cards)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

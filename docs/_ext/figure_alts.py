"""The alt text of the lessons' figures, in the translation catalogs.

A lesson's figures are outputs of its code: a ``{glue:figure}`` with an ``:alt:``
option, or a code cell whose ``mystnb`` metadata gives the image an ``alt``. Sphinx
translates an image's alt text like any other message, but ``nox -s catalogs`` extracts
the messages with the lessons not run, and an output that does not exist has no alt
text to extract: the Russian edition kept the English ones. In a gettext build this
extension adds each alt text of a page's source to the page as an image without a
picture, so that the catalog gets the message; the HTML builds are left alone.
"""

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

# ":alt: text" (a directive's option) or "alt: "text"" (a cell's mystnb metadata).
_ALT = re.compile(r'^:alt: *(?P<option>.+?) *$|\balt: *"(?P<metadata>[^"]+)"', re.MULTILINE)


def alt_texts(source: str) -> list[str]:
    """The alt texts that a page's MyST ``source`` gives its figures, in page order."""
    return [m.group("option") or m.group("metadata") for m in _ALT.finditer(source)]


def add_alt_texts_to_catalog(app: Sphinx, doctree: nodes.document) -> None:
    """In a gettext build: give the page an image node for each alt text of its source,
    which the gettext builder extracts as a message."""
    if app.builder.name != "gettext" or not doctree.get("source", "").endswith(".md"):
        return
    with open(doctree["source"], encoding="utf-8") as source:
        texts = alt_texts(source.read())
    for text in texts:
        image = nodes.image(uri="", alt=text)
        image.source, image.line = doctree["source"], 1
        doctree += image


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the handler, after Sphinx's own collectors have looked at the images (an
    image without a picture is for the catalog only)."""
    app.connect("doctree-read", add_alt_texts_to_catalog, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

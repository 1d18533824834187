"""The pages' plans in the edition's language.

A page sketches its kernel before showing it, in pseudocode written as a ``text`` code
block (``for each row, one program each, in parallel: ...``). Sphinx translates no
code block, so the Russian pages showed these plans in English. This extension marks
every ``text`` block of a gallery page translatable, before Sphinx's translation step
reads the page: the catalogs get each plan as a message, and a page shows its
translation. Code in a programming language stays as written.
"""

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform

# The language of the blocks that are prose in a code font.
PLAN_LANGUAGE = "text"


class TranslatablePlans(SphinxTransform):
    """Mark each ``text`` code block translatable."""

    # Before Sphinx's Locale transform (20), as its ExtraTranslatableNodes (10) is.
    default_priority = 10

    def apply(self, **kwargs: Any) -> None:
        # Only in reStructuredText pages (the gallery's): Sphinx reads a translated block
        # back as "::" and the text indented under it, which MyST does not take for a
        # code block, and the block vanished from the Russian contributing guide.
        if not self.document.get("source", "").endswith(".rst"):
            return
        for block in self.document.findall(nodes.literal_block):
            if block.get("language") == PLAN_LANGUAGE:
                block["translatable"] = True


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the transform."""
    app.add_transform(TranslatablePlans)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Plain text to reStructuredText: `backticks` become inline code, everything else is literal.

Used for text that comes from data rather than from a page (quiz banks, figure captions),
so that a stray ``*`` or ``_`` in it shows as itself instead of turning into markup.
"""

import re


def escape(text: str) -> str:
    """Escape every character that reStructuredText could read as inline markup."""
    # A backslash makes the following character literal.
    return re.sub(r"([\\`*_|\[\]<>:])", r"\\\1", text)


def to_rst_inline(text: str) -> str:
    """Convert ``text`` to inline reStructuredText; `spans` in backticks become code."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick is just a character
        return escape(text)
    pieces = []
    for index, part in enumerate(parts):
        if index % 2 and part.strip():
            # An escaped space lets the literal touch a neighbouring character (as in
            # `x`s); next to a real space it would swallow that space.
            before = parts[index - 1]
            after = parts[index + 1]
            opening = "\\ " if before and not before[-1].isspace() else ""
            closing = "\\ " if after and not after[0].isspace() else ""
            pieces.append(f"{opening}``{part}``{closing}")
        else:
            pieces.append(escape(part))
    return " ".join("".join(pieces).split())

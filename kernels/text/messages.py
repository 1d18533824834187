"""What the course's code prints, in the reader's language: a small gettext-style catalog.

The code prints English. A build of another edition of the site sets
``$NINJA_GAP_LANGUAGE`` (the Sphinx extension ``editions`` sets it from the build's
``language``, for the gallery scripts it runs and the lessons' Jupyter kernels), and the
phrases marked ``_("...")`` are then looked up in ``kernels/text/locales/<language>.po``. A
phrase with no translation, or a fuzzy one, prints in English; a test checks that every
marked phrase has one.

A phrase keeps its variable parts as named fields, filled in after the lookup
(``_("{goal}: met at every size in the table.").format(goal=...)``), so that a
translation can put them where its grammar needs them.
"""

import ast
import functools
import os
import re
from pathlib import Path

from ..triton_helpers.runtime import describe_device

LANGUAGE_VARIABLE = "NINJA_GAP_LANGUAGE"
LOCALES = Path(__file__).resolve().parent / "locales"
ENGLISH = "en"
# Between a number's thousands, the languages that do not use a comma there put a
# no-break space, so that the number never breaks over two lines.
_THOUSANDS = {ENGLISH: ",", "ru": "\u00a0"}
_DECIMAL = {ENGLISH: ".", "ru": ","}
_ENTRY = re.compile(r'^(msgid|msgstr) (".*")$')


def language() -> str:
    """The language of what the code prints: ``$NINJA_GAP_LANGUAGE``, or English."""
    return os.environ.get(LANGUAGE_VARIABLE) or ENGLISH


def read_po(path: Path) -> dict[str, str]:
    """The translations of a ``.po`` file (entries separated by blank lines, as every
    gettext tool writes them): its msgids, each mapped to its msgstr, leaving out the
    header, the empty translations and the ones marked fuzzy."""
    entries: dict[str, str] = {}
    for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
        fields: dict[str, str] = {}
        current = ""
        fuzzy = False
        for line in block.splitlines():
            line = line.strip()
            entry = _ENTRY.match(line)
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            elif entry:
                current = entry.group(1)
                fields[current] = ast.literal_eval(entry.group(2))
            elif line.startswith('"') and current:
                fields[current] += ast.literal_eval(line)
        if fields.get("msgid") and fields.get("msgstr") and not fuzzy:
            entries[fields["msgid"]] = fields["msgstr"]
    return entries


@functools.cache
def catalog(language: str) -> dict[str, str]:
    """The translations into ``language`` (none for English, or for a language with no
    catalog: its phrases print in English)."""
    path = LOCALES / f"{language}.po"
    return read_po(path) if language != ENGLISH and path.exists() else {}


def _(message: str) -> str:
    """``message`` in the language of this run, or as written if it has no translation."""
    return catalog(language()).get(message, message)


def translated(text: str) -> str:
    """``text``, made elsewhere than a ``_()`` call (an exercise's marked text, why a
    record's provider has no rate, the device's description), in the language of this
    run where the catalog has it, else as it is."""
    return catalog(language()).get(text, text)


def kernels_run_on() -> str:
    """The line each page prints before its kernels run: where they run (a GPU's name, or
    the CPU through Triton's interpreter), in the language of this run."""
    return _("Kernels run on {device}.").format(device=translated(describe_device()))


def number(english: str) -> str:
    """A number formatted the English way (``4,096``, ``90.5%``, ``1.02x``) written the
    way the language of this run writes numbers (in Russian ``4 096``, ``90,5%``)."""
    lang = language()
    thousands, decimal = _THOUSANDS.get(lang, ","), _DECIMAL.get(lang, ".")
    swap = {",": thousands, ".": decimal}
    return re.sub(r"(?<=\d)[,.](?=\d)", lambda match: swap[match.group()], english)


def axis_name(x_name: str) -> str:
    """A record's ``x_name`` as an axis label or a table's heading shows it, in the
    language of this run: the names that are words are translated, symbols (``N``,
    ``M = N = K``) stay as they are."""
    words = {
        "sequence length": _("sequence length"),
        "rows": _("rows"),
        "launcher": _("launcher"),
    }
    return words.get(x_name, x_name)


def series_name(name: str) -> str:
    """A record's series name as a legend or a table shows it, in the language of this
    run: the products' names (Triton, PyTorch, Liger, ...) stay, the words of "bare
    launch", "Triton, no copy", "CUDA graph", the loops lesson's "plain loop" and
    "prefetch by hand", the attention's "naive" and its ablation's series are
    translated."""
    translated = {
        "bare launch": _("bare launch"),
        "Triton, no copy": _("Triton, no copy"),
        "CUDA graph": _("CUDA graph"),
        "plain loop": _("plain loop"),
        "prefetch by hand": _("prefetch by hand"),
        "naive": _("naive"),
        "rebuilt, nothing taken out": _("rebuilt, nothing taken out"),
        "no block skipping": _("no block skipping"),
        "a mask on every block": _("a mask on every block"),
        "shortest blocks first": _("shortest blocks first"),
        "one pipeline stage": _("one pipeline stage"),
        "64 x 64 tiles, 4 warps": _("64 x 64 tiles, 4 warps"),
    }
    return translated.get(name, name)

"""Downloads that stand on their own: the gallery's ``.py`` and ``.ipynb`` files as a
reader gets them, with the kernel code the page shows and the quiz's questions written
out, the course imported as an installed course names it (``ninja_gap.kernels``), and
figures that a script run from a terminal saves.

sphinx-gallery offers each example's own text for download, so a download would hold
``.. literalinclude:: /kernels/...`` where the page shows the kernel, and
``.. quiz:: name`` where it shows the quiz. Once the site is written, this module
rewrites the copies under ``_downloads/``: the sources and the pages stay as they are.
"""

import io
import json
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.directives.code import LiteralIncludeReader

from quiz.bank import load_bank
from quiz.directive import LETTERS, bank_path


@dataclass(frozen=True)
class Sources:
    """Where a build's sources are, for what a download writes out: ``srcdir`` is what an
    absolute ``literalinclude`` path starts from, ``bank_dir`` (under it) the folder of
    the quiz banks, as the directives themselves read them."""

    srcdir: Path
    bank_dir: str
    config: Config

    @classmethod
    def of(cls, app: Sphinx) -> "Sources":
        """The sources of the build that ``app`` runs."""
        return cls(Path(app.srcdir), app.config.quiz_bank_dir, app.config)


# A directive in reStructuredText, with the indentation it sits at and its option lines.
_DIRECTIVE = re.compile(
    r"^(?P<indent>[ ]*)\.\. (?P<name>literalinclude|quiz):: *(?P<argument>\S+)[ ]*\n"
    r"(?P<options>(?:(?P=indent)[ ]+:[\w-]+:.*\n)*)",
    re.MULTILINE,
)
_COURSE_IMPORT = re.compile(r"^([ ]*)from ((?:kernels|quiz)(?:\.\w+)*[ ]+import)", re.MULTILINE)
_DOCSTRING = re.compile(r'\A"""(.*?)"""', re.DOTALL)
_BARE_NAME = re.compile(r"[A-Za-z_]\w*")
_OPTION = re.compile(r"^[ ]*:([\w-]+):[ ]*(.*)$", re.MULTILINE)

# Appended to a downloaded script: run from a terminal, it saves what it drew.
SAVE_FIGURES = """# %%
# Run as a script, this example saves each figure it drew next to itself, and shows
# them where there is a screen.

from pathlib import Path

import matplotlib.pyplot as plt

for number in plt.get_fignums():
    saved = Path(__file__).with_name(f"{Path(__file__).stem}_{number}.png")
    plt.figure(number).savefig(saved)
    print(f"saved {saved}")
plt.show()
"""


def included_code(path: str, options: dict[str, str], sources: Sources) -> str:
    """What ``.. literalinclude:: path`` with ``options`` shows, read as Sphinx reads it."""
    full = sources.srcdir / path.lstrip("/")
    code, _ = LiteralIncludeReader(str(full), options, sources.config).read()
    return code


def quiz_text(name: str, sources: Sources) -> str:
    """A bank's questions and options as reStructuredText, in the page's order; the
    answers open on the page."""
    bank = load_bank(bank_path(sources.srcdir, sources.bank_dir, name))
    lines = ["The quiz (open the answers on this example's page):", ""]
    for number, question in enumerate(bank.questions, 1):
        lines += [f"{number}. {' '.join(question.question.split())}", ""]
        options = question.shuffled_options()  # the page's order and letters
        for letter, option in zip(LETTERS[: len(options)], options, strict=True):
            lines.append(f"   {letter}. {' '.join(option.text.split())}")
        lines.append("")
    return "\n".join(lines)


def expand_directives(rst: str, sources: Sources, *, fenced: bool) -> str:
    """``rst`` with each literalinclude replaced by the code it includes (a code block,
    or a Markdown fence if ``fenced``) and each quiz by its questions."""

    def replace(match: re.Match[str]) -> str:
        indent = match.group("indent")
        options = dict(_OPTION.findall(match.group("options")))
        if match.group("name") == "quiz":
            body = quiz_text(match.group("argument"), sources)
        else:
            code = included_code(match.group("argument"), options, sources).rstrip("\n")
            if fenced:
                body = f"```python\n{code}\n```"
            else:
                body = ".. code-block:: python\n\n" + _indented(code, "   ")
        return _indented(body, indent) + "\n"

    return _DIRECTIVE.sub(replace, rst)


def _indented(text: str, indent: str) -> str:
    return "\n".join(indent + line if line else line for line in text.split("\n"))


def installed_imports(code: str) -> str:
    """``code`` with the course's imports as an installed course names them: in a clone
    the folder ``kernels`` imports as ``kernels``, installed it is ``ninja_gap.kernels``."""
    return _COURSE_IMPORT.sub(r"\1from ninja_gap.\2", code)


def whole_script(source: str, sources: Sources) -> str:
    """A gallery script as a reader downloads it: directives in its prose expanded, what
    the page displays printed, figures saved at the end."""
    out, block = [], []
    docstring = _DOCSTRING.match(source)
    if docstring:
        # The docstring is prose too; included code must not end it early.
        body = expand_directives(docstring.group(1), sources, fenced=False)
        out.append('"""' + body.replace('"""', '\\"\\"\\"') + '"""')
        source = source[docstring.end() :].removeprefix("\n")

    def flush() -> None:
        # A run of comment lines is prose: expand it without the "# " and put it back.
        if block:
            text = "\n".join(line[2:] if line.startswith("# ") else line[1:] for line in block)
            expanded = expand_directives(text + "\n", sources, fenced=False)
            out.extend(f"# {line}".rstrip() for line in expanded.rstrip("\n").split("\n"))
            block.clear()

    for line in source.split("\n"):
        if line.startswith("#") and not line.startswith("# %%"):
            block.append(line)
        else:
            flush()
            # A bare name on a line of its own is what the page displays (a result
            # table); a script run from a terminal prints it instead.
            line = f"print({line})" if _BARE_NAME.fullmatch(line) else line
            out.append(installed_imports(line))
    flush()
    script = "\n".join(out).rstrip("\n") + "\n"
    # A file rewritten by an earlier build keeps its one copy.
    return script if script.endswith(SAVE_FIGURES) else f"{script}\n\n{SAVE_FIGURES}"


def whole_notebook(source: str, sources: Sources) -> str:
    """A gallery notebook as a reader downloads it: directives in its Markdown cells
    expanded."""
    notebook = json.loads(source)
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            text = expand_directives("".join(cell["source"]), sources, fenced=True)
            cell["source"] = text.splitlines(keepends=True)
        elif cell["cell_type"] == "code":
            cell["source"] = installed_imports("".join(cell["source"])).splitlines(keepends=True)
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def _rewrite_zip(data: bytes, rewrite: Callable[[str, str], str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as old, zipfile.ZipFile(out, "w") as new:
        for item in old.infolist():
            content = old.read(item)
            if item.filename.endswith((".py", ".ipynb")):
                content = rewrite(item.filename, content.decode("utf-8")).encode("utf-8")
            new.writestr(item, content)
    return out.getvalue()


def rewrite_download(path: Path, sources: Sources) -> None:
    """Make one downloadable file of the gallery whole, in place."""

    def rewrite(name: str, text: str) -> str:
        whole = whole_notebook if name.endswith(".ipynb") else whole_script
        return whole(text, sources)

    if path.suffix == ".zip":
        path.write_bytes(_rewrite_zip(path.read_bytes(), rewrite))
    else:
        path.write_text(rewrite(path.name, path.read_text(encoding="utf-8")), encoding="utf-8")


def gallery_downloads(outdir: Path) -> list[Path]:
    """The gallery's downloadable files in a built site."""
    return sorted(
        path
        for suffix in ("py", "ipynb", "zip")
        for path in (outdir / "_downloads").glob(f"*/plot_*.{suffix}")
    )


def make_downloads_whole(app: Sphinx, exception: Exception | None) -> None:
    """After a successful HTML build, rewrite each gallery download (see the module)."""
    if exception is not None or app.builder.format != "html":
        return
    for path in gallery_downloads(Path(app.outdir)):
        rewrite_download(path, Sources.of(app))


def setup(app: Sphinx) -> dict[str, Any]:
    """Rewrite the gallery's downloads once the site is written."""
    app.connect("build-finished", make_downloads_whole)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Downloads that stand on their own: the gallery's ``.py`` and ``.ipynb`` files as a
reader gets them, with the kernel code the page shows and the quiz's questions written
out, the course imported as an installed course names it (``ninja_gap.kernels``), and
figures that a script run from a terminal saves.

sphinx-gallery offers each example's own text for download, so a download would hold
``.. literalinclude:: /kernels/...`` where the page shows the kernel, and
``.. quiz:: name`` where it shows the quiz. Once the site is written, this module
rewrites the copies under ``_downloads/``: the sources and the pages stay as they are.

A kernel that a page shows (a ``@triton.jit`` function) becomes live code in the
download: defined there, from its module's source at build time, with what it needs
imported from the installed course, and then set on its module, so that the course's
launchers and the harness, imported from the package, call it. Editing it in the
download changes what runs, and the download says so only where that is true: for a
kernel that the module's own code calls when it runs (or the script does), directly or
through the ``triton.autotune`` wrapper the module made when imported (the download
hands its version to the wrapper). A kernel the launchers do not call (a first version
that the page improves on) is defined for the reader to read and launch, and its note
says that nothing else runs it. Launchers and other code stay text.
"""

import ast
import builtins
import io
import json
import re
import symtable
import zipfile
from collections.abc import Callable, Collection
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

# Where a page shows a kernel, its download says where the kernel's code went.
LIVE_NOTE = (
    "(``{name}``, from ``{path}``, is defined in the code below: edit it there, and "
    "everything after it runs your version.)"
)
# A shown kernel that nothing in the course calls at run time: the note says so.
OWN_NOTE = (
    "(``{name}``, from ``{path}``, is defined in the code below for you to read and launch "
    "yourself: the course's launchers do not call it, so an edit changes only your own "
    "launches.)"
)
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


def expand_directives(
    rst: str,
    sources: Sources,
    *,
    fenced: bool,
    live: Collection[str] = (),
    run: Collection[str] = (),
) -> str:
    """``rst`` with each literalinclude replaced by the code it includes (a code block,
    or a Markdown fence if ``fenced``) and each quiz by its questions; an included
    kernel named in ``live``, which the download defines as code, by a note saying so,
    and whether an edit changes what the course runs (``run``: the kernels it calls)."""

    def replace(match: re.Match[str]) -> str:
        indent = match.group("indent")
        options = dict(_OPTION.findall(match.group("options")))
        if match.group("name") == "quiz":
            body = quiz_text(match.group("argument"), sources)
        elif not indent and options.get("pyobject") in live:
            note = LIVE_NOTE if options["pyobject"] in run else OWN_NOTE
            body = note.format(name=options["pyobject"], path=match.group("argument"))
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


@dataclass(frozen=True)
class LiveKernel:
    """A ``@triton.jit`` function that a page shows (``literalinclude`` of ``:pyobject:``)
    from ``kernels/<module>.py``: a download defines it as code, not as text."""

    module: str
    name: str
    code: str


def _module_tree(module: str, sources: Sources) -> ast.Module:
    return ast.parse((sources.srcdir / "kernels" / f"{module}.py").read_text("utf-8"))


def _jit_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    # The module's top-level functions that Triton compiles (@triton.jit), by name.
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(ast.unparse(d).startswith("triton.jit") for d in node.decorator_list)
    }


def _loaded_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def autotuned(module: str, sources: Sources) -> dict[str, list[str]]:
    """For each kernel of ``kernels/<module>.py`` that the module wraps when imported
    (``tuned = triton.autotune(...)(kernel)``), the names of its wrappers. A wrapper
    holds the kernel it was given (``tuned.fn``): a download hands its own version to
    the wrapper, whose configurations stay."""
    tree = _module_tree(module, sources)
    return _wrappers(tree, _jit_functions(tree))


def _wrappers(tree: ast.Module, jit: Collection[str]) -> dict[str, list[str]]:
    wrappers: dict[str, list[str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        wrapped = (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Call)  # a decorator made, then applied
            and ast.unparse(value.func.func) == "triton.autotune"
            and len(value.args) == 1
            and isinstance(value.args[0], ast.Name)
            and value.args[0].id in jit
        )
        if wrapped:
            wrappers.setdefault(value.args[0].id, []).append(target.id)
    return wrappers


def called_kernels(module: str, sources: Sources) -> set[str]:
    """The ``@triton.jit`` functions of ``kernels/<module>.py`` that the module's own
    code reaches when it runs: named in the body of a function Triton does not compile
    (a launcher looks its kernel up in the module at each call), directly or through
    the kernel's ``triton.autotune`` wrapper (:func:`autotuned`), or in the body of a
    kernel so reached (Triton looks up what a kernel calls when it compiles). A kernel
    named only at import time (a table of kernels) or not at all is not among them:
    setting a new version on the module changes nothing that runs."""
    tree = _module_tree(module, sources)
    jit = _jit_functions(tree)
    through = {w: kernel for kernel, ws in _wrappers(tree, jit).items() for w in ws}
    todo: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name not in jit:
            for statement in node.body:  # the body runs at call time, decorators at import
                named = _loaded_names(statement)
                todo |= (named & jit.keys()) | {through[n] for n in named & through.keys()}
    called: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in called:
            called.add(name)
            todo |= {n for s in jit[name].body for n in _loaded_names(s)} & jit.keys()
    return called


def script_names(code: str) -> set[str]:
    """The kernels that a script's or notebook's own code may run: the global names it
    reads (the download's own definitions), and the attributes it launches
    (``module.kernel[grid]``) or calls; not one it only inspects
    (``module.kernel.arg_names``)."""
    tree = ast.parse(code)
    run = [n.value for n in ast.walk(tree) if isinstance(n, ast.Subscript)]
    run += [n.func for n in ast.walk(tree) if isinstance(n, ast.Call)]
    return _loaded_names(tree) | {n.attr for n in run if isinstance(n, ast.Attribute)}


def live_kernels(rst: str, sources: Sources) -> list[LiveKernel]:
    """The kernels that ``rst`` (a run of a script's prose) includes at its top level,
    not inside a dropdown or another directive: those a download defines as code."""
    found = []
    for match in _DIRECTIVE.finditer(rst):
        options = dict(_OPTION.findall(match.group("options")))
        path = match.group("argument").lstrip("/")
        if match.group("indent") or match.group("name") != "literalinclude":
            continue
        module = re.fullmatch(r"kernels/(\w+)\.py", path)
        name = options.get("pyobject", "")
        if not module or set(options) != {"pyobject"}:
            continue
        if name in _jit_functions(_module_tree(module.group(1), sources)):
            code = included_code(match.group("argument"), options, sources).rstrip("\n")
            found.append(LiveKernel(module.group(1), name, code))
    return found


def _module_bindings(module: str, sources: Sources) -> dict[str, str]:
    """For each name that ``kernels/<module>.py`` binds at its top level, the import
    that gives a download the same object."""
    tree = ast.parse((sources.srcdir / "kernels" / f"{module}.py").read_text("utf-8"))
    bindings: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                shown = f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
                bindings[alias.asname or alias.name.split(".")[0]] = shown
            continue
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:  # a relative import: a module of the course
                source = f"ninja_gap.kernels.{source}".rstrip(".")
            for alias in node.names:
                shown = f"from {source} import {alias.name}"
                bindings[alias.asname or alias.name] = shown + (
                    f" as {alias.asname}" if alias.asname else ""
                )
            continue
        names: list[str] = []
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        for name in names:
            bindings.setdefault(name, f"from ninja_gap.kernels.{module} import {name}")
    return bindings


def _free_names(code: str) -> list[str]:
    # The global names that a function's code reads, its decorator's included.
    top = symtable.symtable(code, "<kernel>", "exec")
    function = top.get_children()[0]
    names = {symbol.get_name() for symbol in top.get_symbols() if symbol.is_referenced()}
    names |= set(function.get_globals())
    names |= {name for child in function.get_children() for name in child.get_globals()}
    return sorted(names - set(dir(builtins)) - {function.get_name()})


def kernels_run(kernels: list[LiveKernel], launched: Collection[str], sources: Sources) -> set[str]:
    """Of the kernels a download defines, those that run when it runs, so that an edit
    changes what the page's launchers and checks compute: the kernels the course's own
    code calls at run time (:func:`called_kernels`), those the download's code names
    itself (``launched``, see :func:`script_names`), and what a kernel so run calls (a
    kernel defined in the download looks up what it calls among the download's names)."""
    shown = {kernel.name: kernel for kernel in kernels}
    called = {module: called_kernels(module, sources) for module in {k.module for k in kernels}}
    run = {k.name for k in kernels if k.name in launched or k.name in called[k.module]}
    todo = list(run)
    while todo:
        for name in _free_names(shown[todo.pop()].code):
            if name in shown and name not in run:
                run.add(name)
                todo.append(name)
    return run


def live_code(
    kernels: list[LiveKernel], defined: set[str], sources: Sources, run: Collection[str]
) -> str:
    """The code that defines ``kernels`` in a download, with what they need imported
    (names in ``defined``, kernels the download defined before, are its own), then
    hands each that runs (``run``, see :func:`kernels_run`) to its module, so that the
    course's launchers call it; the others are the reader's to launch, and it says so."""
    imports: list[str] = []
    for kernel in kernels:
        bindings = _module_bindings(kernel.module, sources)
        for name in _free_names(kernel.code):
            if name not in defined and name in bindings and bindings[name] not in imports:
                imports.append(bindings[name])
        imports.append(f"from ninja_gap.kernels import {kernel.module}")
        defined.add(kernel.name)
    lines = list(dict.fromkeys(imports))
    for kernel in kernels:
        lines += ["", "", kernel.code]
    lines += ["", ""]
    called = [kernel for kernel in kernels if kernel.name in run]
    own = [kernel.name for kernel in kernels if kernel.name not in run]
    if own:
        lines.append("# Yours to launch: the course's launchers do not call these, so an edit")
        lines.append(f"# changes only your own launches: {', '.join(own)}.")
    if called:
        lines.append("# From here on the course's own code runs the definitions above: edit one,")
        lines.append("# and the cells below run your version.")
        lines += [f"{kernel.module}.{kernel.name} = {kernel.name}" for kernel in called]
        tuners = {module: autotuned(module, sources) for module in {k.module for k in called}}
        wrapped = [
            (kernel, wrapper)
            for kernel in called
            for wrapper in tuners[kernel.module].get(kernel.name, [])
        ]
        if wrapped:
            lines.append(
                "# The launchers run some through triton.autotune wrappers, made on import:"
            )
            lines.append("# each runs your version now, with its configurations, tuned again.")
        for kernel, wrapper in wrapped:
            lines.append(f"{kernel.module}.{wrapper}.fn = {kernel.name}")
            lines.append(f"{kernel.module}.{wrapper}.cache.clear()")
    return "\n".join(lines) + "\n"


def _script_parts(source: str) -> list[tuple[bool, str]]:
    # A script after its docstring, as (is prose, text): each line of code as it is,
    # and each run of comment lines (prose; not a "# %%" cell marker) as one text
    # without the "# ".
    parts: list[tuple[bool, str]] = []
    block: list[str] = []
    for line in [*source.split("\n"), None]:
        if line is not None and line.startswith("#") and not line.startswith("# %%"):
            block.append(line[2:] if line.startswith("# ") else line[1:])
            continue
        if block:
            parts.append((True, "\n".join(block) + "\n"))
            block = []
        if line is not None:
            parts.append((False, line))
    return parts


def whole_script(source: str, sources: Sources) -> str:
    """A gallery script as a reader downloads it: directives in its prose expanded, the
    kernels it shows defined as code after the prose (handed to their modules, so that
    an edit changes what runs), what the page displays printed, figures saved at the
    end."""
    out = []
    docstring = _DOCSTRING.match(source)
    if docstring:
        # The docstring is prose too; included code must not end it early.
        body = expand_directives(docstring.group(1), sources, fenced=False)
        out.append('"""' + body.replace('"""', '\\"\\"\\"') + '"""')
        source = source[docstring.end() :].removeprefix("\n")

    # Each run of prose with the kernels it shows, found once for both passes below.
    parts = [
        (text, live_kernels(text, sources) if prose else None)
        for prose, text in _script_parts(source)
    ]
    shown = [kernel for _, kernels in parts for kernel in kernels or ()]
    run = kernels_run(shown, script_names(source), sources)
    defined: set[str] = set()
    for text, kernels in parts:
        if kernels is None:
            # A bare name on a line of its own is what the page displays (a result
            # table); a script run from a terminal prints it instead.
            line = f"print({text})" if _BARE_NAME.fullmatch(text) else text
            out.append(installed_imports(line))
            continue
        # A run of comment lines is prose: expanded, and put back as comments. The
        # kernels it shows follow it as code.
        live = {kernel.name for kernel in kernels}
        expanded = expand_directives(text, sources, fenced=False, live=live, run=run)
        out.extend(f"# {line}".rstrip() for line in expanded.rstrip("\n").split("\n"))
        if kernels:
            out.extend(["", live_code(kernels, defined, sources, run).rstrip("\n"), ""])
    script = "\n".join(out).rstrip("\n") + "\n"
    # A file rewritten by an earlier build keeps its one copy.
    return script if script.endswith(SAVE_FIGURES) else f"{script}\n\n{SAVE_FIGURES}"


def whole_notebook(source: str, sources: Sources) -> str:
    """A gallery notebook as a reader downloads it: directives in its Markdown cells
    expanded, and the kernels they show defined in a code cell after them."""
    notebook = json.loads(source)
    cells, defined = [], set()
    # The kernels each Markdown cell shows, found once for both passes below.
    shows = {
        index: live_kernels("".join(cell["source"]), sources)
        for index, cell in enumerate(notebook["cells"])
        if cell["cell_type"] == "markdown"
    }
    own = "\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
    run = kernels_run(
        [k for kernels in shows.values() for k in kernels], script_names(own), sources
    )
    for index, cell in enumerate(notebook["cells"]):
        cells.append(cell)
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            kernels = shows[index]
            live = {kernel.name for kernel in kernels}
            text = expand_directives(text, sources, fenced=True, live=live, run=run)
            cell["source"] = text.splitlines(keepends=True)
            if kernels:  # the kernels it shows, as a code cell of their own after it
                code = live_code(kernels, defined, sources, run).rstrip("\n")
                cells.append({"cell_type": "code", "execution_count": None, "metadata": {},
                              "outputs": [], "source": code.splitlines(keepends=True)})  # fmt: skip
        elif cell["cell_type"] == "code":
            cell["source"] = installed_imports("".join(cell["source"])).splitlines(keepends=True)
    notebook["cells"] = cells
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

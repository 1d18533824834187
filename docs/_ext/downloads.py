"""Downloads that stand on their own: the gallery's ``.py`` and ``.ipynb`` files as a
reader gets them, with the kernel code the page shows and the quiz's questions written
out, the course imported as an installed course names it (``ninja_gap.kernels``), and
figures that a script run from a terminal saves.

sphinx-gallery offers each example's own text for download, so a download would hold
``.. literalinclude:: /kernels/...`` where the page shows the kernel, and
``.. quiz:: name`` where it shows the quiz. Once the site is written, this module
rewrites the copies under ``_downloads/``: the sources and the pages stay as they are.

A kernel that a page shows (a ``@triton.jit`` function), and a launcher or another
function or class it shows whole, becomes live code in the download: defined there, from
its module's source at build time, with what it needs imported from the installed course,
and then handed to its module (:func:`kernels.harness.swap.swap_in`), so that the course's
launchers, benchmark specs and harness, imported from the package, call it. Editing it in
the download changes what runs, and the download says so only where that is true: for an
object that the module's own code reaches by name when it runs (or the script does),
directly, through a benchmark spec or through the ``triton.autotune`` wrapper the module
made when imported (``swap_in`` hands its version to those). One that nothing calls (a
first version that the page improves on) is defined for the reader to read and run, and
its note says that nothing else runs it. Code shown in part (lines, not a whole object)
stays text.
"""

import ast
import builtins
import io
import json
import re
import symtable
import zipfile
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.directives.code import LiteralIncludeReader
from sphinx.util import logging

from quiz.bank import QuizBankError, load_bank
from quiz.directive import LETTERS, bank_path

logger = logging.getLogger(__name__)


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

# Where a page shows a kernel or launcher, its download says where its code went.
LIVE_NOTE = (
    "(``{name}``, from ``{path}``, is defined in the code below: edit it there, and "
    "everything after it runs your version.)"
)
# A shown object that nothing in the course calls at run time: the note says so.
OWN_NOTE = (
    "(``{name}``, from ``{path}``, is defined in the code below for you to read and run "
    "yourself: the course's own code does not call it, so an edit changes only what you "
    "run yourself.)"
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
    object named in ``live``, which the download defines as code, by a note saying so,
    and whether an edit changes what the course runs (``run``: what it calls)."""

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
class LiveObject:
    """A function, class or ``@triton.jit`` kernel that a page shows (``literalinclude``
    of ``:pyobject:``) from ``kernels/<module>.py``: a download defines it as code, not as
    text. ``jit`` says whether it is a kernel: a kernel reads its global names from the
    download (Triton looks them up when it compiles), anything else from its module once
    handed over (:func:`kernels.harness.swap.swap_in`)."""

    module: str
    name: str
    code: str
    jit: bool


# What a download may define for the reader to edit: a kernel, a plain function or one
# cached with functools, a class. Anything else the module makes of a function when
# imported (a Gluon kernel, a registered operator) stays text.
_JIT = ("triton.jit",)
_PLAIN = ("functools.cache", "functools.lru_cache", "staticmethod", "classmethod")


def _module_tree(module: str, sources: Sources) -> ast.Module:
    # ``module`` is dotted under kernels, its room first (``operations.vector_add``).
    path = sources.srcdir / "kernels" / f"{module.replace('.', '/')}.py"
    return ast.parse(path.read_text("utf-8"))


def _short(module: str) -> str:
    """A module's own name, without its room: ``operations.vector_add`` is ``vector_add``."""
    return module.rpartition(".")[2]


def _decorated_with(node: ast.AST, prefixes: tuple[str, ...]) -> bool:
    return any(ast.unparse(d).startswith(prefixes) for d in getattr(node, "decorator_list", ()))


def _jit_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    # The module's top-level functions that Triton compiles (@triton.jit), by name.
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and _decorated_with(node, _JIT)
    }


def _definitions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.ClassDef]:
    # The module's top-level functions, classes and kernels that a download may define.
    found: dict[str, ast.FunctionDef | ast.ClassDef] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.ClassDef):
            continue
        decorators = [ast.unparse(d) for d in node.decorator_list]
        if all(d.startswith(_PLAIN) for d in decorators) or _decorated_with(node, _JIT):
            found[node.name] = node
    return found


def _loaded_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _wrapper_made(value: ast.AST) -> bool:
    # ``triton.autotune(...)(kernel)`` or ``triton.heuristics(...)(kernel)``.
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Call)  # a decorator made, then applied
        and ast.unparse(value.func.func) in ("triton.autotune", "triton.heuristics")
        and len(value.args) == 1
    )


def _handed_over(node: ast.stmt) -> bool:
    # A top-level statement whose objects swap_in rewires: a benchmark spec (made, or
    # made from another), a Triton wrapper.
    value = getattr(node, "value", None)
    if not isinstance(node, ast.Assign | ast.AnnAssign) or not isinstance(value, ast.Call):
        return False
    made = ast.unparse(value.func)
    return made in ("BenchmarkSpec", "dataclasses.replace") or _wrapper_made(value)


def called_objects(module: str, sources: Sources) -> set[str]:
    """The functions, classes and ``@triton.jit`` kernels of ``kernels/<module>.py`` that
    the module's own code reaches by name when it runs, so that a version handed to the
    module (:func:`kernels.harness.swap.swap_in`) runs in its place: named in the body of a
    function or class that Triton does not compile (such code looks its names up in the
    module at each call), in a benchmark spec or a ``triton.autotune`` wrapper made at
    import (``swap_in`` hands them the new version), or in the body of a kernel so
    reached (Triton looks up what a kernel calls when it compiles). One named only at
    import otherwise (a table of kernels) or not at all is not among them: handing a new
    version to the module changes nothing that runs."""
    tree = _module_tree(module, sources)
    jit = _jit_functions(tree)
    defined = _definitions(tree).keys()
    todo: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name not in jit:
            for statement in node.body:  # the body runs at call time, decorators at import
                todo |= _loaded_names(statement) & defined
        elif _handed_over(node):
            todo |= _loaded_names(node) & defined
    called: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in called:
            called.add(name)
            if name in jit:
                todo |= {n for s in jit[name].body for n in _loaded_names(s)} & jit.keys()
    return called


def script_names(code: str) -> set[str]:
    """The kernels and functions that a script's or notebook's own code may run: the
    global names it reads (the download's own definitions), and the attributes it
    launches (``module.kernel[grid]``) or calls; not one it only inspects
    (``module.kernel.arg_names``)."""
    tree = ast.parse(code)
    run = [n.value for n in ast.walk(tree) if isinstance(n, ast.Subscript)]
    run += [n.func for n in ast.walk(tree) if isinstance(n, ast.Call)]
    return _loaded_names(tree) | {n.attr for n in run if isinstance(n, ast.Attribute)}


def live_objects(rst: str, sources: Sources) -> list[LiveObject]:
    """The functions, classes and kernels that ``rst`` (a run of a script's prose)
    includes whole at its top level, not inside a dropdown or another directive: those a
    download defines as code."""
    found = []
    for match in _DIRECTIVE.finditer(rst):
        options = dict(_OPTION.findall(match.group("options")))
        path = match.group("argument").lstrip("/")
        if match.group("indent") or match.group("name") != "literalinclude":
            continue
        module = re.fullmatch(r"kernels/((?:\w+/)*\w+)\.py", path)
        name = options.get("pyobject", "")
        if not module or set(options) != {"pyobject"}:
            continue
        dotted = module.group(1).replace("/", ".")
        definition = _definitions(_module_tree(dotted, sources)).get(name)
        if definition is not None:
            code = included_code(match.group("argument"), options, sources).rstrip("\n")
            jit = _decorated_with(definition, _JIT)
            found.append(LiveObject(dotted, name, code, jit))
    return found


def _module_bindings(module: str, sources: Sources) -> dict[str, str]:
    """For each name that ``kernels/<module>.py`` binds at its top level, the import
    that gives a download the same object."""
    tree = _module_tree(module, sources)
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
                package = ["ninja_gap", "kernels", *module.split(".")[:-1]]
                base = package[: len(package) - node.level + 1]
                source = ".".join([*base, *filter(None, [node.module])])
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
    # The global names that a function's or class's code reads: its decorators', its
    # bases', and those of every function inside it (methods, lambdas, comprehensions).
    top = symtable.symtable(code, "<shown>", "exec")
    (table,) = top.get_children()
    names = {symbol.get_name() for symbol in top.get_symbols() if symbol.is_referenced()}

    def read(scope: symtable.SymbolTable) -> None:
        if isinstance(scope, symtable.Function):
            names.update(scope.get_globals())
        else:  # a class body: what it reads and does not assign
            names.update(
                s.get_name()
                for s in scope.get_symbols()
                if s.is_referenced() and not s.is_assigned()
            )
        for child in scope.get_children():
            read(child)

    read(table)
    return sorted(names - set(dir(builtins)) - {table.get_name()})


def objects_run(objects: list[LiveObject], launched: Collection[str], sources: Sources) -> set[str]:
    """Of the objects a download defines, those that run when it runs, so that an edit
    changes what the page's launchers and checks compute: those the course's own code
    reaches by name at run time (:func:`called_objects`), those the download's code names
    itself (``launched``, see :func:`script_names`), and what a kernel so run calls (a
    kernel defined in the download looks up what it calls among the download's names)."""
    shown = {item.name: item for item in objects}
    called = {module: called_objects(module, sources) for module in {o.module for o in objects}}
    run = {o.name for o in objects if o.name in launched or o.name in called[o.module]}
    todo = [name for name in run if shown[name].jit]
    while todo:
        for name in _free_names(shown[todo.pop()].code):
            if name in shown and name not in run:
                run.add(name)
                if shown[name].jit:
                    todo.append(name)
    return run


def module_names(objects: Collection[LiveObject]) -> dict[str, str]:
    """The name a download gives each module of ``objects`` when it imports it: the
    module's own, unless the download defines or imports something of that name
    (softmax's launcher ``softmax``, layer_norm's ``column_sums`` function), then
    ``<module>_module``."""
    taken = {item.name for item in objects}
    taken |= {name for item in objects for name in _free_names(item.code)}
    return {
        item.module: f"{_short(item.module)}_module"
        if _short(item.module) in taken
        else _short(item.module)
        for item in objects
    }


# Why a download imports the course before its own kernels (a reader sees this).
FIRST_IMPORT_NOTE = "(first: without a GPU, Triton's interpreter)"


def live_code(
    objects: list[LiveObject],
    defined: set[str],
    sources: Sources,
    run: Collection[str],
    modules: Mapping[str, str] | None = None,
) -> str:
    """The code that defines ``objects`` in a download, with what they need imported
    (names in ``defined``, which the download defined before, are its own), then hands
    each that runs (``run``, see :func:`objects_run`) to its module, so that the course's
    own code runs it; the others are the reader's to run, and it says so. ``modules``
    names the modules as the download imports them (:func:`module_names`)."""
    modules = modules or {}
    here = {item.name for item in objects}  # defined in this block: not imported
    imports: list[str] = []
    if "ninja_gap" not in defined:
        # The download's first kernels: the course comes first, since importing it on a
        # machine without a GPU selects Triton's interpreter, which must be chosen
        # before the first @triton.jit runs (a script's own kernels otherwise fail there).
        imports.append(f"import ninja_gap.kernels  # noqa: F401  {FIRST_IMPORT_NOTE}")
        defined.add("ninja_gap")
    for item in objects:
        bindings = _module_bindings(item.module, sources)
        for name in _free_names(item.code):
            if name not in defined | here and name in bindings:
                imports.append(bindings[name])
        short = _short(item.module)
        alias = modules.get(item.module, short)
        room = item.module.rpartition(".")[0]
        imported = f"from ninja_gap.kernels{'.' + room if room else ''} import {short}"
        imports.append(imported + (f" as {alias}" if alias != short else ""))
    defined |= here
    called = [item for item in objects if item.name in run]
    explained = "swap_in" in defined  # an earlier block imported it and said what it does
    if called and not explained:
        imports.append("from ninja_gap.kernels.harness.swap import swap_in")
        defined.add("swap_in")
    lines = _grouped(imports)
    for item in objects:
        lines += ["", "", item.code]
    lines += ["", ""]
    own = [item.name for item in objects if item.name not in run]
    if own:
        lines.append("# Yours to run: the course's own code does not call these, so an edit")
        lines.append(f"# changes only what you run yourself: {', '.join(own)}.")
    if called and explained:
        lines.append("# The course's own code runs these from here on (swap_in, as above).")
    elif called:
        lines.append("# From here on the course's own code runs the definitions above: edit one,")
        lines.append("# and the cells below run your version. swap_in puts each in its module in")
        lines.append("# place of the course's, and wherever the module holds it (its benchmark")
        lines.append("# specs, its autotune wrappers); a function or class then reads its other")
        lines.append("# names from the module (hand over a helper you add in the same way).")
    for item in called:
        alias = modules.get(item.module, _short(item.module))
        lines.append(f"{item.name} = swap_in({alias}, {item.name})")
    return "\n".join(lines) + "\n"


def _grouped(imports: list[str]) -> list[str]:
    # Import lines as a reader writes them: plain imports first, then one line for each
    # module that names are taken from, names in order (ruff's isort style, roughly).
    plain = sorted({line for line in imports if line.startswith("import ")})
    taken: dict[str, set[str]] = {}
    for line in imports:
        if line.startswith("from "):
            source, names = line.removeprefix("from ").split(" import ", 1)
            taken.setdefault(source, set()).add(names)
    lines = plain
    for source, names in sorted(taken.items()):
        ordered = sorted(names, key=str.lower)
        line = f"from {source} import {', '.join(ordered)}"
        if len(line) > 88:  # the pages' width: one name a line, as ruff format writes it
            line = "\n".join([f"from {source} import (", *(f"    {n}," for n in ordered), ")"])
        lines.append(line)
    return lines


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
    kernels and launchers it shows defined as code after the prose (handed to their
    modules, so that an edit changes what runs), what the page displays printed,
    figures saved at the end."""
    out = []
    docstring = _DOCSTRING.match(source)
    if docstring:
        # The docstring is prose too; included code must not end it early.
        body = expand_directives(docstring.group(1), sources, fenced=False)
        out.append('"""' + body.replace('"""', '\\"\\"\\"') + '"""')
        source = source[docstring.end() :].removeprefix("\n")

    # Each run of prose with the objects it shows, found once for both passes below.
    parts = [
        (text, live_objects(text, sources) if prose else None)
        for prose, text in _script_parts(source)
    ]
    shown = [item for _, objects in parts for item in objects or ()]
    run = objects_run(shown, script_names(source), sources)
    modules = module_names(shown)
    defined: set[str] = set()
    for text, objects in parts:
        if objects is None:
            # A bare name on a line of its own is what the page displays (a result
            # table); a script run from a terminal prints it instead.
            line = f"print({text})" if _BARE_NAME.fullmatch(text) else text
            out.append(installed_imports(line))
            continue
        # A run of comment lines is prose: expanded, and put back as comments. The
        # objects it shows follow it as code.
        live = {item.name for item in objects}
        expanded = expand_directives(text, sources, fenced=False, live=live, run=run)
        out.extend(f"# {line}".rstrip() for line in expanded.rstrip("\n").split("\n"))
        if objects:
            code = live_code(objects, defined, sources, run, modules)
            out.extend(["", code.rstrip("\n"), ""])
    script = "\n".join(out).rstrip("\n") + "\n"
    # A file rewritten by an earlier build keeps its one copy.
    return script if script.endswith(SAVE_FIGURES) else f"{script}\n\n{SAVE_FIGURES}"


def whole_notebook(source: str, sources: Sources) -> str:
    """A gallery notebook as a reader downloads it: directives in its Markdown cells
    expanded, and the kernels and launchers they show defined in a code cell after
    them."""
    notebook = json.loads(source)
    cells, defined = [], set()
    # The objects each Markdown cell shows, found once for both passes below.
    shows = {
        index: live_objects("".join(cell["source"]), sources)
        for index, cell in enumerate(notebook["cells"])
        if cell["cell_type"] == "markdown"
    }
    own = "\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
    shown = [item for objects in shows.values() for item in objects]
    run = objects_run(shown, script_names(own), sources)
    modules = module_names(shown)
    for index, cell in enumerate(notebook["cells"]):
        cells.append(cell)
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            objects = shows[index]
            live = {item.name for item in objects}
            text = expand_directives(text, sources, fenced=True, live=live, run=run)
            cell["source"] = text.splitlines(keepends=True)
            if objects:  # the objects it shows, as a code cell of their own after it
                code = live_code(objects, defined, sources, run, modules).rstrip("\n")
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
    """After a successful HTML build, rewrite each gallery download (see the module).

    A quiz bank that cannot be read or is malformed (its quiz directive has reported it
    already, with -W --keep-going the build goes on to here) is a warning naming the
    download and the bank, and that download is left as it is: the build fails with a
    located message, not a traceback."""
    if exception is not None or app.builder.format != "html":
        return
    for path in gallery_downloads(Path(app.outdir)):
        try:
            rewrite_download(path, Sources.of(app))
        except QuizBankError as error:
            logger.warning("%s: cannot make the download whole: %s", path.name, error)


def setup(app: Sphinx) -> dict[str, Any]:
    """Rewrite the gallery's downloads once the site is written."""
    app.connect("build-finished", make_downloads_whole)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

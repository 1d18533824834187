"""The fingerprint of the code a benchmark runs, so that a record can tell it is stale.

A benchmark runs its kernel module, every :mod:`kernels` module that module imports
(directly or through another), and the harness's timing code (:mod:`kernels.harness.timing` and
its imports; the launch_overhead record is timed by :mod:`kernels.harness.launch_cost`, which
imports every launcher's module). Each file is hashed without its comments, docstrings
and blank lines, so that an edit of those does not count and any change to code that
runs does; the fingerprint is a hash over those files. A record keeps the hash of each
file too, so that a stale record can say which files changed.
"""

import ast
import functools
import hashlib
import io
import os
import re
import subprocess
import tokenize
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE = "kernels"
PACKAGE_DIR = Path(__file__).resolve().parent.parent
REPOSITORY = PACKAGE_DIR.parent
# The harness's timing code, part of every benchmark's fingerprint.
TIMING_MODULE = "kernels.harness.timing"
# Set on machines whose copy of the repository has no git history (a GPU runner given
# a bare working tree), so that a record still names the commit it measured.
COMMIT_VARIABLE = "NINJA_GAP_COMMIT"
# The rooms: subpackages of kernels/ that group its modules by layer (issue 34). A room
# is where a module is kept, not what it runs: kernels/harness/timing.py counts as
# kernels/harness/timing.py, in a record's file list and in every name of the package that the
# code spells, so that moving a module into a room, or from one room to another, stales
# no record. The module names left once the rooms are taken out must stay unique.
ROOMS = (
    "operations",
    "triton_helpers",
    "declarations",
    "harness",
    "figures",
    "text",
    "lessons",
)
_ROOM_PACKAGES = frozenset(f"{PACKAGE}.{room}" for room in ROOMS)
_ROOM = re.compile(rf"\b{PACKAGE}([./])(?:(?:{'|'.join(ROOMS)})[./])+")


def without_rooms(name: str) -> str:
    """A module's dotted name or a file's path with the rooms taken out:
    ``kernels.harness.timing`` is ``kernels.harness.timing``, ``kernels/harness/timing.py`` is
    ``kernels/harness/timing.py``."""
    return _ROOM.sub(rf"{PACKAGE}\1", name)


def module_path(module: str) -> Path:
    """The source file of a :mod:`kernels` module, such as ``kernels/operations/softmax.py``, or
    of a subpackage (``kernels.exercises``: ``kernels/exercises/__init__.py``)."""
    parts = module.split(".")[1:]
    path = PACKAGE_DIR.joinpath(*parts).with_suffix(".py") if parts else PACKAGE_DIR
    return path if path.is_file() else PACKAGE_DIR.joinpath(*parts, "__init__.py")


def _is_package_module(name: str) -> bool:
    # A room's own __init__.py holds a docstring and nothing else (a test holds it so):
    # importing a module through its room runs no code of the room's.
    return (
        name.startswith(PACKAGE + ".")
        and name not in _ROOM_PACKAGES
        and module_path(name).is_file()
    )


def _package_of(module: str) -> str:
    """The package that ``module``'s relative imports start from: the module's parent,
    or the module itself when it is a package (its ``__init__.py``)."""
    is_package = module_path(module).name == "__init__.py"
    return module if is_package else module.rpartition(".")[0]


def imported_modules(source: str, package: str = PACKAGE) -> set[str]:
    """The :mod:`kernels` modules that ``source`` imports anywhere (``import kernels.x``,
    ``from kernels.x import y``, ``from kernels import x``, and relative imports read
    from ``package``, the package of the module ``source`` is), found in its syntax tree."""
    return {
        name for name in _imported_names(source, package) if _is_package_module(name)
    }


@functools.lru_cache(maxsize=256)
def _imported_names(source: str, package: str) -> frozenset[str]:
    # Every module name ``source`` imports. Parsing is most of a closure's time, and a
    # build asks for the closure of every page, which share most of their modules: the
    # names depend on the text alone, so each text is parsed once per process.
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node.level, node.module, package)
            found.add(module)
            # ``from kernels import x`` or ``from .sub import y``: x or y may be a module.
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return frozenset(found)


def _absolute(level: int, module: str | None, package: str) -> str:
    """The module a ``from ... import`` names, given its dots (``level``) and the name
    after them: a relative one (``from .spec``, as the modules of the package write it,
    or ``from ..checks`` in a subpackage) read from ``package``."""
    if level == 0:
        return module or ""
    parts = package.split(".")
    return ".".join([*parts[: len(parts) - (level - 1)], *filter(None, [module])])


def closure(modules: Iterable[str]) -> list[str]:
    """``modules`` and every :mod:`kernels` module they import, directly or not, sorted."""
    seen: set[str] = set()
    pending = [m for m in modules if _is_package_module(m)]
    while pending:
        module = pending.pop()
        if module not in seen:
            seen.add(module)
            source = module_path(module).read_text(encoding="utf-8")
            pending.extend(imported_modules(source, _package_of(module)))
    return sorted(seen)


def _docstring_spans(tree: ast.AST) -> list[tuple[int, int, int, int]]:
    """Where the docstrings of a module, its classes and its functions are, as
    (first line, first column, last line, end column)."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(
            node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        ):
            first = node.body[0] if node.body else None
            value = first.value if isinstance(first, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                spans.append(
                    (
                        value.lineno,
                        value.col_offset,
                        value.end_lineno,
                        value.end_col_offset,
                    )
                )
    return spans


def normalised_source(source: str, package: str = PACKAGE) -> str:
    """``source`` as the code that runs: comments, docstrings, trailing spaces and blank
    lines taken out, the module's top-level imports written one name per line, absolute
    (relative ones read from ``package``, the package of the module ``source`` is) and
    sorted, at the top; the rooms taken out of the package's names; the rest as written.

    How an import is spelled, grouped or ordered does not change what runs, so a module
    moved to another room, with its imports rewritten and sorted again, keeps its hash.
    The text is cut where the tokenizer finds comments and the syntax tree finds
    docstrings and imports, so the result is the same under every Python version
    (printing the syntax tree back would not be: ``ast.unparse`` writes f-strings
    differently in Python 3.11 and 3.12).
    """
    lines = source.splitlines()
    tree = ast.parse(source)
    imports = sorted(_roomless(line) for line in _top_level_imports(tree, package))
    cuts = list(_docstring_spans(tree))
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            assert node.end_lineno is not None and node.end_col_offset is not None
            cuts.append(
                (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
            )
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            cuts.append((*token.start, *token.end))
    # Cut from the end, so that earlier positions stay valid (a comment inside an import
    # is cut with the import).
    for first_line, first_col, last_line, end_col in _outermost(cuts):
        head = lines[first_line - 1][:first_col]
        tail = lines[last_line - 1][end_col:]
        lines[first_line - 1 : last_line] = [head + tail]
    # An import inside a function keeps its place: a relative one (``from .spec
    # import``) counts as the absolute one it means.
    code = [
        _RELATIVE_IMPORT.sub(lambda match: _as_absolute(match, package), line.rstrip())
        for line in lines
        if line.strip() and line.strip() != ";"
    ]
    return without_rooms("\n".join([*imports, *(_roomless(line) for line in code)]))


_FROM_ROOM = re.compile(rf"\bfrom ({PACKAGE}(?:\.\w+)*) import\b")


def _roomless(line: str) -> str:
    """``line`` with the rooms taken out of the module of its ``from ... import``
    (``from kernels.harness import timing`` is ``from kernels import timing``)."""
    return _FROM_ROOM.sub(
        lambda match: f"from {without_rooms(match.group(1) + '.')[:-1]} import", line
    )


def _outermost(
    spans: list[tuple[int, int, int, int]],
) -> list[tuple[int, int, int, int]]:
    """``spans`` without those inside another, last first."""
    kept: list[tuple[int, int, int, int]] = []
    for span in sorted(spans, key=lambda s: ((s[0], s[1]), (-s[2], -s[3]))):
        if kept and (span[0], span[1]) < (kept[-1][2], kept[-1][3]):
            continue  # starts before the last kept span ends: inside it
        kept.append(span)
    return kept[::-1]


def _top_level_imports(tree: ast.Module, package: str) -> list[str]:
    """Each name the module's top level imports, as one absolute import statement."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
                      for a in node.names]  # fmt: skip
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node.level, node.module, package)
            found += [f"from {module} import {a.name}" + (f" as {a.asname}" if a.asname else "")
                      for a in node.names]  # fmt: skip
    return found


_RELATIVE_IMPORT = re.compile(r"^(\s*)from\s+(\.+)([\w.]*)\s+import\b")


def _as_absolute(match: re.Match[str], package: str) -> str:
    module = _absolute(len(match.group(2)), match.group(3), package)
    return f"{match.group(1)}from {module} import"


def file_digests(modules: Iterable[str]) -> dict[str, str]:
    """The hash of each module's normalised source, by path relative to the repository
    with the rooms taken out."""
    digests: dict[str, str] = {}
    places: dict[str, Path] = {}
    for module in modules:
        path = module_path(module)
        key = without_rooms(path.relative_to(REPOSITORY).as_posix())
        if key in places and places[key] != path:
            raise ValueError(
                f"{places[key]} and {path} are both {key} once the rooms "
                f"({', '.join(ROOMS)}) are taken out: rename one of them"
            )
        places[key] = path
        code = normalised_source(path.read_text(encoding="utf-8"), _package_of(module))
        digests[key] = hashlib.sha256(code.encode("utf-8")).hexdigest()[:16]
    return dict(sorted(digests.items()))


def combine(digests: Mapping[str, str]) -> str:
    """One fingerprint for a set of files: a hash over their paths and hashes."""
    text = "\n".join(f"{path} {digest}" for path, digest in sorted(digests.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def code_digests(
    kernel_module: str,
    timing_module: str | None = TIMING_MODULE,
    extra_modules: Iterable[str] = (),
) -> dict[str, str]:
    """The hashes of every file a benchmark of ``kernel_module`` runs: the module, what
    it imports from :mod:`kernels`, the code that times it (``timing_module`` and its
    imports; None where ``kernel_module`` times itself, as
    :mod:`kernels.harness.launch_cost` does) and ``extra_modules`` (a peer library's
    adapter that a baseline runs) with theirs. Installed, the package is
    ``ninja_gap.kernels``: its modules count as the ``kernels`` ones."""
    module = PACKAGE + "." + kernel_module.rpartition(f"{PACKAGE}.")[2]
    extra = [
        PACKAGE + "." + name.rpartition(f"{PACKAGE}.")[2] for name in extra_modules
    ]
    return file_digests(closure([module, *filter(None, [timing_module]), *extra]))


def changed_files(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """The files whose hash differs between two sets of digests, or that only one has."""
    return sorted(
        p for p in set(recorded) | set(current) if recorded.get(p) != current.get(p)
    )


def short_commit(commit: str) -> str:
    """``commit`` as records and captions quote it: a full hash (40 hex digits, as ``git
    rev-parse HEAD`` prints it) cut to git's twelve-character short form, which
    :func:`commit` writes itself; anything else as it is. Forty characters without a
    break widened a figure's caption past a phone's screen."""
    if len(commit) == 40 and all(c in "0123456789abcdef" for c in commit):
        return commit[:12]
    return commit


# A commit as git abbreviates it or writes it in full. A record's commit that is no hash
# ("test", "unknown", or text that git would read as an option) is never passed to git.
_COMMIT_HASH = re.compile(r"[0-9a-f]{4,40}")


def in_history(commit: str, repository: Path | None = None) -> bool | None:
    """Whether ``commit`` is HEAD or one of its ancestors in the git repository whose work
    tree ``repository`` is the top of (this checkout by default): False for a commit of
    a branch that never landed, or for none at all. None where that cannot be told: no
    such repository (a copy of the sources, an installed package), ``$NINJA_GAP_COMMIT``
    set (a runner given a working tree without its history names its commit there), or
    a shallow clone that lacks the commit (it may be an ancestor it does not hold)."""
    if os.environ.get(COMMIT_VARIABLE):
        return None
    return _in_history(
        commit, (REPOSITORY if repository is None else repository).resolve()
    )


@functools.lru_cache(maxsize=256)
def _in_history(commit: str, repository: Path) -> bool | None:
    # One git call per commit: a build loads some thirty records of a commit or two.
    shallow = _shallow(repository)
    if shallow is None:
        return None
    if not _COMMIT_HASH.fullmatch(commit):
        return False
    try:
        answer = subprocess.run(
            ["git", "merge-base", "--is-ancestor", commit, "HEAD"],
            cwd=repository,
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if answer.returncode in (0, 1):
        return answer.returncode == 0
    # Any other status: git holds no such commit, which a shallow clone may lack.
    return None if shallow else False


@functools.lru_cache(maxsize=16)
def _shallow(repository: Path) -> bool | None:
    """Whether the git work tree whose top is ``repository`` is a shallow clone; None
    where ``repository`` is no such top: no git there, or a folder inside another
    repository (an installed package in a clone's virtual environment), whose history is
    not the code's."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "--is-shallow-repository"],
            cwd=repository,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = result.stdout.splitlines()
    if (
        result.returncode != 0
        or len(lines) != 2
        or Path(lines[0]).resolve() != repository
    ):
        return None
    return lines[1] == "true"


def forget_history() -> None:
    """Ask git again: :func:`in_history` keeps its answers for the process (HEAD is taken
    not to move under a build)."""
    _in_history.cache_clear()
    _shallow.cache_clear()


def commit() -> str:
    """The commit of the working tree: ``$NINJA_GAP_COMMIT`` if set, else git's HEAD
    (with ``-dirty`` when files under ``kernels/`` differ from it), else ``unknown``."""
    if os.environ.get(COMMIT_VARIABLE):
        return short_commit(os.environ[COMMIT_VARIABLE])
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=REPOSITORY,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", PACKAGE],
            cwd=REPOSITORY,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}-dirty" if dirty else head

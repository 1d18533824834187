"""Sphinx glue for the gallery and the lessons, kept out of the course's own packages.

- The gallery's image scraper: matplotlib's, plus each figure's provenance caption as text.
- Rebuilds that skip only what did not change: an example or a lesson runs again when
  its own file, a :mod:`kernels` module it uses (directly or not) or a record it reads
  has changed, and otherwise keeps its last output. sphinx-gallery by itself looks at
  the script alone, and Sphinx re-reads a lesson only when its own text changes.
  Switching between a draft build (``nox -s docs -- --draft``: placeholders for missing
  or stale records) and a normal one runs again only what reads such a record.
- Every example really ran: after the gallery is generated, a page that reports no
  running time, or that lacks a figure its script draws, is a warning (an error with -W).
  A figure with text smaller than the site's size fails its example.

What a page uses, which figures a script draws and which quiz a page shows are read from
the sources by the functions here; the tests use the same functions.
"""

import ast
import hashlib
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from kernels.harness import bench, fingerprint, measurements, recording
from kernels.text import messages

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "gallery"
# Calls that each draw one figure when they run at the top level of a script.
FIGURE_CALLS = frozenset({"plot_measurement", "plot_peak_memory", "subplots", "figure"})
_QUIZ = re.compile(r"(?:^#? *\.\. quiz:: *|^```\{quiz\} *)([\w-]+)", re.MULTILINE)
_CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_RUNNING_TIME = re.compile(
    r"\*\*Total running time of the script:\*\* \((\d+) minutes ([\d.]+) seconds\)"
)
# Where sphinx-gallery keeps, beside each copied script, what our rebuild check saw last.
_STAMP_SUFFIX = ".deps"


def gallery_scripts() -> list[Path]:
    """The gallery's example scripts, in page order."""
    return sorted(GALLERY.glob("plot_*.py"))


def lesson_code(markdown: str) -> str:
    """The Python code of a MyST notebook page: its code cells, joined."""
    cells = _CODE_CELL.findall(markdown)
    # A cell's options are not Python: ":tags: [...]" lines, or a YAML block between
    # "---" lines at its top.
    cells = [
        re.sub(r"\A---\n.*?^---\n", "", cell, flags=re.MULTILINE | re.DOTALL) for cell in cells
    ]
    return "\n".join(re.sub(r"^:\w+:.*$", "", cell, flags=re.MULTILINE) for cell in cells)


def quiz_names(source: str) -> list[str]:
    """The quiz banks a page shows (``.. quiz:: name`` or a ``{quiz}`` fence), in order."""
    return _QUIZ.findall(source)


def figure_count(script: str) -> int:
    """How many figures a gallery script draws: its top-level calls of FIGURE_CALLS.

    A figure drawn inside a function or a loop cannot be counted from the source, so it
    is an error: draw each figure at the top level, where the reader sees it.
    """
    tree = ast.parse(script)
    top_level = set()
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.ClassDef | ast.For | ast.While):
            for node in ast.walk(statement):
                if _is_figure_call(node):
                    raise ValueError(
                        f"line {node.lineno}: a figure drawn inside a function or loop "
                        "cannot be counted; draw each figure at the top level of the script"
                    )
        else:
            top_level.update(n for n in ast.walk(statement) if _is_figure_call(n))
    return len(top_level)


def _is_figure_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in FIGURE_CALLS


def _records_read(code: str, modules: set[str]) -> set[str]:
    # The records of the benchmarks that ``modules`` declare, and those ``code`` names.
    records = bench.records_of(modules)
    return records | {name for name in measurements.recorded_benchmarks() if f'"{name}"' in code}


def dependencies(code: str) -> list[Path]:
    """The files whose change must re-run ``code``: every :mod:`kernels` module it
    imports (directly or not), every GPU's records those modules can draw (see
    :func:`kernels.harness.bench.records_of`) or that the code names as a string, and the
    catalog of the phrases it prints in the build's language
    (kernels/text/locales/<language>.po), if it has one."""
    modules = fingerprint.closure(fingerprint.imported_modules(code))
    paths = [fingerprint.module_path(module) for module in modules]
    # Every GPU's record: a page shows the other GPUs' beside the primary's.
    gpus = measurements.known_gpus()
    paths += [
        measurements.path_for(name, gpu)
        for name in sorted(_records_read(code, modules))
        for gpu in gpus
    ]
    if "kernels.text.messages" in modules:
        # What the code prints comes from the catalog of the build's language.
        paths.append(messages.LOCALES / f"{messages.language()}.po")
    return [path for path in paths if path.exists()]


def build_kind(code: str) -> str:
    """``"draft"`` when a draft build draws ``code``'s output differently from a normal
    one (a record it reads is missing, malformed or stale: a placeholder instead of a
    failure), else ``"build"``, whichever kind of build this is. Code that ran in one
    kind runs again when the kind changes, and only then: switching to a draft build
    runs again only what reads a record that the draft replaces."""
    if not bench.draft():
        return "build"
    modules = fingerprint.closure(fingerprint.imported_modules(code))
    return "draft" if recording.unusable_records(_records_read(code, modules)) else "build"


class UnreadableDependency(OSError):
    """A file that a page depends on which is no regular file of a record's size at most
    (a FIFO or a directory named like a record, a link to a device); the message names it."""


def _contents(path: Path) -> bytes:
    # Read as the loaders read a record: a FIFO would block a plain read forever and a
    # link to /dev/zero would fill the memory. No source, catalog or record of the
    # course is near a record's bound (measurements.MAX_FILE_BYTES).
    try:
        return measurements.read_bounded(path, measurements.MAX_FILE_BYTES)
    except OSError as error:
        raise UnreadableDependency(
            f"{path}: cannot read it to tell whether it changed ({error.strerror or error})"
        ) from None


def stamp(own_source: Path, paths: list[Path]) -> str:
    """A hash over a source file and the files it depends on; :class:`UnreadableDependency`
    for one that cannot be read."""
    digest = hashlib.sha256(_contents(own_source))
    for path in paths:
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(_contents(path))
    return digest.hexdigest()


def _gallery_dir(app: Sphinx) -> Path:
    return Path(app.srcdir) / app.config.sphinx_gallery_conf["gallery_dirs"]


def _example_stamp(script: Path) -> str:
    # What the example draws depends on the kind of build (see build_kind), and its
    # printed phrases on the language of the build (kernels.text.messages): an example that
    # ran for one edition runs again for another.
    code = script.read_text(encoding="utf-8")
    return f"{build_kind(code)} {messages.language()} {stamp(script, dependencies(code))}"


def rerun_changed_examples(app: Sphinx) -> None:
    """Before sphinx-gallery looks: forget the checksum of each example whose
    dependencies changed since its last successful run, so that it runs again."""
    out = _gallery_dir(app)
    for script in gallery_scripts():
        stamp_file = out / (script.name + _STAMP_SUFFIX)
        try:
            current = _example_stamp(script)
        except UnreadableDependency as error:
            # A warning (an error with -W) that names the file; the example runs again,
            # and its own reading of the file says what is wrong with it.
            logger.warning("%s: %s", script.name, error)
            current = None
        if (
            current is None
            or not stamp_file.exists()
            or stamp_file.read_text(encoding="utf-8") != current
        ):
            (out / (script.name + ".md5")).unlink(missing_ok=True)


def check_examples_ran(app: Sphinx) -> None:
    """After sphinx-gallery ran the examples: every page reports a running time and has
    every figure its script draws; remember what each successful run depended on."""
    out = _gallery_dir(app)
    for script in gallery_scripts():
        page = out / f"{script.stem}.rst"
        if not page.exists():
            logger.warning("%s: sphinx-gallery wrote no page for it", script.name)
            continue
        rst = page.read_text(encoding="utf-8")
        match = _RUNNING_TIME.search(rst)
        if match is None or float(match.group(1)) * 60 + float(match.group(2)) == 0:
            logger.warning("%s: its page shows no running time: the example did not run", page)
        try:
            expected = figure_count(script.read_text(encoding="utf-8"))
        except ValueError as error:
            logger.warning("%s: %s", script, error)
            continue
        images = set(re.findall(rf"images/(sphx_glr_{script.stem}_\d+\.png)", rst))
        present = {name for name in images if (out / "images" / name).exists()}
        if len(present) != expected:
            logger.warning(
                "%s: its script draws %d figure(s) but its page has %d",
                page, expected, len(present),
            )  # fmt: skip
        if (out / (script.name + ".md5")).exists():
            # The stamp is taken after the run, so a record the run wrote is in it.
            try:
                current = _example_stamp(script)
            except UnreadableDependency as error:
                # No stamp: the next build runs the example again.
                logger.warning("%s: %s", script.name, error)
                continue
            (out / (script.name + _STAMP_SUFFIX)).write_text(current, encoding="utf-8")


def _lesson_kinds(env: BuildEnvironment) -> dict[str, str]:
    # The build kind (see build_kind) each page with code was last read in, kept in the
    # environment that Sphinx saves between builds.
    if not hasattr(env, "ninja_gap_build_kinds"):
        env.ninja_gap_build_kinds = {}
    return env.ninja_gap_build_kinds


def note_lesson_dependencies(app: Sphinx, docname: str, source: list[str]) -> None:
    """When Sphinx reads a page that runs code, record the files that code depends on,
    so that Sphinx reads (and myst-nb runs) the page again when one of them changes,
    and the kind of build it ran in."""
    code = lesson_code(source[0])
    if not code.strip():
        return
    for path in dependencies(code):
        app.env.note_dependency(str(path))
    _lesson_kinds(app.env)[docname] = build_kind(code)


def lessons_of_another_kind(
    app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    """The pages with code to read again because they ran in another kind of build than
    they would now (a draft that replaced a record, and the other way round)."""
    again = []
    for docname, kind in _lesson_kinds(env).items():
        if docname in removed or docname in changed:
            continue
        code = lesson_code(Path(env.doc2path(docname)).read_text(encoding="utf-8"))
        if build_kind(code) != kind:
            again.append(docname)
    return again


def _forget_lesson(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    _lesson_kinds(env).pop(docname, None)


def _merge_lessons(
    app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment
) -> None:
    # After a parallel read: the kinds the other process noted.
    theirs = _lesson_kinds(other)
    _lesson_kinds(env).update({d: theirs[d] for d in docnames if d in theirs})


def describe_figure(fig: Any) -> str:
    """Alt text for a figure, from what it draws: its panels' titles, what is plotted
    against what, and the entries of its legends, in the language of the build (the
    labels are drawn in it already)."""
    parts = []
    for ax in fig.axes:
        title = ax.get_title()
        if ax.get_xlabel() and ax.get_ylabel():
            title = f"{title}: " if title else ""
            against = messages._("{y} against {x}").format(y=ax.get_ylabel(), x=ax.get_xlabel())
            parts.append(f"{title}{against}")
        elif title:
            parts.append(title)
    for legend in [*(ax.get_legend() for ax in fig.axes), *fig.legends]:
        if legend is not None:
            parts.append(", ".join(text.get_text() for text in legend.get_texts()))
    return " ".join("; ".join(parts).split()) or messages._("figure")


def smallest_text_pt(fig: Any) -> float:
    """The size of the smallest visible text of ``fig``, in points, once it is drawn."""
    from matplotlib.text import Text

    fig.canvas.draw()  # tick labels exist only once the figure is drawn
    sizes = [
        text.get_fontsize()
        for text in fig.findobj(Text)
        if text.get_visible() and text.get_text().strip()
    ]
    return min(sizes, default=float("inf"))


def captioned_matplotlib_scraper(
    block: Any, block_vars: Any, gallery_conf: Any, **kwargs: Any
) -> str:
    """sphinx-gallery image scraper: matplotlib's own, with alt text that says what each
    figure shows, plus each figure's caption as text.

    Captions may mark code with `backticks`, as quiz banks do.
    """
    import matplotlib.pyplot as plt
    from sphinx_gallery.scrapers import matplotlib_scraper

    from kernels.figures.plotting import TEXT_PT, caption_of
    from quiz.rst import to_rst_inline

    figures = [plt.figure(number) for number in plt.get_fignums()]
    for fig in figures:
        smallest = smallest_text_pt(fig)
        if smallest < TEXT_PT:
            # Smaller text is unreadable once a phone shrinks the figure to its width.
            raise ValueError(
                f"a figure has text of {smallest:g} pt; the site's figures use "
                f"{TEXT_PT} pt or more (kernels.figures.plotting.style sets every text so)"
            )
    captions = [caption_of(fig) for fig in figures]
    alts = iter([describe_figure(fig) for fig in figures])
    rst = matplotlib_scraper(block, block_vars, gallery_conf, **kwargs)
    # sphinx-gallery names a figure after its script ("plot 01 vector add").
    rst = re.sub(r"(?m)^(\s*):alt: .*$", lambda m: f"{m.group(1)}:alt: {next(alts)}", rst)
    for text in filter(None, captions):
        rst += f"\n\n.. figure-provenance::\n\n   {to_rst_inline(text)}\n"
    return rst


class FigureProvenance(SphinxDirective):
    """``figure-provenance``: the caption the scraper writes under a figure, a paragraph
    of class ``figure-provenance``. It is left out of the translation catalogs: the
    example writes it in the build's language, and its dates and versions change with
    every measurement."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        """The caption as one paragraph that Sphinx's i18n passes over."""
        children, problems = self.state.inline_text(" ".join(self.content), self.lineno)
        paragraph = nodes.paragraph("", "", *children, classes=["figure-provenance"])
        paragraph["translatable"] = False
        return [paragraph, *problems]


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the handlers around sphinx-gallery's (which runs at priority 500)."""
    app.connect("builder-inited", rerun_changed_examples, priority=400)
    app.connect("builder-inited", check_examples_ran, priority=600)
    app.connect("source-read", note_lesson_dependencies)
    app.connect("env-get-outdated", lessons_of_another_kind)
    app.connect("env-purge-doc", _forget_lesson)
    app.connect("env-merge-info", _merge_lessons)
    app.add_directive("figure-provenance", FigureProvenance)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

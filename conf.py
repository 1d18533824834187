"""Sphinx configuration. The repository root is the source directory; pages live in docs/."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
# The build's own Sphinx glue (the gallery scraper, rebuild and ran-checks).
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
# Jupyter kernels that myst-nb starts for the lessons inherit this, so they can import
# the course's packages without an install.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))

import kernels  # noqa: F401  (picks GPU or interpreter before any kernel module loads)
from kernels.harness.bench import measuring
from kernels.harness.measurements import PRIMARY_GPU

# The GPU whose records the pages' prose and verdicts read (gallery/measurements/<gpu>/);
# the other GPUs' records are shown beside its own. It is set in kernels/harness/measurements.py,
# where the command line (nox -s bench -- --stale) and the installed package read it too.
primary_gpu = PRIMARY_GPU

project = "Closing the Ninja Gap"
author = "The Closing the Ninja Gap authors"
copyright = "2026, the Closing the Ninja Gap authors"

extensions = [
    "myst_nb",
    # The lessons' kernels over encrypted sockets (docs/_ext/kernel_transport.py).
    "kernel_transport",
    "sphinx_design",
    "sphinx_copybutton",
    "sphinx.ext.intersphinx",
    "sphinx_gallery.gen_gallery",
    "quiz",
    # Each lesson's exercises, from kernels/exercises/ (docs/_ext/exercise_pages.py).
    "exercise_pages",
    # And each page's exercises as a notebook to download (docs/_ext/exercise_notebooks.py).
    "exercise_notebooks",
    "course_build",
    # The footer's line: the course's version, the commit, Triton's and PyTorch's versions.
    "build_info",
    # The course's wheel and source archive, built into the site; the {package} role.
    "package_downloads",
    "downloads",
    "editions",
    # The lessons' figures' alt text, extracted into the catalogs (docs/_ext/figure_alts.py).
    "figure_alts",
    # The gallery index's cards in the edition's language (docs/_ext/gallery_cards.py).
    "gallery_cards",
    # The pages' pseudocode plans (text code blocks), translated (docs/_ext/plan_blocks.py).
    "plan_blocks",
]

root_doc = "docs/index"
include_patterns = ["docs/**"]
exclude_patterns = [
    # sphinx-gallery writes a notebook and a script beside each page for download;
    # they are files to offer, not pages to build.
    "docs/examples/*.ipynb",
    "docs/examples/*.py",
    "**/.ipynb_checkpoints",
    # Reviews of the pages, claim by claim: maintainers' records, not pages.
    "docs/guides/reviews/**",
]
templates_path = ["docs/_templates"]
html_static_path = ["docs/_static"]
# The pages live under docs/; this sends a visitor of an edition's root to its home page.
html_extra_path = ["docs/_extra"]
html_css_files = ["ninja-gap.css"]
# The tab's icon, also sparing a reader's server the request for /favicon.ico that fails.
html_favicon = "docs/_static/favicon.svg"
# No general index: no page marks index entries, so Sphinx's would be an empty page
# that every page links to (<link rel="index">).
html_use_index = False
html_js_files = ["quiz-search.js"]

# The edition: English (the source) or a translation from the catalogs in docs/locales/
# (nox -s docs builds each into _build/html/<language>/; see docs/_ext/editions.py).
language = os.environ.get("NINJA_GAP_LANGUAGE") or "en"
locale_dirs = ["docs/locales/"]
# A catalog per page (docs/locales/ru/LC_MESSAGES/docs/lessons/01_intro.po), not per folder.
gettext_compact = False

# Where the course's repository is, shown as a link in the top bar when set.
repository_url = os.environ.get("NINJA_GAP_REPOSITORY_URL", "")

html_theme = "pydata_sphinx_theme"
html_title = project
# The top bar lists the three sections; the left sidebar (the drawer on a phone) lists
# every page of the course.
html_sidebars = {"**": ["sidebar-course-nav"]}
# Without it the theme starts with an empty colour mode and logs an error in every page.
html_context = {"default_mode": "auto"}
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # The same page in the other language, first in the top bar's right end.
    "navbar_end": ["language-switcher", "theme-switcher", "navbar-icon-links"],
    "footer_start": ["copyright", "build-info"],
    "footer_end": ["sphinx-version"],
}
if repository_url:
    html_theme_options["icon_links"] = [
        {"name": "Repository", "url": repository_url, "icon": "fa-brands fa-git-alt"}
    ]

# myst-nb: a lesson runs whenever Sphinx reads it (its text, a kernels/ module it uses or
# a record it reads changed); a failing cell is a warning, which fails the -W build.
nb_execution_mode = "force"
nb_execution_raise_on_error = False
nb_execution_show_tb = True
nb_execution_timeout = 600
# The toggle of a cell whose input is hidden (the pages hide inputs only, never outputs),
# in the edition's language.
_CODE_PROMPTS = {"ru": ("Показать код ячейки", "Скрыть код ячейки")}
if language in _CODE_PROMPTS:
    nb_code_prompt_show, nb_code_prompt_hide = _CODE_PROMPTS[language]
# The footer's copyright line, in the edition's language.
_COPYRIGHTS = {"ru": "2026, авторы Closing the Ninja Gap"}
copyright = _COPYRIGHTS.get(language, copyright)
myst_enable_extensions = ["colon_fence", "dollarmath"]

# Links from names such as {py:func}`torch.softmax` and {py:func}`tl.load
# <triton.language.load>` to PyTorch's and Triton's documentation. The build is offline
# (GPU runners reach no network), so the inventories are stored in the repository, as
# plain-text inventories (Sphinx's version 1 format) of the names the course links to.
intersphinx_mapping = {
    "torch": ("https://docs.pytorch.org/docs/stable/", "docs/inventories/torch.inv"),
    "triton": ("https://triton-lang.org/main/", "docs/inventories/triton.inv"),
}
myst_heading_anchors = 3

# sphinx-gallery: one script per kernel. Its own cache looks at the script alone;
# course_build also re-runs an example when a kernels/ module it uses or a record it
# reads changed. A GPU build re-runs every example: measuring is what it is for. An
# example that fails fails the build.
sphinx_gallery_conf = {
    "examples_dirs": "gallery",
    "gallery_dirs": "docs/examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"/(measurements|__init__)",
    "run_stale_examples": measuring(),
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    "image_scrapers": ("course_build.captioned_matplotlib_scraper",),
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "show_signature": False,
    "min_reported_time": 0,
    # The execution-times page loads jQuery and DataTables from CDNs, which an offline
    # reader (and an offline GPU runner) cannot reach; each page states its own time.
    "write_computation_times": False,
}

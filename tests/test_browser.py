"""The built site in a real browser (headless Chromium through Playwright): every page
loads offline without errors, quizzes work with and without JavaScript, and no page
scrolls sideways on a phone or a laptop.

Each check is one function taking a loaded page; a failure saves a screenshot into
FAILURES (under the build's folder) and the message says where.
"""

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import DocsBuild

if TYPE_CHECKING:
    # Imported where a browser starts: `pytest -m "not browser"` then collects this
    # module on a runner without Playwright (an offline GPU image).
    from playwright import sync_api as playwright_api

pytestmark = pytest.mark.browser

WIDTHS = (390, 1280)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator["playwright_api.Browser"]:
    if CHROMIUM is None:
        pytest.fail(
            "the browser tests need Chromium: `apt-get install chromium` (Debian's package; "
            "`nox -s tests` installs it where it can)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


def site_pages(build: DocsBuild) -> list[Path]:
    """Every page of the site a reader can reach."""
    return sorted((build.html / "docs").rglob("*.html"))


class Visit:
    """One page opened at one width: its console errors and the hosts it asked."""

    def __init__(self, browser: "playwright_api.Browser", url: str, width: int, js: bool) -> None:
        self.context = browser.new_context(
            viewport={"width": width, "height": 900}, java_script_enabled=js
        )
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.remote: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on(
            "request",
            lambda r: r.url.startswith(("file:", "data:", "blob:")) or self.remote.append(r.url),
        )
        self.page.goto(url, wait_until="load")

    def fail(self, failures: Path, name: str, message: str) -> None:
        failures.mkdir(parents=True, exist_ok=True)
        shot = failures / f"{name}.png"
        self.page.screenshot(path=str(shot), full_page=True)
        pytest.fail(f"{message} (screenshot: {shot})")


@pytest.fixture(params=["en", "ru"])
def edition(request: pytest.FixtureRequest) -> DocsBuild:
    """Each edition's build in turn: the English, then the Russian (whose words, numbers
    and figures differ, and so do its widths)."""
    return request.getfixturevalue("docs_build" if request.param == "en" else "russian_build")


@pytest.fixture(scope="module")
def failures(docs_build: DocsBuild) -> Path:
    """Where screenshots of failures go."""
    return docs_build.html.parent / "browser-failures"


def _name(build: DocsBuild, path: Path, width: int) -> str:
    page = path.relative_to(build.html).with_suffix("").as_posix().replace("/", "_")
    return f"{build.language}-{page}-{width}"


def test_every_page_loads_offline_without_errors(
    docs_build: DocsBuild, browser: "playwright_api.Browser", failures: Path
) -> None:
    assert docs_build.returncode == 0, docs_build.log[-3000:]
    for path in site_pages(docs_build):
        visit = Visit(browser, path.as_uri(), 1280, js=True)
        visit.page.wait_for_timeout(100)
        if visit.errors or visit.remote:
            visit.fail(
                failures,
                _name(docs_build, path, 1280),
                f"{path.name}: console errors {visit.errors}, requests to other hosts "
                f"{visit.remote}",
            )
        visit.context.close()


# What a box too narrow for its text clips without the window scrolling: the article
# (panned sideways by a long inline name), its headings (a long Russian word at the
# theme's size) and the links to the previous and next page (the theme's 45% boxes).
CLIPPED_TEXT = """() => [...document.querySelectorAll(
    'article, article h1, article h2, article h3, article h4, .prev-next-area a')]
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => `${e.tagName.toLowerCase()} ${e.scrollWidth - e.clientWidth} px too wide: `
            + e.textContent.trim().replace(/\\s+/g, ' ').slice(0, 60))"""


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_scrolls_sideways_or_clips_its_text(
    edition: DocsBuild, browser: "playwright_api.Browser", failures: Path, width: int
) -> None:
    docs_build = edition
    for path in site_pages(docs_build):
        visit = Visit(browser, path.as_uri(), width, js=True)
        overflow = visit.page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        if overflow > 1:
            visit.fail(
                failures,
                _name(docs_build, path, width),
                f"{path.name} at {width} px is {overflow} px wider than the window",
            )
        clipped = visit.page.evaluate(CLIPPED_TEXT)
        if clipped:
            visit.fail(
                failures,
                _name(docs_build, path, width),
                f"{path.name} at {width} px cuts off text: {clipped}",
            )
        visit.context.close()


# Code blocks are written at up to 100 columns; a few of the pages' longer lines (output
# of a run, a long shell line) may still scroll.
MOST_CODE_FITS = 0.8


def test_at_a_laptop_s_width_tables_and_most_code_fit_the_column(
    edition: DocsBuild, browser: "playwright_api.Browser", failures: Path
) -> None:
    docs_build = edition
    blocks = scrolling = 0
    for path in site_pages(docs_build):
        visit = Visit(browser, path.as_uri(), 1280, js=True)
        column, wide_tables, pres, wide_pres = visit.page.evaluate(
            """() => {
              const column = document.querySelector('.bd-article-container')
                .getBoundingClientRect().width;
              const tables = [...document.querySelectorAll('.result-table table')];
              const pres = [...document.querySelectorAll('article div.highlight pre')];
              return [column, tables.filter(t => t.getBoundingClientRect().width > column).length,
                      pres.length, pres.filter(p => p.scrollWidth > p.clientWidth + 1).length];
            }"""
        )
        blocks, scrolling = blocks + pres, scrolling + wide_pres
        if wide_tables:
            visit.fail(failures, _name(docs_build, path, 1280),
                       f"{path.name}: {wide_tables} results tables wider than the {column:.0f} px "
                       "column at 1280 px")  # fmt: skip
        visit.context.close()
    assert scrolling <= (1 - MOST_CODE_FITS) * blocks, f"{scrolling} of {blocks} code blocks scroll"


@pytest.mark.parametrize("js", [True, False], ids=["javascript", "no-javascript"])
def test_every_quiz_option_opens_and_tells_its_verdict(
    docs_build: DocsBuild, browser: "playwright_api.Browser", failures: Path, js: bool
) -> None:
    pages = [p for p in site_pages(docs_build) if "quiz-option" in p.read_text("utf-8")]
    assert len(pages) >= 9, pages
    for path in pages:
        visit = Visit(browser, path.as_uri(), 1280, js=js)
        options = visit.page.locator("details.quiz-option")
        verdicts = []
        for index in range(options.count()):
            option = options.nth(index)
            option.locator("summary").click()
            if option.get_attribute("open") is None:
                visit.fail(failures, _name(docs_build, path, 1280), f"option {index} stays shut")
            verdicts.append(option.inner_text())
        questions = visit.page.locator(".quiz-question").count()
        right = sum("Correct." in text for text in verdicts)
        if right != questions or not all("Correct." in v or "Not quite." in v for v in verdicts):
            visit.fail(
                failures,
                _name(docs_build, path, 1280),
                f"{path.name}: {right} options say 'Correct.' for {questions} questions",
            )
        visit.context.close()


def test_the_top_bar_is_one_row_and_covers_no_heading(
    docs_build: DocsBuild, browser: "playwright_api.Browser", failures: Path
) -> None:
    for path in site_pages(docs_build):
        visit = Visit(browser, path.as_uri(), 1280, js=True)
        tops = visit.page.evaluate(
            "[...document.querySelectorAll('.bd-header .navbar-nav .nav-link')]"
            ".filter(e => e.offsetParent).map(e => Math.round(e.getBoundingClientRect().top))"
        )
        if len(set(tops)) > 1:
            visit.fail(failures, _name(docs_build, path, 1280), f"{path.name}: top bar rows {tops}")
        # Follow each section's anchor: the heading must land below the sticky bar.
        for anchor in visit.page.evaluate(
            "[...document.querySelectorAll('section[id] > h2')].map(h => h.parentElement.id)"
        ):
            visit.page.goto(f"{path.as_uri()}#{anchor}")
            covered = visit.page.evaluate(
                f"document.getElementById('{anchor}').querySelector('h2').getBoundingClientRect()"
                ".top + 1 < document.querySelector('.bd-header').getBoundingClientRect().bottom"
            )
            if covered:
                visit.fail(
                    failures,
                    _name(docs_build, path, 1280),
                    f"{path.name}: the top bar covers the heading of #{anchor}",
                )
        visit.context.close()


def test_the_phone_drawer_lists_every_page(
    docs_build: DocsBuild, browser: "playwright_api.Browser", failures: Path
) -> None:
    pages = {
        p.relative_to(docs_build.html / "docs").as_posix()
        for p in site_pages(docs_build)
        if p.name not in {"search.html", "genindex.html"}
    }
    visit = Visit(browser, (docs_build.html / "docs" / "index.html").as_uri(), 390, js=True)
    visit.page.locator(".primary-toggle").first.click()
    visit.page.wait_for_timeout(300)
    listed = set(
        visit.page.evaluate(
            "[...document.querySelectorAll('#pst-primary-sidebar-modal a.reference, "
            "dialog[open] a.reference')].map(a => a.getAttribute('href'))"
        )
    )
    missing = sorted(page for page in pages - {"index.html"} if page not in listed)
    if missing:
        visit.fail(failures, "drawer-390", f"the drawer does not list {missing}")
    visit.context.close()


def test_figure_text_is_at_least_9_pixels_tall_on_a_phone(
    edition: DocsBuild, browser: "playwright_api.Browser", failures: Path
) -> None:
    docs_build = edition
    from kernels.figures.plotting import TEXT_PT

    # Figures are saved at matplotlib's 100 pixels per inch; the build refuses a figure
    # with text under TEXT_PT points, so the smallest text is this tall in the image:
    smallest_px = TEXT_PT * 100 / 72
    figures = 0
    # The gallery's figures, and the lessons' (drawn by the same functions, shown in a
    # narrower column when captioned).
    pages = [*sorted((docs_build.html / "docs" / "examples").glob("plot_*.html")),
             *sorted((docs_build.html / "docs" / "lessons").glob("*.html"))]  # fmt: skip
    for path in pages:
        visit = Visit(browser, path.as_uri(), 390, js=True)
        scales = visit.page.evaluate(
            # A lesson's captioned figure ({glue:figure}) is a <figure> beside the cell
            # outputs, in a column narrowed by its margins.
            "[...document.querySelectorAll('img.sphx-glr-single-img, img.sphx-glr-multi-img, "
            "article .cell_output img, article figure img')]"
            ".map(i => i.getBoundingClientRect().width / i.naturalWidth)"
        )
        figures += len(scales)
        small = [round(scale * smallest_px, 1) for scale in scales if scale * smallest_px < 9]
        if small:
            visit.fail(
                failures, _name(docs_build, path, 390), f"{path.name}: figure text {small} px"
            )
        visit.context.close()
    assert figures >= 14


def test_search_results_never_quote_a_quiz_verdict(
    docs_build: DocsBuild, browser: "playwright_api.Browser", failures: Path
) -> None:
    # The quote under a result comes from Search.htmlToText; quiz-search.js must have
    # made it drop what is marked no-search, as the quiz's verdicts are.
    lesson = (docs_build.html / "docs" / "lessons" / "01_intro.html").read_text(encoding="utf-8")
    assert re.search(r"quiz-verdict quiz-(right|wrong) no-search", lesson)
    visit = Visit(browser, (docs_build.html / "search.html").as_uri(), 1280, js=True)
    quoted = visit.page.evaluate("html => Search.htmlToText(html)", lesson)
    if "Correct." in quoted or "Not quite." in quoted or "Ninja" not in quoted:
        visit.fail(failures, "search-1280", "search results would quote a quiz verdict")
    visit.context.close()


def test_search_from_a_file_lists_pages_without_errors(
    docs_build: DocsBuild, russian_build: DocsBuild, browser: "playwright_api.Browser",
    failures: Path,
) -> None:  # fmt: skip
    # Opened as a file, the browser refuses the page fetches behind the quotes under
    # the results (an error each, before quiz-search.js turned them off); the results
    # come without quotes, and the page says why and how to get them.
    for build, note in ((docs_build, "opened as a file"), (russian_build, "открыт как файл")):
        url = (build.html / "search.html").as_uri() + "?q=softmax"
        visit = Visit(browser, url, 1280, js=True)
        visit.page.wait_for_selector("#search-results li", timeout=10_000)
        visit.page.wait_for_timeout(300)
        found = visit.page.locator("#search-results li").count()
        shown = visit.page.locator(".search-file-note").inner_text()
        if visit.errors or found == 0 or note not in shown:
            message = f"{build.language}: {found} results, note {shown!r}, errors {visit.errors}"
            visit.fail(failures, f"search-file-{build.language}", message)
        visit.context.close()

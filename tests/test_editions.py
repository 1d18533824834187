"""The site's two editions: the site root, the language switcher on every page, and a
build of the Russian edition (the tests' other builds are English only, for speed)."""

import os
import re
import sys
from html import unescape
from pathlib import Path

import pytest
from conftest import ROOT, DocsBuild
from records import committed_doc, within

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
from editions import EDITIONS, other_editions


def text_of(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())


def switcher_links(html: str) -> set[str]:
    """The hrefs of a page's language switcher (the theme shows it twice: in the top
    bar, and in the drawer that replaces it on a phone)."""
    return set(re.findall(r'<a class="[^"]*language-switcher-link[^"]*" href="([^"]+)"', html))


def test_switcher_link_climbs_to_the_site_root_and_down_into_the_other_edition() -> None:
    assert other_editions("docs/lessons/01_intro", "en") == [
        ("ru", "Русский", "../../../ru/docs/lessons/01_intro.html")
    ]
    assert other_editions("search", "ru") == [("en", "English", "../en/search.html")]
    assert set(EDITIONS) == {"en", "ru"}


def test_the_editions_are_listed_once_for_the_build_and_the_switcher() -> None:
    import noxfile

    assert noxfile.EDITIONS == tuple(EDITIONS) == ("en", "ru")
    assert EDITIONS["ru"] == "Русский"


def test_site_root_leads_to_the_english_home_page_and_names_the_russian_one() -> None:
    root = (ROOT / "docs" / "_root" / "index.html").read_text(encoding="utf-8")
    assert "url=en/docs/index.html" in root
    assert 'href="ru/docs/index.html"' in root


def test_every_english_page_links_to_the_same_russian_page(
    docs_build: DocsBuild, russian_build: DocsBuild
) -> None:
    assert russian_build.returncode == 0, russian_build.log[-5000:]
    pages = sorted(docs_build.html.rglob("*.html"))
    pages = [p for p in pages if not p.relative_to(docs_build.html).parts[0].startswith("_")]
    assert len(pages) > 20
    for page in pages:
        if page.name == "index.html" and page.parent == docs_build.html:
            continue  # the edition's root: a redirect to its home page
        relative = page.relative_to(docs_build.html)
        (link,) = switcher_links(page.read_text(encoding="utf-8"))
        target = (page.parent / link).resolve()
        assert target == (russian_build.html / relative).resolve(), relative
        assert target.exists(), relative
        (back,) = switcher_links(target.read_text(encoding="utf-8"))
        assert (target.parent / back).resolve() == page.resolve(), relative


_SOURCE_BLOCK = re.compile(
    r'<div class="highlight-([\w-]+) notranslate"><div class="highlight"><pre>(.*?)</pre>', re.S
)


def code_blocks(html: str) -> list[str]:
    """The text of each code block of a page written in its source, not printed by its
    code (an output may come in one block or two, as the streams were flushed)."""
    return [text_of(code) for language, code in _SOURCE_BLOCK.findall(html)
            if language not in ("myst-ansi", "none")]  # fmt: skip


def test_a_russian_page_shows_every_code_block_of_the_english_one(
    docs_build: DocsBuild, russian_build: DocsBuild
) -> None:
    # A translated code block is read back as "::" and the text indented under it,
    # which MyST does not take for a code block: translating the plans of every page
    # left the Russian contributing guide's two record layouts as "::", with -W quiet.
    pages = sorted((docs_build.html / "docs").rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        relative = page.relative_to(docs_build.html).as_posix()
        english = code_blocks(page.read_text(encoding="utf-8"))
        russian = code_blocks(russian_build.page(relative))
        assert len(russian) == len(english), relative
        for theirs, ours in zip(english, russian, strict=True):
            assert len(ours) >= len(theirs) / 2, (relative, theirs[:60], ours[:60])


def test_the_gallery_s_plans_are_translated(russian_build: DocsBuild) -> None:
    # The pseudocode plans are text code blocks, which Sphinx does not translate
    # unless told (docs/_ext/plan_blocks.py): the Russian pages showed them in English.
    softmax = text_of(russian_build.page("docs/examples/plot_03_softmax.html"))
    assert "записать e / sum(e) в строку r" in softmax
    assert "store e / sum(e) into row r" not in softmax


def test_russian_edition_builds_without_warnings(russian_build: DocsBuild) -> None:
    assert russian_build.returncode == 0, russian_build.log[-5000:]
    # Kernels' own warnings count too (ipykernel's about TCP without encryption was one).
    assert not re.search(r"\bWARNING\b", russian_build.log), russian_build.log[-5000:]


def test_russian_lesson_1_is_in_russian_with_its_quiz(russian_build: DocsBuild) -> None:
    html = russian_build.page("docs/lessons/01_intro.html")
    assert '<html lang="ru"' in html
    text = text_of(html)
    assert "Введение в программирование на Triton" in text
    assert "Примечание редакции" in text
    assert "Вопрос 1" in text and "Question 1" not in text
    assert "Чем модель программирования Triton отличается от модели CUDA?" in text
    # The kernel ran for this edition too, and its cell printed in Russian
    # (kernels/text/locales/ru.po).
    assert "3 программы по 4 элемента:" in text
    assert "3 programs of 4 elements" not in text


def test_russian_gallery_page_prints_its_table_and_caption_in_russian(
    russian_build: DocsBuild,
) -> None:
    text = text_of(russian_build.page("docs/examples/plot_01_vector_add.html"))
    assert "Размеры, при которых один вызов перемещает" in text
    caption = re.search(
        r'<p class="figure-provenance">(.*?)</p>',
        russian_build.page("docs/examples/plot_01_vector_add.html"),
        re.S,
    )
    assert caption and text_of(caption.group(1)).startswith(("Записано командой", "Измерено"))
    # The English edition's copy of the page, built first, kept its English output.
    english = russian_build.html.parent / "en" / "docs/examples/plot_01_vector_add.html"
    assert "Sizes where one call moves" in text_of(english.read_text(encoding="utf-8"))


def test_russian_lesson_5_glues_measured_sentences_in_russian(russian_build: DocsBuild) -> None:
    # Paragraphs that quote the records are glued whole, in the build's language; and the
    # toggle of a hidden cell is in Russian too.
    html = russian_build.page("docs/lessons/05_measuring.html")
    text = text_of(html)
    assert "Вместе два потолка образуют" in text
    assert "Together the two ceilings" not in text
    assert "Показать код ячейки" in html and "Show code cell" not in html


# Six English words in a row: a sentence left untranslated. Code, its output and the
# records' own words (a provider's reason for being unavailable) stay as they are.
_WORD = r"[A-Za-z][A-Za-z'\u2019-]*"  # an apostrophe may be typographic (U+2019)
_ENGLISH_RUN = re.compile(rf"(?:{_WORD}[ ,;:()]+){{5,}}{_WORD}")
_NOT_PROSE = re.compile(
    r"<!--.*?-->|<(script|style|pre|code|svg|table)\b.*?</\1>|<span class=\"pre\">.*?</span>",
    re.S,
)
# Prose that is English in both editions on purpose: a glossary of English terms the
# Russian text uses, and an error message quoted as CUDA prints it.
ENGLISH_ON_PURPOSE = (
    "warp, TMA, SASS, PTX, LLVM-IR, SM, SIMT",
    "operation not permitted when stream is capturing",
)


def english_sentences(html: str) -> list[str]:
    """Runs of six or more English words in a page's prose (outside code and tables)."""
    prose = unescape(re.sub(r"<[^>]+>", "\n", _NOT_PROSE.sub(" ", html)))
    return [run.group(0) for line in prose.splitlines() for run in _ENGLISH_RUN.finditer(line)]


def _records(root: Path = ROOT) -> list[dict]:
    paths = sorted((root / "gallery" / "measurements").glob("*/*.json"))
    return [committed_doc(path) for path in paths]


def test_a_fifo_named_like_a_record_is_named_without_hanging(tmp_path: Path) -> None:
    # Before: reading the records' reasons blocked forever on a FIFO named like a record.
    folder = tmp_path / "gallery" / "measurements" / "h100"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "vector_add.json")
    with within(10), pytest.raises(OSError, match=r"h100/vector_add\.json: cannot read it"):
        _records(tmp_path)


def recorded_reasons() -> str:
    """Every ``unavailable`` reason of the records, which pages quote as recorded."""
    return " ".join(
        reason for record in _records() for reason in record.get("unavailable", {}).values()
    )


def series_words() -> set[str]:
    """The words of the records' series names (``SDPA flash``, ``torch.compile``): a list
    of names is not a sentence."""
    return {word for record in _records() for name in record["series"] for word in name.split()}


def test_english_sentences_finds_an_untranslated_caption() -> None:
    html = (
        "<p>Время одного вызова.</p><figcaption>Host time of one call on tiny inputs, "
        "per launcher</figcaption><pre>print('left as it is in the code')</pre>"
    )
    assert english_sentences(html) == ["Host time of one call on tiny inputs, per launcher"]


def test_russian_pages_have_no_english_sentences(russian_build: DocsBuild) -> None:
    recorded, names = recorded_reasons(), series_words()
    found = {}
    for page in sorted(russian_build.html.rglob("*.html")):
        name = page.relative_to(russian_build.html).as_posix()
        if name.startswith(("_", "genindex", "search")):
            continue
        runs = [
            run
            for run in english_sentences(page.read_text(encoding="utf-8"))
            if run not in recorded
            and not any(kept in run for kept in ENGLISH_ON_PURPOSE)
            and not set(re.findall(r"[^\s,;:()]+", run)) <= names
        ]
        if runs:
            found[name] = runs
    assert not found, found


_HEADING = re.compile(r"<h([1-4])\b[^>]*>(.*?)</h\1>", re.S)


def headings_without_russian(html: str) -> list[str]:
    """The section headings of a page that hold no Cyrillic letter: a heading left in
    English (one word, such as "Exercises", is too short for english_sentences)."""
    texts = (unescape(re.sub(r"<[^>]+>", "", match.group(2))) for match in _HEADING.finditer(html))
    texts = (text.replace("\u00b6", "").replace("#", "").strip() for text in texts)
    return [text for text in texts if text and not re.search(r"[\u0400-\u04ff]", text)]


def test_headings_without_russian_finds_an_english_heading() -> None:
    html = '<h2>Упражнения<a class="headerlink" href="#x">\u00b6</a></h2><h2>Exercises</h2>'
    assert headings_without_russian(html) == ["Exercises"]


# Headings that are names, the same in both editions.
HEADINGS_THAT_ARE_NAMES = ("RMSNorm", "FlashAttention", "Gluon",
                           "Autograd: torch.autograd.Function")  # fmt: skip


def test_russian_pages_have_no_english_headings(russian_build: DocsBuild) -> None:
    # The wip27 merge once dropped "Exercises" from four pages' catalogs: their Russian
    # pages showed the English heading, and no other test noticed.
    found = {}
    for page in sorted(russian_build.html.rglob("*.html")):
        name = page.relative_to(russian_build.html).as_posix()
        if name.startswith(("_", "genindex", "search")):
            continue
        english = [heading for heading in headings_without_russian(page.read_text("utf-8"))
                   if heading not in HEADINGS_THAT_ARE_NAMES]  # fmt: skip
        if english:
            found[name] = english
    assert not found, found


_CARD = re.compile(
    r'<div class="sphx-glr-thumbcontainer" tooltip="([^"]*)">.*?href="([^"#]+)".*?'
    r'<div class="sphx-glr-thumbnail-title">([^<]*)</div>',
    re.S,
)


def test_the_russian_gallery_s_cards_carry_the_russian_page_titles(
    russian_build: DocsBuild,
) -> None:
    # sphinx-gallery writes its cards as raw HTML from the English scripts: the Russian
    # gallery index showed "Vector addition" and English tooltips under a Russian menu.
    index = russian_build.page("docs/examples/index.html")
    cards = _CARD.findall(index)
    assert len(cards) == len(list((ROOT / "gallery").glob("plot_*.py"))), cards
    for tooltip, target, title in cards:
        page = russian_build.page(f"docs/examples/{target}")
        heading = text_of(re.search(r"<h1>(.*?)</h1>", page, re.S).group(1)).rstrip("#")
        assert unescape(title) == heading, target
        assert re.search(r"[\u0400-\u04ff]", unescape(tooltip)), (target, tooltip)
        assert unescape(tooltip) in text_of(page), target


def test_the_themes_own_words_are_russian_too(russian_build: DocsBuild) -> None:
    # The theme's Russian catalog leaves "Back to top" empty: the button was English.
    page = (russian_build.html / "docs" / "lessons" / "01_intro.html").read_text("utf-8")
    assert "Наверх" in page and "Back to top" not in page


def test_running_time_line_says_where_it_ran_in_the_edition_language(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # sphinx-gallery's line gave the interpreter's seconds on the CPU with nothing to
    # tell them from a GPU's.
    from types import SimpleNamespace

    import editions
    from docutils import nodes

    from kernels.text import messages

    def line() -> nodes.document:
        document = nodes.document(None, None)
        label = nodes.strong(text="Total running time of the script:")
        document += nodes.paragraph("", "", label, nodes.Text(" (0 minutes 3.653 seconds)"))
        return document

    monkeypatch.setattr(
        editions, "describe_device", lambda: "the CPU, through Triton's interpreter"
    )
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    russian = line()
    editions.qualify_running_time(SimpleNamespace(config=SimpleNamespace(language="ru")), russian)
    assert russian.astext() == (
        "Общее время выполнения скрипта: (0 мин 3,653 с; ядра на CPU, через интерпретатор Triton)"  # noqa: RUF001
    )
    monkeypatch.setattr(editions, "describe_device", lambda: "NVIDIA H100 80GB HBM3")
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "en")
    english = line()
    editions.qualify_running_time(SimpleNamespace(config=SimpleNamespace(language="en")), english)
    assert english.astext() == (
        "Total running time of the script: "
        "(0 minutes 3.653 seconds; kernels on NVIDIA H100 80GB HBM3)"
    )


def test_the_alt_texts_of_a_lesson_s_figures_are_read_from_its_source() -> None:
    from figure_alts import alt_texts

    source = (
        "```{glue:figure} roofline_figure\n:alt: TFLOP/s against FLOP per byte\n:name: f\n```\n"
        '```{code-cell} python\n:mystnb: {image: {alt: "Six rows, 0 to 5."}}\nshow()\n```\n'
    )
    assert alt_texts(source) == ["TFLOP/s against FLOP per byte", "Six rows, 0 to 5."]


def test_russian_figures_have_russian_alt_text(russian_build: DocsBuild) -> None:
    # The lessons' figures kept their English alt text: the catalogs are extracted with
    # the lessons not run, and so without the figures that carry it.
    found = {}
    for page in sorted(russian_build.html.rglob("*.html")):
        name = page.relative_to(russian_build.html).as_posix()
        alts = re.findall(r'<img [^>]*\balt="([^"]+)"', page.read_text(encoding="utf-8"))
        # An alt text of names only ("GROUP_M = 1; GROUP_M = 3", two panels titled with
        # the code's values) reads the same in both editions.
        english = [
            unescape(alt)
            for alt in alts
            if not re.search(r"[\u0400-\u04ff]", alt) and re.search(r"\b[a-z]{3,}\b", alt)
        ]
        if english:
            found[name] = english
    assert not found, found

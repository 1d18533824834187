"""The site's two editions: the site root, the language switcher on every page, and a
build of the Russian edition (the tests' other builds are English only, for speed)."""

import re
import sys
from html import unescape

from conftest import ROOT, DocsBuild

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


def test_russian_edition_builds_without_warnings(russian_build: DocsBuild) -> None:
    log = russian_build.log.replace("[IPKernelApp] WARNING", "")
    assert russian_build.returncode == 0, russian_build.log[-5000:]
    assert not re.search(r"\bWARNING\b", log), russian_build.log[-5000:]


def test_russian_lesson_1_is_in_russian_with_its_quiz(russian_build: DocsBuild) -> None:
    html = russian_build.page("docs/lessons/01_intro.html")
    assert '<html lang="ru"' in html
    text = text_of(html)
    assert "Введение в программирование на Triton" in text
    assert "Примечание редакции" in text
    assert "Вопрос 1" in text and "Question 1" not in text
    assert "Чем модель программирования Triton отличается от модели CUDA?" in text
    # The kernel ran for this edition too.
    assert "3 programs of 4 elements" in text


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

"""One real build of the site (as the README's build line runs it), then its pages."""

import re
from html import unescape

import pytest
from conftest import ROOT, DocsBuild

from kernels import measurements
from quiz.bank import load_bank


def text_of(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())


def test_build_succeeds_without_warnings(docs_build: DocsBuild) -> None:
    assert docs_build.returncode == 0, docs_build.log[-5000:]
    assert "build succeeded" in docs_build.log
    assert not re.search(r"\bWARNING\b", docs_build.log.replace("[IPKernelApp] WARNING", "")), (
        docs_build.log[-5000:]
    )


def test_site_root_leads_to_the_home_page(docs_build: DocsBuild) -> None:
    assert "url=docs/index.html" in docs_build.page("index.html")


def test_home_page_shows_the_measured_headline(docs_build: DocsBuild) -> None:
    page = text_of(docs_build.page("docs/index.html"))
    record = measurements.load("vector_add")
    share = 100 * measurements.worst_fraction_of_ceiling(record, "Triton", 2**24)
    assert f"{share:.0f}% or more of the {record['ceiling']['value'] / 1000:.2f} TB/s" in page
    assert record["environment"]["gpu"] in page
    html = docs_build.page("docs/index.html")
    for target in (
        "lessons/01_intro.html",
        "examples/index.html",
        "examples/plot_01_vector_add.html",
    ):
        assert f'href="{target}"' in html, target


def test_lesson_has_five_questions_of_four_dropdowns(docs_build: DocsBuild) -> None:
    html = docs_build.page("docs/lessons/01_intro.html")
    questions = html.split('class="quiz-question')[1:]
    assert len(questions) == 5
    assert [q.count("<details") for q in questions] == [4] * 5
    assert all(q.count("<strong>Correct.</strong>") == 1 for q in questions)
    text = text_of(html)
    assert "What is the 'Ninja Gap' in the context of GPU programming?" in text


def test_lesson_ran_its_kernel_during_the_build(docs_build: DocsBuild) -> None:
    text = text_of(docs_build.page("docs/lessons/01_intro.html"))
    assert "Kernels run on the CPU, through Triton's interpreter." in text
    assert "tensor([100., 101., 102., 103., 104., 105., 106., 107., 108., 109.])" in text
    assert "3 programs of 4 elements:" in text
    assert "Both launches match PyTorch's x + y." in text
    assert "TypeError: x is float32 but y is float16" in text


def test_lesson_covers_the_seed(docs_build: DocsBuild) -> None:
    text = text_of(docs_build.page("docs/lessons/01_intro.html"))
    for topic in (
        "Ninja gap",
        "PyTorch",
        "CUDA",
        "LLVM-IR",
        "tile model",
        "thread model",
        "memory coalescing",
        "shared memory",
        "SRAM",
        "streaming multiprocessors",
        "FlashAttention",
        "synchronising threads",
    ):
        assert topic in text, topic


def test_gallery_page_has_its_figure_and_provenance(docs_build: DocsBuild) -> None:
    html = docs_build.page("docs/examples/plot_01_vector_add.html")
    images = re.findall(r'<img[^>]+src="([^"]+sphx_glr_plot_01_vector_add_001\.png)"', html)
    assert images and (docs_build.html / "docs/examples" / images[0]).resolve().exists()
    caption = re.search(r'<p class="figure-provenance">(.*?)</p>', html, re.S)
    assert caption, "the figure has no provenance caption"
    text = text_of(caption.group(1))
    environment = measurements.load("vector_add")["environment"]
    for key in ("gpu", "driver", "cuda", "torch", "triton", "command"):
        assert environment[key] in text, key
    assert environment["date"][:10] in text
    assert "built without a GPU" in text
    body = text_of(html)
    # The kernel is shown from its module, and the check ran and printed.
    assert "def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):" in body
    assert "Triton vector_add, N=98,432, bfloat16: relative error" in body


GALLERY_PAGES = sorted(p.stem for p in (ROOT / "gallery").glob("plot_*.py"))
QUIZ_OF_PAGE = {
    "plot_02_softmax": "softmax",
    "plot_03_layer_norm": "layer_norm",
    "plot_04_rms_norm": "rms_norm",
    "plot_05_dropout": "dropout",
    "plot_06_cross_entropy": "cross_entropy",
    "plot_07_matmul": "matmul",
    "plot_08_flash_attention": "flash_attention",
}
FIGURES_OF_PAGE = {
    "plot_03_layer_norm": 2,
    "plot_06_cross_entropy": 3,
    "plot_07_matmul": 3,
    "plot_08_flash_attention": 5,
}


@pytest.mark.parametrize("page", GALLERY_PAGES)
def test_every_gallery_page_has_its_figures_with_provenance(
    docs_build: DocsBuild, page: str
) -> None:
    html = docs_build.page(f"docs/examples/{page}.html")
    expected = FIGURES_OF_PAGE.get(page, 1)
    assert len(re.findall(rf'<img[^>]+src="[^"]*sphx_glr_{page}_\d+\.png"', html)) == expected
    assert html.count('<p class="figure-provenance">') == expected
    assert "Triton " in text_of(html) and ": OK" in text_of(html)


@pytest.mark.parametrize(("page", "bank"), QUIZ_OF_PAGE.items())
def test_gallery_quiz_renders_every_question_of_its_bank(
    docs_build: DocsBuild, page: str, bank: str
) -> None:
    questions = load_bank(ROOT / "quiz" / f"{bank}.yaml").questions
    assert 3 <= len(questions) <= 5
    html = docs_build.page(f"docs/examples/{page}.html")
    rendered = html.split('class="quiz-question')[1:]
    assert [q.count("<details") for q in rendered] == [len(q.options) for q in questions]


def test_constexpr_lesson_shows_real_compiler_output(docs_build: DocsBuild) -> None:
    html = docs_build.page("docs/lessons/02_constexpr.html")
    text = text_of(html)
    assert (
        "BLOCK_SIZE= 128: 1 elements per thread, in runs of 1; loads ['ld.global.b32'] x2" in text
    )
    assert (
        "BLOCK_SIZE=1024: 8 elements per thread, in runs of 4; loads ['ld.global.v4.b32'] x4"
        in text
    )
    assert "sizePerThread = [4]" in text
    questions = html.split('class="quiz-question')[1:]
    assert [q.count("<details") for q in questions] == [4, 4, 4]

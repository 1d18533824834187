"""The footer line of every page: the course's version, the commit, Triton's and
PyTorch's versions; in the Russian edition in Russian; escaped."""

import sys
from datetime import UTC, datetime
from importlib import metadata

import pytest
from conftest import ROOT, DocsBuild

from kernels.harness import fingerprint
from kernels.text import messages

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import build_info


def test_the_line_names_the_version_the_commit_and_the_libraries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(fingerprint.COMMIT_VARIABLE, "0123456789abcdef0123456789abcdef01234567")
    monkeypatch.setattr(build_info, "commit_date", lambda: "2026-12-06")
    line = build_info.build_line()
    today = datetime.now(UTC).date().isoformat()
    assert line == (
        f"ninja_gap {build_info.course_version()}, built on {today} from commit 0123456789ab of "
        f"2026-12-06 with Triton {metadata.version('triton')} and PyTorch "
        f"{metadata.version('torch')}."
    )
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    assert build_info.build_line().startswith(
        f"ninja_gap {build_info.course_version()}, собран {today} из коммита 0123456789ab от "
        "2026-12-06"
    )


def test_outside_git_the_line_has_no_date(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    assert build_info.commit_date(tmp_path) is None
    monkeypatch.setattr(build_info, "commit_date", lambda: None)
    monkeypatch.setattr(fingerprint, "commit", lambda: "unknown")
    assert "from an unknown commit with Triton" in build_info.build_line()
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    assert "собран 20" in build_info.build_line() and "из неизвестного коммита" in (
        build_info.build_line()
    )


def test_every_page_s_footer_has_the_line(docs_build: DocsBuild) -> None:
    assert docs_build.returncode == 0, docs_build.log[-3000:]
    for page in ("docs/index.html", "docs/examples/plot_07_matmul.html"):
        footer = docs_build.page(page).split('class="build-info"')[1].split("</p>")[0]
        assert f"ninja_gap {build_info.course_version()}, built on " in footer
        assert f"Triton {metadata.version('triton')}" in footer

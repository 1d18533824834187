"""Settings of conf.py that come from the environment of a build."""

import runpy

import pytest
from conftest import ROOT


def configuration(monkeypatch: pytest.MonkeyPatch, **environment: str) -> dict:
    """conf.py's settings, read with ``environment`` set (conf.py also sets PYTHONPATH)."""
    monkeypatch.setenv("PYTHONPATH", "")
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "conf.py"))


def test_the_repository_link_is_shown_when_its_url_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NINJA_GAP_REPOSITORY_URL", raising=False)
    assert "icon_links" not in configuration(monkeypatch)["html_theme_options"]
    url = "https://example.org/ninja-gap"
    settings = configuration(monkeypatch, NINJA_GAP_REPOSITORY_URL=url)
    (link,) = settings["html_theme_options"]["icon_links"]
    assert link["url"] == url and settings["repository_url"] == url

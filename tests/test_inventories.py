"""The stored intersphinx inventories: every name they list exists in the installed torch
and Triton, and the built site links to both documentations."""

import importlib
import re
from pathlib import Path

import pytest
from conftest import DocsBuild

INVENTORIES = Path(__file__).resolve().parents[1] / "docs" / "inventories"


def inventory_names(path: Path) -> list[str]:
    """The names an inventory of Sphinx's version 1 format lists."""
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# Sphinx inventory version 1", path
    return [line.split()[0] for line in lines[3:]]


def resolve(name: str) -> object:
    """The object ``name`` names, importing its module; AttributeError if there is none."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute)
        return target
    raise ImportError(name)


@pytest.mark.parametrize("inventory", ["torch.inv", "triton.inv"])
def test_every_listed_name_exists(inventory: str) -> None:
    names = inventory_names(INVENTORIES / inventory)
    assert names and len(names) == len(set(names))
    for name in names:
        assert resolve(name) is not None, name


def test_pages_link_into_pytorch_and_triton_docs(docs_build: DocsBuild) -> None:
    html = docs_build.page("docs/lessons/01_intro.html")
    links = re.findall(r'href="(https://[^"]+)"', html)
    triton_load = "https://triton-lang.org/main/python-api/generated/triton.language.load.html"
    assert f"{triton_load}#triton.language.load" in links
    assert "https://docs.pytorch.org/docs/stable/testing.html#torch.testing.assert_close" in links

"""The course's package on the site: the wheel and the source archive built with every
HTML build, named by the version, linked from the home page, and holding the course."""

import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, DocsBuild

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import package_downloads
from build_info import course_version


def test_the_files_are_named_by_the_version() -> None:
    assert package_downloads.package_file("wheel", "1.2.3") == "ninja_gap-1.2.3-py3-none-any.whl"
    assert package_downloads.package_file("sdist", "1.2.3") == "ninja_gap-1.2.3.tar.gz"
    with pytest.raises(ValueError, match="'egg': the package files are 'wheel' and 'sdist'"):
        package_downloads.package_file("egg", "1.2.3")


def test_the_site_offers_the_course_s_wheel_and_source(docs_build: DocsBuild) -> None:
    assert docs_build.returncode == 0, docs_build.log[-3000:]
    folder = docs_build.html / package_downloads.PACKAGE_FOLDER
    version = course_version(ROOT)
    wheel = folder / package_downloads.package_file("wheel", version)
    sdist = folder / package_downloads.package_file("sdist", version)
    assert sorted(p.name for p in folder.iterdir()) == sorted([wheel.name, sdist.name])
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"ninja_gap/kernels/exercises/__init__.py", "ninja_gap/quiz/bank.py",
            "ninja_gap/measurements/h100/matmul.json"} <= names  # fmt: skip
    with tarfile.open(sdist) as archive:
        assert f"ninja_gap-{version}/pyproject.toml" in archive.getnames()
    # The home page links to both, and the links resolve.
    home = docs_build.page("docs/index.html")
    for path in (wheel, sdist):
        href = f"../{package_downloads.PACKAGE_FOLDER}/{path.name}"
        assert f'href="{href}"' in home
        assert (docs_build.html / "docs" / href).resolve() == path.resolve()


def test_a_copy_of_the_sources_skips_links_out_of_them_and_what_is_not_a_source(
    tmp_path: Path,
) -> None:
    # A checkout with a linked environment elsewhere (a contributor's `.nox_link`)
    # once put 4.4 GB into every copy the tests and the package build made.
    outside, sources = tmp_path / "venvs", tmp_path / "course"
    (outside / "lib").mkdir(parents=True)
    (outside / "lib" / "big.so").write_bytes(b"\0" * 1024)
    (sources / "kernels").mkdir(parents=True)
    (sources / "kernels" / "add.py").write_text("x = 1\n", encoding="utf-8")
    (sources / ".nox").mkdir()
    (sources / ".nox" / "env").write_text("", encoding="utf-8")
    (sources / ".nox_link").symlink_to(outside)
    (sources / "kernels" / "alias.py").symlink_to("add.py")

    copy = package_downloads.copy_sources(sources, tmp_path / "copy")

    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*")) == [
        "kernels",
        "kernels/add.py",
        "kernels/alias.py",
    ]
    assert (copy / "kernels" / "alias.py").is_symlink()

"""What a code fingerprint reads: code that runs, not how it is commented or how an
import of the package is spelled."""

from kernels import fingerprint


def test_a_relative_import_counts_as_the_absolute_one_it_means() -> None:
    relative = "from .spec import BenchmarkSpec\nfrom . import runtime\n"
    absolute = "from kernels.spec import BenchmarkSpec\nfrom kernels import runtime\n"
    assert fingerprint.normalised_source(relative) == fingerprint.normalised_source(absolute)
    assert fingerprint.imported_modules(relative) == {"kernels.spec", "kernels.runtime"}


def test_another_import_still_changes_the_code() -> None:
    one = fingerprint.normalised_source("from .spec import BenchmarkSpec\n")
    other = fingerprint.normalised_source("from .checks import BenchmarkSpec\n")
    assert one != other


def test_an_installed_module_name_has_the_same_digests() -> None:
    assert fingerprint.code_digests("ninja_gap.kernels.vector_add") == (
        fingerprint.code_digests("kernels.vector_add")
    )
    assert "kernels/vector_add.py" in fingerprint.code_digests("kernels.vector_add")

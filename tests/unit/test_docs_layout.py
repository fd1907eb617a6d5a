"""The layout documents say what exists: every file they name is in the repository, every
module of `core/prme` opens with a line saying what it owns, and the architecture's module
map has a line for each of those modules."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

# The repository root, wherever in tests/ this file sits.
ROOT = next(
    parent for parent in Path(__file__).resolve().parents if (parent / "pyproject.toml").is_file()
)
PACKAGE = ROOT / "core" / "prme"
LAYOUT_DOCS = (ROOT / "docs" / "architecture.md", ROOT / "README.md")
# Where a path in the documents may be relative to: the repository, `core/` (prme/...) and
# the package (engine/store.py).
PATH_BASES = (ROOT, ROOT / "core", PACKAGE)
# Folders searched for a file named without its folder (`cli.py`, a test file's name).
NAME_SEARCH = ("core", "functions", "infra", "localstack", "benchmarks", "tests", "docs")

# A file path: words joined by slashes ending in a file extension, not part of a URL or of
# an HTTP route (/openapi.json).
_PATH = re.compile(
    r"(?<![\w/.:-])((?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.(?:py|md|toml|json|yaml|yml|sh|txt|cfg))\b"
)


def _named_paths(text: str) -> Iterator[tuple[str, Path | None]]:
    """Each file path the text names, with the package folder it is relative to when it is
    a line of the module map (under `prme.backends`, `aws/service.py` is in backends/)."""
    package: Path | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            package = PACKAGE if line.startswith("## Module map") else None
        header = re.match(r"`prme(?:\.(\w+))?`", line)
        if header and package is not None:
            package = PACKAGE / header.group(1) if header.group(1) else PACKAGE
        for match in _PATH.finditer(line):
            yield match.group(1), package


def _exists(path: str, package: Path | None) -> bool:
    # A benchmark result a document quotes is committed like any other file (and tracked:
    # tests/integration/test_benchmark_results.py).
    if package is not None:
        return (package / path).is_file()
    if "/" not in path:
        if (ROOT / path).is_file():
            return True
        return any(
            found.is_file()
            for folder in NAME_SEARCH
            for found in (ROOT / folder).rglob(path)
            if "node_modules" not in found.parts and "cdk.out" not in found.parts
        )
    return any((base / path).is_file() for base in PATH_BASES)


def missing_paths(text: str) -> list[str]:
    """The file paths a document names that the repository does not have."""
    return sorted({path for path, package in _named_paths(text) if not _exists(path, package)})


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def docstring_problem(source: str) -> str | None:
    """What is wrong with a module's opening docstring line, if anything."""
    docstring = ast.get_docstring(ast.parse(source), clean=False)
    if docstring is None:
        return "no module docstring"
    if not docstring.split("\n", 1)[0].strip():
        return "the docstring's first line is empty"
    return None


def module_map_gaps(architecture: str) -> list[str]:
    """Modules of core/prme that the architecture's module map has no line for.

    The map is a list per package, under a line naming the package (`prme.engine`); each
    module is named by its path inside that package (`store.py`, `embedded/sqlite.py`).
    """
    section = architecture.split("## Module map", 1)[-1].split("\n## ", 1)[0]
    named: dict[str, set[str]] = {}
    package = ""
    for line in section.splitlines():
        header = re.match(r"`(prme(?:\.\w+)?)`", line)
        if header:
            package = header.group(1)
            named.setdefault(package, set())
        elif line.startswith("- ") and package:
            named[package].update(re.findall(r"`([\w/]+\.py)`", line.split(":", 1)[0]))
    gaps = []
    for path in modules():
        relative = path.relative_to(PACKAGE)
        if len(relative.parts) == 1:
            package, inside = "prme", relative.as_posix()
        else:
            package, inside = f"prme.{relative.parts[0]}", "/".join(relative.parts[1:])
        names = named.get(package)
        if names is None:
            gaps.append(f"{package} (no list)")
        elif inside == "__init__.py" and package != "prme":
            continue  # the package's own list covers its __init__
        elif inside.endswith("/__init__.py"):
            folder = inside.removesuffix("__init__.py")
            if not any(name.startswith(folder) for name in names):
                gaps.append(f"{package}.{folder.rstrip('/')}")
        elif inside not in names:
            gaps.append(f"{package}: {inside}")
    return gaps


def test_layout_documents_name_only_files_that_exist() -> None:
    missing = {doc.name: missing_paths(doc.read_text()) for doc in LAYOUT_DOCS}
    assert missing == {doc.name: [] for doc in LAYOUT_DOCS}


def test_every_core_module_opens_with_what_it_owns() -> None:
    problems = {
        str(path.relative_to(ROOT)): problem
        for path in modules()
        if (problem := docstring_problem(path.read_text())) is not None
    }
    assert problems == {}


def test_the_module_map_has_a_line_for_every_core_module() -> None:
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    assert module_map_gaps(architecture) == []


def test_the_checks_catch_what_they_are_for() -> None:
    # A deleted module's name, a route and a URL: only the first is a file reference.
    text = "See `engine/gone.py`, `GET /openapi.json` and https://example.org/a/b.json."
    assert missing_paths(text) == ["engine/gone.py"]
    assert missing_paths("`engine/store.py`, `prme/settings.py`, `cli.py`") == []
    # A benchmark's result file is no exception: a quoted run is committed.
    assert missing_paths("`benchmarks/results/gone.json`") == ["benchmarks/results/gone.json"]
    assert docstring_problem("import os\n") == "no module docstring"
    assert docstring_problem('"""\nOwns nothing."""\n') == "the docstring's first line is empty"
    assert docstring_problem('"""Owns the ledger."""\n') is None
    assert "prme.engine: store.py" in module_map_gaps("## Module map\n\n`prme.engine`\n")

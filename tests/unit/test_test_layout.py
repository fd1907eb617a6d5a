"""The tests' layout: each test module sits in the folder of what it tests, helpers live only in
tests/harness, and tests/unit reaches nothing that opens a socket or starts a process."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
TEST_FOLDERS = {"unit", "engine", "backends", "api", "integration", "infra", "browser"}
# Folders of data, not tests.
DATA_FOLDERS = {"events", "fixtures"}
# What a unit test must not reach, directly or through the harness modules it imports:
# network clients and servers, subprocesses, and the harness parts built on them.
NETWORK_MODULES = {
    "socket",
    "subprocess",
    "http.server",
    "http.client",
    "urllib.request",
    "httpx",
    "opensearchpy",
    "mcp",
    "uvicorn",
    "tests.harness.aws",
    "tests.harness.iam",
    "tests.harness.opensearch_iam_proxy",
    "tests.harness.lambda_events",
    "tests.harness.cloudformation",
    "tests.harness.stack_template",
    "tests.harness.cli",
    "tests.harness.crash_writer",
    "playwright",
    "tests.harness.browser",
    "tests.harness.live_server",
}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_test_module_sits_in_a_test_folder() -> None:
    misplaced = [
        str(p.relative_to(TESTS))
        for p in python_files()
        if p.name.startswith("test_")
        and (len(p.relative_to(TESTS).parts) != 2 or p.parent.name not in TEST_FOLDERS)
    ]
    assert misplaced == []


def test_helpers_live_in_the_harness_not_beside_the_tests() -> None:
    allowed_beside_tests = {"__init__.py", "conftest.py"}
    stray = [
        str(p.relative_to(TESTS))
        for p in python_files()
        if not p.name.startswith("test_")
        and p.name not in allowed_beside_tests
        and p.relative_to(TESTS).parts[0] not in {"harness", *DATA_FOLDERS}
    ]
    assert stray == []


def test_no_test_module_imports_another_test_module() -> None:
    borrowed = {
        str(p.relative_to(TESTS)): sorted(
            name
            for name in imported_modules(p)
            if name.startswith("tests.")
            and not name.startswith("tests.harness")
            and any(part.startswith(("test_", "conftest")) for part in name.split("."))
        )
        for p in python_files()
    }
    assert {path: names for path, names in borrowed.items() if names} == {}


def reached_from(path: Path) -> set[str]:
    """The modules `path` imports, following imports through the harness modules it uses."""
    reached: set[str] = set()
    pending = [path]
    seen: set[Path] = set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        for name in imported_modules(current):
            reached.add(name)
            if name.startswith("tests.harness."):
                module = TESTS / "harness" / f"{name.split('.')[2]}.py"
                if module.exists():
                    pending.append(module)
    return reached


def test_unit_tests_reach_no_network_or_process_module() -> None:
    reaching = {
        p.name: sorted(
            name
            for name in reached_from(p)
            if any(name == banned or name.startswith(f"{banned}.") for banned in NETWORK_MODULES)
        )
        for p in sorted((TESTS / "unit").glob("test_*.py"))
    }
    assert {name: modules for name, modules in reaching.items() if modules} == {}

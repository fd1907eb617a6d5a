"""The user docs agree with the code and with each other: the TTL table in concepts.md is the
engine's, every relative link of the newcomer pages reaches a file, and a ```python block is
either run by the docs tests or visibly marked not-run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prme.engine.config import DEFAULT_TTL_DAYS
from tests.harness.doc_blocks import NOT_RUN, python_blocks, runnable_code

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NEWCOMER_PAGES = [
    ROOT / "README.md",
    DOCS / "quickstart.md",
    DOCS / "concepts.md",
    DOCS / "chat-transcript.md",
    *sorted((DOCS / "recipes").glob("*.md")),
]
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
_TTL_ROW = re.compile(r"^\| (?P<types>`.+?`.*?) \| (?P<days>\d+|never) \|$", re.MULTILINE)


def test_concepts_ttl_table_is_the_engines_default() -> None:
    documented: dict[str, int | None] = {}
    for row in _TTL_ROW.finditer((DOCS / "concepts.md").read_text()):
        days = None if row["days"] == "never" else int(row["days"])
        for node_type in re.findall(r"`(\w+)`", row["types"]):
            documented[node_type] = days
    assert documented == {node_type.value: days for node_type, days in DEFAULT_TTL_DAYS.items()}


@pytest.mark.parametrize("page", NEWCOMER_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_reach_a_file(page: Path) -> None:
    targets = [t for t in _LINK.findall(page.read_text()) if "://" not in t]
    assert targets, "a newcomer page links somewhere"
    assert [t for t in targets if not (page.parent / t).exists()] == []


def test_quickstart_and_recipes_link_the_next_pages() -> None:
    quickstart = _LINK.findall((DOCS / "quickstart.md").read_text())
    assert {
        "concepts.md",
        "managing-memory.md",
        "mcp.md",
        "chat-transcript.md",
        "recipes/README.md",
    } <= set(quickstart)
    recipes = set(_LINK.findall((DOCS / "recipes" / "README.md").read_text()))
    assert {"../chat-transcript.md", "langgraph.md", "openai-agents.md", "llamaindex.md"} <= recipes
    # The README points at the quickstart before its first section.
    assert "(docs/quickstart.md)" in (ROOT / "README.md").read_text().split("\n## ", 1)[0]


def test_blocks_run_unless_marked_not_run() -> None:
    page = "```python\nran = 1\n```\n\n```python not-run\nremote()\n```\n\n```bash\nls\n```\n"
    assert [(b.code, b.runs) for b in python_blocks(page)] == [
        ("ran = 1\n", True),
        ("remote()\n", False),
    ]
    assert runnable_code(page) == "ran = 1\n"


def test_an_unknown_marker_is_refused_not_skipped() -> None:
    with pytest.raises(ValueError, match=NOT_RUN):
        python_blocks("```python no-run\nremote()\n```\n")

"""Every ```python block in docs/ runs as written: the examples are part of the contract.
(A block marked ```python not-run is shown but not run: see tests/harness/doc_blocks.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.doc_blocks import python_blocks, runnable_code

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(p for p in DOCS.glob("*.md") if runnable_code(p.read_text()))


def test_capability_pages_have_examples() -> None:
    names = {p.name for p in PAGES}
    assert {"relevance.md", "answer-citations.md", "receipts.md"} <= names


def test_every_docs_block_is_run_or_marked_not_run() -> None:
    # python_blocks refuses an unknown marker. Left out on purpose: the quickstart's remote
    # client (until it exists) and the agents recipe's run against a real model (its test
    # runs the same agent on a scripted model); nothing else.
    markdown = sorted(DOCS.rglob("*.md"))
    left_out = {
        page.relative_to(DOCS).as_posix(): sum(not b.runs for b in python_blocks(page.read_text()))
        for page in markdown
    }
    assert {page: count for page, count in left_out.items() if count} == {
        "quickstart.md": 1,
        "recipes/openai-agents.md": 1,
    }


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_docs_example_runs(page: Path, tmp_path: Path) -> None:
    code = runnable_code(page.read_text())
    # The embedded default, whatever the test process was configured with.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRME_")}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{page.name} example failed:\n{result.stderr[-3000:]}"

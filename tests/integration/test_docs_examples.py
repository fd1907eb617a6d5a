"""Every ```python block in docs/ runs as written: the examples are part of the contract."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
PAGES = sorted(p for p in DOCS.glob("*.md") if _PYTHON_BLOCK.search(p.read_text()))


def test_capability_pages_have_examples() -> None:
    names = {p.name for p in PAGES}
    assert {"relevance.md", "answer-citations.md", "receipts.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_docs_example_runs(page: Path, tmp_path: Path) -> None:
    code = "\n".join(_PYTHON_BLOCK.findall(page.read_text()))
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

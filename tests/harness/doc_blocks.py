"""The Python blocks of a Markdown page, as the docs tests run them: a block fenced
```` ```python ```` runs, one fenced ```` ```python not-run ```` is shown to readers but not run
(for an interface that does not exist yet), and any other word after `python` is refused so a
typo cannot quietly take a block out of the tests."""

from __future__ import annotations

import re
from dataclasses import dataclass

# The marker of a block the tests leave out; the page says why next to it.
NOT_RUN = "not-run"
_FENCE = re.compile(r"^```python(?P<info>[^\n]*)\n(?P<code>.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class PythonBlock:
    code: str
    runs: bool


def python_blocks(markdown: str) -> list[PythonBlock]:
    """Every ```python block of the page, in order."""
    blocks = []
    for match in _FENCE.finditer(markdown):
        info = match.group("info").strip()
        if info not in ("", NOT_RUN):
            raise ValueError(f"unknown marker after ```python: {info!r} (only {NOT_RUN!r})")
        blocks.append(PythonBlock(code=match.group("code"), runs=info == ""))
    return blocks


def runnable_code(markdown: str) -> str:
    """The page's runnable blocks joined into one program, in page order."""
    return "\n".join(block.code for block in python_blocks(markdown) if block.runs)

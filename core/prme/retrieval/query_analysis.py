"""Cheap, language-level reading of a query: does it ask about the current state of things?"""

from __future__ import annotations

import re

# Words that ask for the present state rather than the history of something.
_CURRENT_STATE = re.compile(
    r"\b(current(ly)?|now|nowadays|latest|still|these days|at the moment|at present|"
    r"presently|anymore|any more|most recent(ly)?|up to date|today)\b",
    re.IGNORECASE,
)


def asks_for_current_state(query: str) -> bool:
    return _CURRENT_STATE.search(query) is not None

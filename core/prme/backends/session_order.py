"""The order every index adapter gives a record's session neighbours in."""

from __future__ import annotations

from collections.abc import Sequence


def alternate(before: Sequence[str], after: Sequence[str]) -> list[str]:
    """Nearest first: the first before, the first after, the second before, and so on."""
    out: list[str] = []
    for i in range(max(len(before), len(after))):
        out.extend(side[i] for side in (before, after) if i < len(side))
    return out

"""Identity-policy evaluation as AWS does it for plain statements: an Allow that matches the
action and resource grants, a matching Deny refuses (no conditions, no Not* elements)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _matches(pattern: str, value: str) -> bool:
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, value) is not None


def allows(statements: Iterable[dict[str, Any]], action: str, resource: str) -> bool:
    """Whether an Allow grants `action` on `resource` and no Deny refuses it (no conditions)."""
    allowed = False
    for statement in statements:
        if "Condition" in statement or "NotAction" in statement or "NotResource" in statement:
            raise ValueError("statements with conditions or Not* are not evaluated here")
        if any(_matches(p, action) for p in _listed(statement["Action"])) and any(
            _matches(p, resource) for p in _listed(statement["Resource"])
        ):
            if statement["Effect"] == "Deny":
                return False
            allowed = True
    return allowed

"""DynamoDB item sizes and capacity units by AWS's published rules, for where moto reports none.

Write units: each item's size rounded up to 1 KB, doubled inside a transaction. Read units:
4 KB steps, halved when eventually consistent, doubled inside a transaction; a query rounds
the sum of its items' sizes, a batch or transactional read rounds each item on its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
# AWS counts a few bytes of overhead per nested value and per list or map element.
_CONTAINER_OVERHEAD = 3
_ELEMENT_OVERHEAD = 1


def number_size(text: str) -> int:
    """Bytes of a number attribute: about one byte per two significant digits, plus one."""
    digits = Decimal(text).normalize().as_tuple().digits
    significant = len(digits) if any(digits) else 1
    return math.ceil(significant / 2) + 1


def value_size(value: dict[str, Any]) -> int:
    """Bytes of one attribute value in the low-level wire form (`{"S": ...}`, `{"M": ...}`)."""
    (kind, inner), *_ = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        return number_size(inner)
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in inner)
    if kind == "NS":
        return sum(number_size(n) for n in inner)
    if kind == "BS":
        return sum(len(b) for b in inner)
    if kind == "L":
        return _CONTAINER_OVERHEAD + sum(_ELEMENT_OVERHEAD + value_size(v) for v in inner)
    if kind == "M":
        return _CONTAINER_OVERHEAD + sum(
            _ELEMENT_OVERHEAD + len(name.encode()) + value_size(v) for name, v in inner.items()
        )
    raise ValueError(f"unknown DynamoDB type {kind}")


def item_size(item: dict[str, dict[str, Any]]) -> int:
    """Bytes DynamoDB bills for an item: attribute names plus their values."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def write_units(size_bytes: int, *, transactional: bool = False) -> int:
    """Write units for writing (or deleting, or checking in a transaction) one item."""
    units = max(1, math.ceil(size_bytes / WRITE_UNIT_BYTES))
    return units * 2 if transactional else units


def read_units(size_bytes: int, *, consistent: bool, transactional: bool = False) -> float:
    """Read units for reading `size_bytes` (one item, or a query's summed items)."""
    steps = max(1, math.ceil(size_bytes / READ_UNIT_BYTES))
    if transactional:
        return float(steps * 2)
    return float(steps) if consistent else steps / 2


def index_write_units(
    before: dict[str, Any] | None, after: dict[str, Any] | None, index_keys: Iterable[str]
) -> int:
    """Write units that ALL-projection indexes (one per partition key in `index_keys`) add for
    an item changing from `before` to `after`: a put into each index holding the new item,
    and a delete from each index that held the old one under another key."""
    units = 0
    for key in index_keys:
        old = before.get(key) if before else None
        new = after.get(key) if after else None
        if new is not None and after is not None:
            units += write_units(item_size(after))
        if old is not None and old != new and before is not None:
            units += write_units(item_size(before))
    return units

"""Canonical JSON and digests: the one way PRME hashes content, journals and contexts."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces, UTF-8 kept) for checksums and storage."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def checksum(value: Any) -> str:
    return sha256_text(canonical_json(value))

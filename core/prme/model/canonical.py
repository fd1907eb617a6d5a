"""Canonical JSON and digests: the one way PRME hashes content, journals and contexts."""

from __future__ import annotations

import hashlib
import json
from typing import Any

# The encoder `json.dumps` would build for these options on every call; it keeps no state
# between calls, so one instance serves every caller and thread.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces, UTF-8 kept) for checksums and storage."""
    return _CANONICAL.encode(value)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def checksum(value: Any) -> str:
    return sha256_text(canonical_json(value))

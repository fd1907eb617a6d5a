"""An index wrapper a test can take down and bring back, around any backend's real index."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prme.errors import IndexUnavailableError
from prme.model.records import OwnerKey
from prme.model.search import IndexDocument, IndexHits, IndexQuery


class SwitchableIndex:
    """Wraps a real index so a test can take it down and bring it back."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.down = False

    def upsert(self, documents: list[IndexDocument]) -> None:
        if self.down:
            raise IndexUnavailableError()
        self.inner.upsert(documents)

    def search(self, owner: OwnerKey, query: IndexQuery) -> IndexHits:
        if self.down:
            raise IndexUnavailableError()
        result: IndexHits = self.inner.search(owner, query)
        return result

    def session_neighbours(
        self, owner: OwnerKey, anchors: list[tuple[str, datetime, str]], radius: int
    ) -> list[list[str]]:
        if self.down:
            raise IndexUnavailableError()
        found: list[list[str]] = self.inner.session_neighbours(owner, anchors, radius)
        return found

    def session_predecessors(
        self, owner: OwnerKey, lookups: list[tuple[str, datetime]], embedding_model: str
    ) -> list[tuple[str, tuple[float, ...]] | None]:
        if self.down:
            raise IndexUnavailableError()
        found: list[tuple[str, tuple[float, ...]] | None] = self.inner.session_predecessors(
            owner, lookups, embedding_model
        )
        return found

    def delete(self, owner: OwnerKey, node_ids: list[str]) -> None:
        if self.down:
            raise IndexUnavailableError()
        self.inner.delete(owner, node_ids)

    def delete_owner(self, owner: OwnerKey) -> int:
        if self.down:
            raise IndexUnavailableError()
        removed: int = self.inner.delete_owner(owner)
        return removed

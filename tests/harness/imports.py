"""Bulk-import helpers for tests: items, a ledger that refuses marked items, a job store that
fails on cue (a consumer dying between its commit and its progress record)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from prme.engine.service import MemoryEngine
from prme.errors import PayloadTooLargeError, StorageUnavailableError
from prme.model.imports import BulkImportInput, ImportJob
from prme.model.records import IngestCommit, OwnerKey
from prme.ports import ImportJobStore, Ledger

# An item whose content holds this is refused by the `PoisonLedger`, as a store refuses an
# item it cannot hold.
POISON = "POISON-ITEM"


def import_input(count: int, *, poison_at: frozenset[int] = frozenset()) -> BulkImportInput:
    return BulkImportInput.model_validate(
        {
            "items": [
                {
                    "content": f"imported note {i} about kestrels"
                    + (f" {POISON}" if i in poison_at else ""),
                    "session_id": "bulk",
                }
                for i in range(count)
            ]
        }
    )


class PoisonLedger:
    """A ledger that refuses any ingest holding a poison item, as DynamoDB refuses an item it
    cannot store; everything else goes to the real ledger."""

    def __init__(self, inner: Ledger) -> None:
        self._inner = inner

    def commit_ingest(self, commit: IngestCommit) -> None:
        if any(POISON in event.content for event in commit.events):
            raise PayloadTooLargeError("item too large for the store")
        self._inner.commit_ingest(commit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class FailingProgressStore:
    """A job store whose progress saves fail while `failing` is set (the chunk's events are
    already committed then: the consumer died between the two)."""

    def __init__(self, inner: ImportJobStore) -> None:
        self._inner = inner
        self.failing = False

    def create_import(self, job: ImportJob) -> None:
        self._inner.create_import(job)

    def get_import(self, owner: OwnerKey, import_id: str) -> ImportJob | None:
        return self._inner.get_import(owner, import_id)

    def erase_owner(self, owner: OwnerKey) -> int:
        return self._inner.erase_owner(owner)

    def save_import(self, job: ImportJob, *, replacing: ImportJob) -> None:
        if self.failing:
            raise StorageUnavailableError("progress save lost")
        self._inner.save_import(job, replacing=replacing)


def with_poison(engine: MemoryEngine) -> MemoryEngine:
    deps = engine.deps
    return MemoryEngine(replace(deps, ledger=cast(Ledger, PoisonLedger(deps.ledger))))


def with_failing_progress(engine: MemoryEngine) -> tuple[MemoryEngine, FailingProgressStore]:
    deps = engine.deps
    assert deps.imports is not None
    store = FailingProgressStore(deps.imports)
    return MemoryEngine(replace(deps, imports=store)), store

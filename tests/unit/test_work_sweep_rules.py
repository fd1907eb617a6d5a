"""Sweeper and extraction rules: finished work stays finished, and a sweep cut short has
announced what it counted (but its last batch)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import pytest

from prme.engine.deps import EngineDeps
from prme.engine.service import MemoryEngine
from prme.errors import StorageUnavailableError
from prme.model.enums import ProcessingStatus, WorkStatus
from prme.model.inputs import IngestInput, StoreInput
from prme.model.records import OwnerKey, WorkItem
from tests.harness.engines import ALICE, Harness, memory_harness
from tests.harness.switchable_index import SwitchableIndex


class StalePendingListing:
    """A ledger whose listing of pending work answers from a snapshot, as a DynamoDB GSI may
    for a moment after a write; every other read is current."""

    def __init__(self, ledger: Any) -> None:
        self._ledger = ledger
        self.snapshot: dict[str, list[WorkItem]] = {}

    def freeze(self) -> None:
        for family in ("materialize", "extract"):
            self.snapshot[family] = self._ledger.list_pending_work(None, 1000, family=family)

    def list_pending_work(
        self, owner: OwnerKey | None, limit: int, *, family: str = "materialize"
    ) -> list[WorkItem]:
        return self.snapshot.get(family, [])[:limit]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ledger, name)


def _pending_ingest(h: Harness, ledger: Any) -> str:
    switch = SwitchableIndex(h.index)
    switch.down = True
    deps = h.engine.deps
    down = MemoryEngine(EngineDeps(**{**deps.__dict__, "index": switch, "ledger": ledger}))
    return down.ingest(ALICE, IngestInput(content="We ran 12 km with Ana.")).event_id


def test_a_stale_listing_never_brings_finished_work_back_to_pending() -> None:
    h = memory_harness()
    stale = StalePendingListing(h.ledger)
    engine = MemoryEngine(EngineDeps(**{**h.engine.deps.__dict__, "ledger": stale}))
    event_id = _pending_ingest(h, stale)
    h.clock.advance(seconds=3600)
    stale.freeze()  # the listing still shows both items pending...
    assert engine.process_materializations(ALICE).processed == 1
    assert engine.process_extractions(ALICE).processed == 1
    # ...when the sweeper reads it right after the workers finished
    report = engine.sweep_overdue(overdue_seconds=60)
    assert (report.announced, report.failed) == (0, 0)
    assert engine.get_processing_status(ALICE, event_id)[0] is ProcessingStatus.COMPLETED
    assert engine.get_extraction_status(ALICE, event_id)[0] is ProcessingStatus.COMPLETED


def test_an_extraction_already_committed_closes_its_work_item_when_seen_again() -> None:
    h = memory_harness()
    event_id = _pending_ingest(h, h.ledger)
    assert h.engine.process_extractions(ALICE).processed == 1
    [done] = h.engine.get_extraction_status(ALICE, event_id)[1]
    # A redelivered message racing a re-announcement saw the item pending again.
    h.ledger.save_work(done.model_copy(update={"status": WorkStatus.PENDING}))
    h.clock.advance(seconds=30)
    assert h.engine.process_extractions(ALICE).processed == 1
    assert h.engine.get_extraction_status(ALICE, event_id)[0] is ProcessingStatus.COMPLETED


class QueueDownAfterOneSend:
    def __init__(self) -> None:
        self.sent: list[WorkItem] = []

    def enqueue(self, items: Sequence[WorkItem]) -> None:
        if self.sent:
            raise StorageUnavailableError("queue unavailable")
        self.sent.extend(items)


def test_a_sweep_cut_short_has_announced_what_it_counted_but_the_last_batch() -> None:
    h = memory_harness()
    switch = SwitchableIndex(h.index)
    switch.down = True
    queue = QueueDownAfterOneSend()
    deps = {**h.engine.deps.__dict__, "index": switch, "queue": queue}
    engine = MemoryEngine(EngineDeps(**deps))
    for i in range(12):
        with contextlib.suppress(StorageUnavailableError):
            engine.store(ALICE, StoreInput(content=f"record {i}"))
    queue.sent.clear()
    h.clock.advance(seconds=3600)
    with pytest.raises(StorageUnavailableError):
        engine.sweep_overdue(overdue_seconds=60)
    assert len(queue.sent) == 10
    counted = [w for w in h.ledger.list_pending_work(ALICE, 100) if w.sweeps]
    assert len(counted) == 12

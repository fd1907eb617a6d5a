"""Sweeper and extraction rules that guard against stale reads: finished work stays finished."""

from __future__ import annotations

from typing import Any

from prme.engine.deps import EngineDeps
from prme.engine.service import MemoryEngine
from prme.model.enums import ProcessingStatus, WorkStatus
from prme.model.inputs import IngestInput
from prme.model.records import OwnerKey, WorkItem
from tests.conftest import ALICE, Harness, memory_harness
from tests.contract.test_backend_contract import SwitchableIndex


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
    assert engine.process_pending(ALICE).processed == 1
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

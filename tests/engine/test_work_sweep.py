"""The sweeper on every backend: overdue work of every queued kind is announced again a bounded
number of times, then failed with its reason, visible in the status reads."""

from __future__ import annotations

from prme.engine.deps import EngineDeps
from prme.engine.service import MemoryEngine
from prme.engine.work_dispatch import MAX_SWEEPS
from prme.engine.work_refs import WorkRef
from prme.model.enums import ProcessingStatus, WorkFailure, WorkKind, WorkStatus
from prme.model.inputs import IngestInput
from tests.harness.engines import ALICE, Harness
from tests.harness.switchable_index import SwitchableIndex

OVERDUE_S = 60


def _ingest_while_the_index_is_down(h: Harness) -> str:
    """An ingest whose raw note and extraction both stay pending, their sends lost."""
    switch = SwitchableIndex(h.index)
    switch.down = True
    h.queue.fail = True
    engine = MemoryEngine(EngineDeps(**{**h.engine.deps.__dict__, "index": switch}))
    result = engine.ingest(ALICE, IngestInput(content="We ran 12 km with Ana on Sunday."))
    h.queue.fail = False
    assert h.queue.sent == []
    return result.event_id


def test_overdue_work_of_every_kind_is_announced_again_then_failed_with_its_reason(
    any_backend: Harness,
) -> None:
    h = any_backend
    event_id = _ingest_while_the_index_is_down(h)
    assert h.engine.sweep_overdue(overdue_seconds=OVERDUE_S).announced == 0  # not overdue yet
    # Each pass announces both items again, once each: an announced item is not overdue
    # until it has been left alone for OVERDUE_S once more.
    for sweep in range(1, MAX_SWEEPS + 1):
        h.clock.advance(seconds=OVERDUE_S + 1)
        report = h.engine.sweep_overdue(overdue_seconds=OVERDUE_S)
        assert (report.announced, report.failed) == (2, 0)
        assert h.engine.sweep_overdue(overdue_seconds=OVERDUE_S).announced == 0
        assert {w.kind for w in h.queue.sent[-2:]} == {WorkKind.EXTRACT, WorkKind.INDEX_NODE}
        assert {w.sweeps for w in h.queue.sent[-2:]} == {sweep}
    h.clock.advance(seconds=OVERDUE_S + 1)
    report = h.engine.sweep_overdue(overdue_seconds=OVERDUE_S)
    assert (report.announced, report.failed) == (0, 2)
    # The pass that failed them says what each had last failed of, when anything did.
    assert {item.kind: last for item, last in report.failures} == {
        WorkKind.INDEX_NODE: "index_unavailable",
        WorkKind.EXTRACT: None,
    }
    for status, items in (
        h.engine.get_processing_status(ALICE, event_id),
        h.engine.get_extraction_status(ALICE, event_id),
    ):
        assert status is ProcessingStatus.FAILED
        assert [w.last_error for w in items] == [WorkFailure.SWEEPS_EXHAUSTED]
    # Failed is final for the sweeper; a retry of the extraction starts it afresh.
    h.clock.advance(seconds=OVERDUE_S + 1)
    assert h.engine.sweep_overdue(overdue_seconds=OVERDUE_S).announced == 0
    assert h.engine.retry_extraction(ALICE, event_id)[0] is ProcessingStatus.PENDING


def test_each_kind_of_work_has_its_own_overdue_time(any_backend: Harness) -> None:
    h = any_backend
    _ingest_while_the_index_is_down(h)
    h.clock.advance(seconds=OVERDUE_S + 1)
    # Extraction may still be in its queue's redelivery: only materialization is overdue.
    report = h.engine.sweep_overdue(
        overdue_seconds={"materialize": OVERDUE_S, "extract": 10 * OVERDUE_S}
    )
    assert report.announced == 1
    assert [w.kind for w in h.queue.sent] == [WorkKind.INDEX_NODE]


def test_work_done_after_an_announcement_is_left_alone(any_backend: Harness) -> None:
    h = any_backend
    event_id = _ingest_while_the_index_is_down(h)
    h.clock.advance(seconds=OVERDUE_S + 1)
    assert h.engine.sweep_overdue(overdue_seconds=OVERDUE_S).announced == 2
    assert h.engine.process_materializations(ALICE).processed == 1
    assert h.engine.process_extractions(ALICE).processed == 1
    for _ in range(MAX_SWEEPS + 1):
        h.clock.advance(seconds=OVERDUE_S + 1)
        assert h.engine.sweep_overdue(overdue_seconds=OVERDUE_S).announced == 0
    assert h.engine.get_extraction_status(ALICE, event_id)[0] is ProcessingStatus.COMPLETED
    assert h.engine.get_processing_status(ALICE, event_id)[0] is ProcessingStatus.COMPLETED


def test_redriven_work_that_ran_out_of_attempts_starts_afresh(any_backend: Harness) -> None:
    """An operator's DLQ redrive is how a message naming failed work comes back: work that
    failed because its attempts ran out runs again, so the runbook's redrive does something."""
    h = any_backend
    event_id = _ingest_while_the_index_is_down(h)
    for _ in range(MAX_SWEEPS + 1):
        h.clock.advance(seconds=OVERDUE_S + 1)
        h.engine.sweep_overdue(overdue_seconds=OVERDUE_S)
    status, items = h.engine.get_processing_status(ALICE, event_id)
    assert status is ProcessingStatus.FAILED
    # The index is back (the harness's own engine never had it down); the redrive delivers
    # the item's message again.
    report = h.engine.process_queued([WorkRef.of(item) for item in items])
    assert report.processed == 1
    status, items = h.engine.get_processing_status(ALICE, event_id)
    assert status is ProcessingStatus.COMPLETED
    assert [(w.attempts, w.sweeps, w.last_error) for w in items] == [(0, 0, None)]


def test_redriven_work_that_can_never_succeed_stays_failed(any_backend: Harness) -> None:
    h = any_backend
    event_id = _ingest_while_the_index_is_down(h)
    _, (item,) = h.engine.get_processing_status(ALICE, event_id)
    gone = item.model_copy(
        update={"status": WorkStatus.FAILED, "last_error": WorkFailure.SOURCE_MISSING}
    )
    h.ledger.save_work(gone)
    report = h.engine.process_queued([WorkRef.of(gone)])
    assert report.processed == 0
    status, (after,) = h.engine.get_processing_status(ALICE, event_id)
    assert (status, after.last_error) == (ProcessingStatus.FAILED, WorkFailure.SOURCE_MISSING)

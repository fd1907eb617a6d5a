"""Work items change state only through their own methods, under one retry rule, and every
kind of work has a handler in the dispatcher's table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from prme.engine.work_dispatch import WORK_HANDLERS
from prme.engine.work_refs import WorkRef
from prme.engine.work_retry import (
    MAX_WORK_ATTEMPTS,
    after_failed_attempt,
    is_final,
    revives_on_redelivery,
)
from prme.model.enums import NodeType, WorkFailure, WorkKind, WorkStatus
from prme.model.inputs import FastIngestInput, FastIngestItem, IngestInput, StoreInput
from prme.model.records import WorkItem
from tests.harness.engines import ALICE, Harness

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def queued(kind: WorkKind = WorkKind.INDEX_NODE) -> WorkItem:
    return WorkItem.queued(kind, work_id="w-1", owner=ALICE, event_id="e-1", node_id="n-1", now=T0)


def test_failure_values_are_the_ones_stored_and_shown_by_the_api() -> None:
    # Work items in SQLite and DynamoDB hold these strings, and responses show them.
    assert {f.name: f.value for f in WorkFailure} == {
        "EMBEDDING_UNAVAILABLE": "embedding_unavailable",
        "INDEX_UNAVAILABLE": "index_unavailable",
        "EXTRACTION_INDEX_UNAVAILABLE": "IndexUnavailable",
        "EXTRACTION_FAILED": "ExtractionFailed",
        "EXTRACTOR_TIMEOUT": "Timeout",
        "EXTRACTOR_PROVIDER_ERROR": "ProviderError",
        "EXTRACTOR_INVALID_OUTPUT": "InvalidOutput",
        "SOURCE_MISSING": "source_missing",
        "EXTRACTION_SOURCE_MISSING": "SourceMissing",
        "CORRUPT_RECORD": "CorruptRecord",
        "RETRIES_EXHAUSTED": "retries_exhausted",
        "SWEEPS_EXHAUSTED": "overdue_after_retries",
    }


def test_queued_work_is_pending_in_its_owners_partition() -> None:
    item = queued(WorkKind.EXTRACT)
    assert (item.tenant_id, item.owner_id, item.owner) == (ALICE.tenant_id, ALICE.owner_id, ALICE)
    assert (item.status, item.attempts, item.sweeps, item.last_error) == (
        WorkStatus.PENDING,
        0,
        0,
        None,
    )
    assert (item.kind, item.created_at, item.updated_at) == (WorkKind.EXTRACT, T0, T0)


def test_each_change_returns_a_changed_copy_stamped_with_its_time() -> None:
    item = queued()
    assert item.succeeded(T1).status is WorkStatus.DONE
    retried = item.attempt_failed(WorkFailure.INDEX_UNAVAILABLE, T1, final=False)
    assert (retried.status, retried.attempts, retried.last_error) == (
        WorkStatus.PENDING,
        1,
        "index_unavailable",
    )
    spent = retried.attempt_failed(WorkFailure.INDEX_UNAVAILABLE, T1, final=True)
    assert (spent.status, spent.attempts) == (WorkStatus.FAILED, 2)
    gone = item.failed(WorkFailure.SOURCE_MISSING, T1)
    assert (gone.status, gone.attempts, gone.last_error) == (WorkStatus.FAILED, 0, "source_missing")
    swept = item.announced_again(T1).announced_again(T1)
    assert swept.sweeps == 2
    for changed in (item.succeeded(T1), retried, spent, gone, swept):
        assert (changed.updated_at, changed.created_at) == (T1, T0)
    assert item == queued()  # the original is never changed


def test_revived_work_gets_fresh_attempts_and_announcements_unless_kept() -> None:
    dead = (
        queued().announced_again(T0).attempt_failed(WorkFailure.EXTRACTOR_TIMEOUT, T0, final=True)
    )
    revived = dead.revived(T1)
    assert (revived.status, revived.attempts, revived.sweeps, revived.last_error) == (
        WorkStatus.PENDING,
        0,
        0,
        None,
    )
    assert dead.revived(T1, keep_sweeps=True).sweeps == 1


def test_a_passing_failure_is_retried_until_the_attempts_run_out() -> None:
    item = queued()
    for attempt in range(1, MAX_WORK_ATTEMPTS):
        item = after_failed_attempt(item, WorkFailure.EMBEDDING_UNAVAILABLE, T1)
        assert (item.status, item.attempts) == (WorkStatus.PENDING, attempt)
    item = after_failed_attempt(item, WorkFailure.EMBEDDING_UNAVAILABLE, T1)
    assert (item.status, item.attempts) == (WorkStatus.FAILED, MAX_WORK_ATTEMPTS)


@pytest.mark.parametrize(
    "reason",
    [
        WorkFailure.SOURCE_MISSING,
        WorkFailure.EXTRACTION_SOURCE_MISSING,
        WorkFailure.CORRUPT_RECORD,
    ],
)
def test_a_failure_no_retry_can_mend_fails_at_once_and_stays_failed(reason: WorkFailure) -> None:
    failed = after_failed_attempt(queued(), reason, T1)
    assert (failed.status, failed.attempts) == (WorkStatus.FAILED, 1)
    # As read back from a ledger, `last_error` is a plain string: the rule reads it the same.
    stored = failed.model_copy(update={"last_error": str(reason.value)})
    assert is_final(stored.last_error)
    assert not revives_on_redelivery(stored)


@pytest.mark.parametrize(
    "reason",
    [
        WorkFailure.RETRIES_EXHAUSTED,
        WorkFailure.SWEEPS_EXHAUSTED,
        WorkFailure.INDEX_UNAVAILABLE,
        WorkFailure.EXTRACTION_INDEX_UNAVAILABLE,
        WorkFailure.EXTRACTOR_PROVIDER_ERROR,
    ],
)
def test_work_given_up_on_revives_when_its_message_is_redriven(reason: WorkFailure) -> None:
    assert revives_on_redelivery(queued().failed(reason, T1))
    assert not revives_on_redelivery(queued())


def test_every_kind_of_work_has_a_handler_and_materialization_shares_one_batch() -> None:
    assert set(WORK_HANDLERS) == set(WorkKind)
    assert WORK_HANDLERS[WorkKind.INDEX_NODE] is WORK_HANDLERS[WorkKind.MATERIALIZE_EVENT]
    # Extraction runs first in a batch: a deferred extraction redelivers the batch untouched.
    assert next(iter(WORK_HANDLERS)) is WorkKind.EXTRACT


def test_one_message_batch_runs_each_kind_of_work_through_its_handler(harness: Harness) -> None:
    harness.index.available = False  # type: ignore[attr-defined]
    note = harness.engine.store(ALICE, StoreInput(content="Ana is my sister."))
    entity = harness.engine.store(ALICE, StoreInput(content="Ana", node_type=NodeType.ENTITY))
    message = harness.engine.ingest(ALICE, IngestInput(content="We ran 12 km with Ana."))
    fast = harness.engine.ingest_fast(
        ALICE, FastIngestInput(items=[FastIngestItem(content="Ana called.")])
    )
    harness.index.available = True  # type: ignore[attr-defined]
    sources = (note.event_id, entity.event_id, message.event_id, *fast.event_ids)

    def work() -> list[WorkItem]:
        return [w for e in sources for w in harness.ledger.list_event_work(ALICE, e)]

    named = work()
    assert {w.kind for w in named} == set(WorkKind)
    assert all(w.status is WorkStatus.PENDING for w in named)

    report = harness.engine.process_queued([WorkRef.of(w) for w in named])

    statuses = {(w.kind, w.status) for w in work() if w.id in {n.id for n in named}}
    # Alias scans are left to the maintenance pass, even when a message names one.
    assert statuses == {
        (WorkKind.INDEX_NODE, WorkStatus.DONE),
        (WorkKind.MATERIALIZE_EVENT, WorkStatus.DONE),
        (WorkKind.EXTRACT, WorkStatus.DONE),
        (WorkKind.ALIAS_SCAN, WorkStatus.PENDING),
    }
    assert (report.processed, report.failed) == (5, 0)

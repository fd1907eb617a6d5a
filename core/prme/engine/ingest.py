"""Ingest with extraction, the use case: keep the message verbatim, then derive grounded
memories from it.

The source and its raw note are committed first, with a saved extraction work item. The
extraction runs inline when the caller waits, otherwise through the queue or a processing
pass (engine/extraction.py runs it); it is retried until it succeeds or its attempts run out.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from prme.engine.deps import EngineDeps
from prme.engine.extraction import run_extractions
from prme.engine.reads import summarize_work
from prme.engine.store import StoreResult, store_memory
from prme.errors import PrmeError, ProcessingIncompleteError
from prme.model.enums import ProcessingStatus, WorkKind, WorkStatus
from prme.model.inputs import IngestInput, SourceInput, StoreInput
from prme.model.records import OwnerKey, StoreCommit, WorkItem

INGEST_OPERATION = "ingest"


@dataclass(frozen=True)
class IngestResult(StoreResult):
    """What a direct store answers, and how far the message's extraction got."""

    extraction_status: ProcessingStatus


def ingest_message(
    deps: EngineDeps, owner: OwnerKey, request: IngestInput, idempotency_key: str | None = None
) -> IngestResult:
    # The message is kept as a direct store of its source fields would keep it.
    raw = StoreInput(**request.model_dump(include=set(SourceInput.model_fields)))

    def extraction_work(commit: StoreCommit) -> tuple[WorkItem, ...]:
        return (
            WorkItem.queued(
                WorkKind.EXTRACT,
                work_id=deps.ids(),
                owner=owner,
                event_id=commit.event.id,
                node_id=commit.node.id,
                now=deps.clock.now(),
            ),
        )

    # The key binds the whole request, wait flag included, under the ingest operation.
    stored: StoreResult = store_memory(
        deps,
        owner,
        raw,
        idempotency_key,
        operation=INGEST_OPERATION,
        digest_of=request,
        extra_work=extraction_work,
    )
    pending = deps.ledger.list_pending_work(owner, 1000, family="extract")
    mine = [w for w in pending if w.event_id == stored.event_id]
    if request.wait_for_extraction and mine:
        failure = run_extractions(deps, owner, mine)
        if failure is not None:
            raise ProcessingIncompleteError(stored.event_id, failure)
    elif mine:
        with contextlib.suppress(PrmeError):
            deps.queue.enqueue(mine)
    status, _ = extraction_status(deps, owner, stored.event_id)
    return IngestResult(
        event_id=stored.event_id,
        node_id=stored.node_id,
        processing_status=stored.processing_status,
        extraction_status=status,
    )


def extraction_status(
    deps: EngineDeps, owner: OwnerKey, event_id: str
) -> tuple[ProcessingStatus, list[WorkItem]]:
    items = [w for w in deps.ledger.list_event_work(owner, event_id) if w.kind is WorkKind.EXTRACT]
    return summarize_work(items), items


def retry_extraction(deps: EngineDeps, owner: OwnerKey, event_id: str) -> None:
    """Give failed extraction work of a source a fresh set of attempts."""
    now = deps.clock.now()
    _, items = extraction_status(deps, owner, event_id)
    # The sweeper's count of announcements is kept, as it always was on this route.
    revived = [w.revived(now, keep_sweeps=True) for w in items if w.status is WorkStatus.FAILED]
    for item in revived:
        deps.ledger.save_work(item)
    if revived:
        with contextlib.suppress(PrmeError):
            deps.queue.enqueue(revived)

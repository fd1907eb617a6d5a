"""Fast ingest: commit an ordered batch of raw sources and their materialization work at once.

No model runs here: nodes are built and indexed by the materialization processor, which
callers drive until nothing is pending.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass

from prme.engine.deps import EngineDeps
from prme.engine.idempotency import check_replay, new_record, request_digest
from prme.engine.nodes import new_event
from prme.errors import ConflictError, PrmeError
from prme.model.enums import WorkKind
from prme.model.inputs import MAX_FAST_INGEST_ITEMS, FastIngestInput, FastIngestItem
from prme.model.records import IngestCommit, JournalRecord, OwnerKey, WorkItem

FAST_INGEST_OPERATION = "ingest_fast"
FAST_INGEST_JOURNAL = "fast_ingest_batch"


@dataclass(frozen=True)
class FastIngestResult:
    event_ids: list[str]
    accepted: int


def build_ingest_commit(
    deps: EngineDeps,
    owner: OwnerKey,
    request: FastIngestInput,
    *,
    idempotency: tuple[str, str] | None = None,
) -> IngestCommit:
    now = deps.clock.now()
    events = tuple(
        new_event(
            deps,
            owner,
            content=item.content,
            role=item.role,
            speaker=item.speaker,
            session_id=item.session_id,
            scope=item.scope,
            event_time=item.event_time,
            metadata=item.metadata,
            now=now,
        )
        for item in request.items
    )
    work = tuple(
        WorkItem.queued(
            WorkKind.MATERIALIZE_EVENT,
            work_id=deps.ids(),
            owner=owner,
            event_id=event.id,
            # The node id is chosen now so that any number of passes build the same node.
            node_id=deps.ids(),
            now=now,
        )
        for event in events
    )
    batch_id = deps.ids()
    journal = JournalRecord.build(
        record_id=batch_id,
        owner=owner,
        operation=FAST_INGEST_JOURNAL,
        subject_id=batch_id,
        created_at=now,
        payload={
            "event_ids": [e.id for e in events],
            "event_sha256": [e.content_sha256 for e in events],
        },
    )
    record = None
    if idempotency is not None:
        key, digest = idempotency
        record = new_record(
            owner,
            FAST_INGEST_OPERATION,
            key,
            digest=digest,
            result={"event_ids": [e.id for e in events]},
            now=now,
        )
    return IngestCommit(events=events, work=work, journal=journal, idempotency=record)


def ingest_fast(
    deps: EngineDeps,
    owner: OwnerKey,
    request: FastIngestInput,
    idempotency_key: str | None = None,
) -> FastIngestResult:
    digest = request_digest(FAST_INGEST_OPERATION, request) if idempotency_key else None
    if idempotency_key and digest:
        saved = deps.ledger.get_idempotency(owner, FAST_INGEST_OPERATION, idempotency_key)
        if saved is not None:
            ids = list(check_replay(saved, FAST_INGEST_OPERATION, digest)["event_ids"])
            return FastIngestResult(event_ids=ids, accepted=len(ids))
    commit = build_ingest_commit(
        deps,
        owner,
        request,
        idempotency=(idempotency_key, digest) if idempotency_key and digest else None,
    )
    try:
        deps.ledger.commit_ingest(commit)
    except ConflictError:
        if not (idempotency_key and digest):
            raise
        saved = deps.ledger.get_idempotency(owner, FAST_INGEST_OPERATION, idempotency_key)
        if saved is None:
            raise
        ids = list(check_replay(saved, FAST_INGEST_OPERATION, digest)["event_ids"])
        return FastIngestResult(event_ids=ids, accepted=len(ids))
    # Announce the work; if this is lost, the sweeper and any processing pass find it.
    with contextlib.suppress(PrmeError):
        deps.queue.enqueue(list(commit.work))
    ids = [e.id for e in commit.events]
    return FastIngestResult(event_ids=ids, accepted=len(ids))


def ingest_import(
    deps: EngineDeps,
    owner: OwnerKey,
    items: list[FastIngestItem],
    idempotency_key: str,
) -> FastIngestResult:
    """A batch of any size (the SQS import path): split into transaction-sized chunks.

    The split is deterministic and each chunk's key derives from the import's key, so a
    redelivered import replays every chunk that already committed and finishes the rest.
    """
    event_ids: list[str] = []
    for index, start in enumerate(range(0, len(items), MAX_FAST_INGEST_ITEMS)):
        chunk = FastIngestInput(items=items[start : start + MAX_FAST_INGEST_ITEMS])
        chunk_key = str(uuid.uuid5(uuid.UUID(idempotency_key), f"chunk-{index}"))
        event_ids.extend(ingest_fast(deps, owner, chunk, chunk_key).event_ids)
    return FastIngestResult(event_ids=event_ids, accepted=len(event_ids))

"""Fast ingest: commit an ordered batch of raw sources and their materialization work at once.

No model runs here: nodes are built and indexed by the materialization processor, which
callers drive until nothing is pending.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from prme.engine.deps import EngineDeps
from prme.engine.idempotency import (
    commit_or_replay,
    key_binding,
    new_record,
    require_sources_held,
    saved_result,
)
from prme.engine.metering import meter_write
from prme.engine.nodes import new_event
from prme.errors import PrmeError
from prme.model.enums import WorkKind
from prme.model.inputs import FastIngestInput
from prme.model.records import IngestCommit, JournalRecord, OwnerKey, WorkItem

FAST_INGEST_OPERATION = "ingest_fast"
FAST_INGEST_JOURNAL = "fast_ingest_batch"


@dataclass(frozen=True)
class FastIngestResult:
    event_ids: list[str]
    accepted: int
    # An import sent before its owner's erasure began is dropped whole (nothing is saved).
    dropped_for_erasure: bool = False


def build_ingest_commit(
    deps: EngineDeps,
    owner: OwnerKey,
    request: FastIngestInput,
    *,
    idempotency: tuple[str, str] | None = None,
) -> IngestCommit:
    now = deps.clock.now()
    # One batch is recorded at once, yet its items were said in order: each is recorded a
    # microsecond after the one before, so a turn without an event_time keeps its place in
    # its session (its time is when it was recorded) and its work runs in that order.
    recorded = [now + timedelta(microseconds=i) for i in range(len(request.items))]
    events = tuple(
        new_event(deps, owner, item, now=at)
        for item, at in zip(request.items, recorded, strict=True)
    )
    work = tuple(
        WorkItem.queued(
            WorkKind.MATERIALIZE_EVENT,
            work_id=deps.ids(),
            owner=owner,
            event_id=event.id,
            # The node id is chosen now so that any number of passes build the same node.
            node_id=deps.ids(),
            now=event.ingested_at,
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


def _replayed(deps: EngineDeps, owner: OwnerKey, result: dict[str, Any]) -> FastIngestResult:
    ids = list(result["event_ids"])
    require_sources_held(deps.ledger, owner, ids)
    return FastIngestResult(event_ids=ids, accepted=len(ids))


def ingest_fast(
    deps: EngineDeps,
    owner: OwnerKey,
    request: FastIngestInput,
    idempotency_key: str | None = None,
) -> FastIngestResult:
    binding = key_binding(idempotency_key, FAST_INGEST_OPERATION, request)
    replay = saved_result(deps.ledger, owner, FAST_INGEST_OPERATION, binding)
    if replay is not None:
        return _replayed(deps, owner, replay)
    commit = build_ingest_commit(deps, owner, request, idempotency=binding)
    replay = commit_or_replay(
        lambda: deps.ledger.commit_ingest(commit),
        deps.ledger,
        owner,
        FAST_INGEST_OPERATION,
        binding,
    )
    if replay is not None:
        return _replayed(deps, owner, replay)
    # Announce the work; if this is lost, the sweeper and any processing pass find it.
    with contextlib.suppress(PrmeError):
        deps.queue.enqueue(list(commit.work))
    ids = [e.id for e in commit.events]
    meter_write(
        deps,
        FAST_INGEST_OPERATION,
        owner,
        idempotency_key or ids[0],
        [e.content for e in commit.events],
    )
    return FastIngestResult(event_ids=ids, accepted=len(ids))

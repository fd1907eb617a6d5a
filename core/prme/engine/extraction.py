"""Ingest with extraction: keep the message verbatim, then derive grounded memories from it.

The source and its raw note are committed first, with a saved extraction work item. The
extraction runs inline when the caller waits, otherwise through the queue or a processing
pass; it is retried until it succeeds or its attempts run out. Artifacts become nodes
(and edges between named entities) linked to the source event, committed in one change.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from prme.engine.deadlines import pass_budget_ms
from prme.engine.deps import EngineDeps
from prme.engine.inference import infer_source_type
from prme.engine.materialize import (
    EXTRACTION_SOURCE_MISSING,
    MAX_WORK_ATTEMPTS,
    ProcessingReport,
    index_nodes,
)
from prme.engine.reads import summarize_work
from prme.engine.store import StoreResult, alias_scan_work, store_memory
from prme.errors import (
    ConflictError,
    CorruptRecordError,
    ExtractionUnavailableError,
    PrmeError,
    ProcessingIncompleteError,
)
from prme.model.canonical import sha256_text
from prme.model.enums import (
    EpistemicType,
    LifecycleState,
    NodeType,
    ProcessingStatus,
    WorkKind,
    WorkStatus,
)
from prme.model.extraction import Extraction
from prme.model.inputs import IngestInput, StoreInput
from prme.model.records import (
    EXTRACTION_METADATA_KEY,
    Event,
    JournalRecord,
    MemoryEdge,
    MemoryNode,
    NodeChange,
    OwnerKey,
    StoreCommit,
    WorkItem,
)

INGEST_OPERATION = "ingest"
EXTRACTION_JOURNAL = "extraction"
# Nodes (two writes each with their event link), edges, journal and work fit one transaction.
MAX_ARTIFACT_NODES = 30
MAX_ARTIFACT_EDGES = 20
# Failures no retry can fix: the item is failed at once, and a queue need not redeliver it.


@dataclass(frozen=True)
class IngestResult:
    event_id: str
    node_id: str | None
    processing_status: ProcessingStatus
    extraction_status: ProcessingStatus


def ingest_message(
    deps: EngineDeps, owner: OwnerKey, request: IngestInput, idempotency_key: str | None = None
) -> IngestResult:
    raw = StoreInput(
        content=request.content,
        role=request.role,
        speaker=request.speaker,
        session_id=request.session_id,
        scope=request.scope,
        metadata=request.metadata,
        event_time=request.event_time,
    )

    def extraction_work(commit: StoreCommit) -> tuple[WorkItem, ...]:
        now = deps.clock.now()
        return (
            WorkItem(
                id=deps.ids(),
                tenant_id=owner.tenant_id,
                owner_id=owner.owner_id,
                kind=WorkKind.EXTRACT,
                event_id=commit.event.id,
                node_id=commit.node.id,
                created_at=now,
                updated_at=now,
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
    revived = [
        w.model_copy(
            update={
                "status": WorkStatus.PENDING,
                "attempts": 0,
                "last_error": None,
                "updated_at": now,
            }
        )
        for w in items
        if w.status is WorkStatus.FAILED
    ]
    for item in revived:
        deps.ledger.save_work(item)
    if revived:
        with contextlib.suppress(PrmeError):
            deps.queue.enqueue(revived)


def process_extractions(
    deps: EngineDeps, owner: OwnerKey | None, *, budget_ms: int | None = None
) -> ProcessingReport:
    """One bounded pass over pending extraction work."""
    budget_ms = pass_budget_ms(budget_ms)
    if budget_ms == 0:
        return ProcessingReport(
            processed=0, pending=deps.ledger.count_pending_work(owner, family="extract"), failed=0
        )
    started = time.monotonic()
    processed = failed = 0
    for item in deps.ledger.list_pending_work(owner, deps.config.work_batch_size, family="extract"):
        if budget_ms is not None and (time.monotonic() - started) * 1000 >= budget_ms:
            break
        item_owner = OwnerKey(tenant_id=item.tenant_id, owner_id=item.owner_id)
        if run_extractions(deps, item_owner, [item]) is None:
            processed += 1
        else:
            failed += 1
    return ProcessingReport(
        processed=processed,
        pending=deps.ledger.count_pending_work(owner, family="extract"),
        failed=failed,
    )


def run_extractions(deps: EngineDeps, owner: OwnerKey, items: list[WorkItem]) -> str | None:
    """Extract each item's source; None when all succeeded, else the last failure category."""
    failure: str | None = None
    for item in items:
        reason = _run_one(deps, owner, item)
        if reason is not None:
            failure = reason
    return failure


def _run_one(deps: EngineDeps, owner: OwnerKey, item: WorkItem) -> str | None:
    try:
        event = deps.ledger.get_event(owner, item.event_id)
    except CorruptRecordError as exc:
        # Quarantined: no retry can read it, so the item fails now and the pass goes on.
        _record_failure(deps, item, exc.reason_code, final=True)
        return exc.reason_code
    if event is None:
        _record_failure(deps, item, EXTRACTION_SOURCE_MISSING, final=True)
        return EXTRACTION_SOURCE_MISSING
    reference = event.event_time or event.ingested_at
    try:
        extraction = deps.extractor.extract(event.content, reference_time=reference)
    except ExtractionUnavailableError as exc:
        _record_failure(deps, item, exc.reason_code)
        return exc.reason_code
    nodes, edges = artifacts_to_records(deps, event, item, extraction)
    if index_nodes(deps, nodes) is not None:
        _record_failure(deps, item, "IndexUnavailable")
        return "IndexUnavailable"
    now = deps.clock.now()
    journal = JournalRecord.build(
        record_id=str(uuid.uuid5(uuid.UUID(item.id), "journal")),
        owner=owner,
        operation=EXTRACTION_JOURNAL,
        subject_id=event.id,
        created_at=now,
        payload={
            "event_id": event.id,
            "extractor": extraction.extractor,
            "node_ids": [n.id for n in nodes],
            "edge_ids": [e.id for e in edges],
            "reference_time": reference.isoformat(),
        },
    )
    done = item.model_copy(update={"status": WorkStatus.DONE, "updated_at": now})
    entities = [n for n in nodes if n.node_type is NodeType.ENTITY]
    # New entities wait for the maintenance pass's alias proposal scan of this owner.
    alias_work = (
        (
            alias_scan_work(
                deps,
                entities[0],
                event_id=event.id,
                work_id=str(uuid.uuid5(uuid.UUID(item.id), "alias_scan")),
            ),
        )
        if entities
        else ()
    )
    try:
        deps.ledger.commit_node_change(
            NodeChange(
                updates=(),
                journal=journal,
                edges=tuple(edges),
                new_nodes=tuple(nodes),
                work=alias_work,
                work_updates=(done,),
            )
        )
    except ConflictError:
        # Ids are derived from the work item: another pass committed this very result. The
        # item is closed here too, in case it was seen pending again after that pass (a
        # redelivery racing a re-announcement); left pending, it would end failed.
        deps.ledger.save_work(done)
    return None


def _record_failure(deps: EngineDeps, item: WorkItem, reason: str, *, final: bool = False) -> None:
    attempts = item.attempts + 1
    status = WorkStatus.FAILED if final or attempts >= MAX_WORK_ATTEMPTS else WorkStatus.PENDING
    deps.ledger.save_work(
        item.model_copy(
            update={
                "status": status,
                "attempts": attempts,
                "last_error": reason,
                "updated_at": deps.clock.now(),
            }
        )
    )


def artifacts_to_records(
    deps: EngineDeps, event: Event, item: WorkItem, extraction: Extraction
) -> tuple[list[MemoryNode], list[MemoryEdge]]:
    """Nodes for entities, claims and quantities; edges for relationships between entities."""
    now = deps.clock.now()
    seed = uuid.UUID(item.id)
    specs: list[tuple[str, NodeType, str, dict[str, Any], datetime | None]] = []
    meta: dict[str, Any]
    for i, entity in enumerate(extraction.entities):
        meta = {
            "kind": "entity",
            "entity_kind": entity.kind,
            "evidence_quote": entity.evidence_quote,
        }
        specs.append((f"entity:{i}", NodeType.ENTITY, entity.name, meta, None))
    for i, claim in enumerate(extraction.claims):
        meta = {
            "kind": "claim",
            "subject": claim.subject,
            "predicate": claim.predicate,
            "object": claim.object,
            "occurred_on": claim.occurred_on.isoformat() if claim.occurred_on else None,
            "evidence_quote": claim.evidence_quote,
        }
        occurred = (
            datetime(
                claim.occurred_on.year, claim.occurred_on.month, claim.occurred_on.day, tzinfo=UTC
            )
            if claim.occurred_on
            else None
        )
        specs.append((f"claim:{i}", NodeType.FACT, claim.statement, meta, occurred))
    for i, quantity in enumerate(extraction.quantities):
        meta = {
            "kind": "quantity",
            "subject": quantity.subject,
            "predicate": quantity.predicate,
            "value": str(quantity.value),
            "unit": quantity.unit,
            "evidence_quote": quantity.evidence_quote,
        }
        specs.append((f"quantity:{i}", NodeType.FACT, quantity.evidence_quote, meta, None))
    nodes: list[MemoryNode] = []
    for name, node_type, text, meta, valid_from in specs[:MAX_ARTIFACT_NODES]:
        nodes.append(
            MemoryNode(
                id=str(uuid.uuid5(seed, name)),
                tenant_id=event.tenant_id,
                owner_id=event.owner_id,
                node_type=node_type,
                content=text,
                content_sha256=sha256_text(text),
                scope=event.scope,
                session_id=event.session_id,
                source_type=infer_source_type(event.role),
                epistemic_type=EpistemicType.ASSERTED,
                confidence=0.6,
                lifecycle_state=LifecycleState.TENTATIVE,
                event_time=event.event_time,
                valid_from=valid_from or event.event_time or now,
                created_at=now,
                updated_at=now,
                evidence_refs=(event.id,),
                metadata={EXTRACTION_METADATA_KEY: {**meta, "extractor": extraction.extractor}},
            )
        )
    entity_ids = {n.content: n.id for n in nodes if n.node_type is NodeType.ENTITY}
    edges = [
        MemoryEdge(
            id=str(uuid.uuid5(seed, f"edge:{i}")),
            tenant_id=event.tenant_id,
            owner_id=event.owner_id,
            edge_type=rel.relation,
            source_node_id=entity_ids[rel.source],
            target_node_id=entity_ids[rel.target],
            evidence_refs=(event.id,),
            created_at=now,
        )
        for i, rel in enumerate(extraction.relationships)
        if rel.source in entity_ids and rel.target in entity_ids
    ][:MAX_ARTIFACT_EDGES]
    return nodes, edges


__all__ = [
    "IngestResult",
    "extraction_status",
    "ingest_message",
    "process_extractions",
    "retry_extraction",
    "run_extractions",
]

"""Extraction work: run the extractor on an item's source and commit what it found as nodes
(and edges between named entities) linked to the source, in one change; a failed attempt is
retried under the work retry rule."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from prme.engine.deps import EngineDeps
from prme.engine.indexing import index_nodes
from prme.engine.metering import meter_work
from prme.engine.nodes import NodeChoices, node_from_event
from prme.engine.store import alias_scan_work
from prme.engine.work_retry import after_failed_attempt
from prme.errors import ConflictError, CorruptRecordError, ExtractionUnavailableError
from prme.model.enums import EpistemicType, NodeType, WorkFailure
from prme.model.extraction import Extraction
from prme.model.records import (
    EXTRACTION_METADATA_KEY,
    Event,
    JournalRecord,
    MemoryEdge,
    MemoryNode,
    NodeChange,
    OwnerKey,
    WorkItem,
)
from prme.model.usage import UsageUnits

EXTRACTION_JOURNAL = "extraction"
# Nodes (two writes each with their event link), edges, journal and work fit one transaction.
MAX_ARTIFACT_NODES = 30
MAX_ARTIFACT_EDGES = 20


def run_extractions(deps: EngineDeps, owner: OwnerKey, items: list[WorkItem]) -> WorkFailure | None:
    """Extract each item's source; None when all succeeded, else the last failure."""
    failure: WorkFailure | None = None
    for item in items:
        reason = _run_one(deps, owner, item)
        if reason is not None:
            failure = reason
    return failure


def _run_one(deps: EngineDeps, owner: OwnerKey, item: WorkItem) -> WorkFailure | None:
    try:
        event = deps.ledger.get_event(owner, item.event_id)
    except CorruptRecordError:
        # Quarantined: no retry can read it, so the item fails now and the pass goes on.
        return _record_failure(deps, item, WorkFailure.CORRUPT_RECORD)
    if event is None:
        return _record_failure(deps, item, WorkFailure.EXTRACTION_SOURCE_MISSING)
    reference = event.effective_time
    try:
        extraction = deps.extractor.extract(event.content, reference_time=reference)
    except ExtractionUnavailableError as exc:
        return _record_failure(deps, item, exc.reason_code)
    nodes, edges = artifacts_to_records(deps, event, item, extraction)
    if index_nodes(deps, nodes) is not None:
        # Extraction reports a down embedder as a down index, under its own spelling.
        return _record_failure(deps, item, WorkFailure.EXTRACTION_INDEX_UNAVAILABLE)
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
    done = item.succeeded(now)
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
    units = UsageUnits(records=len(nodes), embeddings=len(nodes), extractor_calls=1)
    meter_work(deps, "extract", [(item, units)])
    return None


def _record_failure(deps: EngineDeps, item: WorkItem, reason: WorkFailure) -> WorkFailure:
    deps.ledger.save_work(after_failed_attempt(item, reason, deps.clock.now()))
    return reason


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
    nodes = [
        node_from_event(
            deps,
            event,
            node_id=str(uuid.uuid5(seed, name)),
            now=now,
            # Extracted statements are the speaker's assertions, held with moderate confidence
            # and kept until archived (no expiry).
            choices=NodeChoices(
                node_type=node_type,
                indexed_text=text,
                epistemic_type=EpistemicType.ASSERTED,
                confidence=0.6,
                ttl_given=True,
                valid_from=valid_from,
            ),
            metadata={EXTRACTION_METADATA_KEY: {**meta, "extractor": extraction.extractor}},
        )
        for name, node_type, text, meta, valid_from in specs[:MAX_ARTIFACT_NODES]
    ]
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

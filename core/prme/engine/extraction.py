"""Extraction work: run the extractor on an item's source and commit what it found as nodes
(and edges between named entities) linked to the source, with the earlier claims it
supersedes, in one change; a failed attempt is retried under the work retry rule."""

from __future__ import annotations

import contextlib
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from prme.engine.deps import EngineDeps
from prme.engine.indexing import index_nodes
from prme.engine.materialize import index_work_item, materialize_nodes
from prme.engine.metering import meter_work
from prme.engine.nodes import NodeChoices, node_from_event
from prme.engine.store import alias_scan_work
from prme.engine.updates import mark_superseding, plan_supersedences
from prme.engine.work_retry import after_failed_attempt
from prme.errors import (
    ConflictError,
    CorruptRecordError,
    ExtractionUnavailableError,
    NotFoundError,
    PrmeError,
)
from prme.model.enums import (
    INACTIVE_LIFECYCLE_STATES,
    EpistemicType,
    NodeType,
    WorkFailure,
    WorkKind,
)
from prme.model.extraction import (
    ExtractedClaim,
    Extraction,
    SavedExtraction,
    SupersededClaim,
    claim_assertion_key,
    normalize_phrase,
    object_key,
)
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
# One change must fit one DynamoDB transaction (100 writes): nodes (up to three writes each:
# the node, its event link, its assertion-key link), edges, supersedences (the old node, the
# edge, its index work, the old source's note marked as partly outdated), the note that takes
# a claim (two), the journal and the work items: 60 + 16 + 16 + 2 + 1 + 2 = 97.
MAX_ARTIFACT_NODES = 20
MAX_ARTIFACT_EDGES = 16
MAX_SUPERSEDED = 4
# The journal keeps the validated extraction; longer lists are cut (and marked) to fit a record.
MAX_SAVED_ARTIFACTS = 20
MAX_SAVED_CHARACTERS = 100_000
# A change whose updated nodes moved on since they were read is built and tried again.
_COMMIT_ATTEMPTS = 3


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
    records = artifacts_to_records(deps, event, item, extraction)
    if records.note_claim is not None and _source_note(deps, owner, event, item) is None:
        records = records.claim_as_node()  # no note to carry the claim (or it has one)
    if index_nodes(deps, records.nodes) is not None:
        # Extraction reports a down embedder as a down index, under its own spelling.
        return _record_failure(deps, item, WorkFailure.EXTRACTION_INDEX_UNAVAILABLE)
    journal_id = _journal_id(item)
    for _ in range(_COMMIT_ATTEMPTS):
        try:
            work = _commit(
                deps,
                owner,
                item,
                event=event,
                extraction=extraction,
                records=records,
                journal_id=journal_id,
            )
        except ConflictError:
            if deps.ledger.get_journal(owner, journal_id) is not None:
                # Ids are derived from the work item: another pass committed this very
                # result. The item is closed here too, in case it was seen pending again after
                # that pass (a redelivery racing a re-announcement); left pending, it would
                # end failed.
                deps.ledger.save_work(item.succeeded(deps.clock.now()))
                break
            # A node this change updates (the source's note, a superseded claim) changed
            # since it was read: read them again.
            continue
        # The index learns of the superseded states now; what fails stays pending for a pass.
        if materialize_nodes(deps, work).deferred:
            with contextlib.suppress(PrmeError):
                deps.queue.enqueue([item for item, _ in work])
        break
    else:
        return _record_failure(deps, item, WorkFailure.EXTRACTION_FAILED)
    nodes = records.nodes
    units = UsageUnits(records=len(nodes), embeddings=len(nodes), extractor_calls=1)
    meter_work(deps, "extract", [(item, units)])
    return None


def _commit(
    deps: EngineDeps,
    owner: OwnerKey,
    item: WorkItem,
    *,
    event: Event,
    extraction: Extraction,
    records: ExtractedRecords,
    journal_id: str,
) -> tuple[tuple[WorkItem, MemoryNode], ...]:
    """Commit the extraction's nodes with what they supersede; the index work it queued."""
    now = deps.clock.now()
    seed = uuid.UUID(item.id)
    nodes = list(records.nodes)
    updates: list[tuple[MemoryNode, MemoryNode]] = []
    claims = [n for n in nodes if _is_claim(n)]
    annotated: list[str] = []
    note = _source_note(deps, owner, event, item) if records.note_claim is not None else None
    if records.note_claim is not None and note is None:
        # The note changed since it was chosen to carry the claim: the next attempt decides
        # again (and, without a usable note, stores the claim as a node of its own).
        raise ConflictError("The source's note changed")
    if note is not None and records.note_claim is not None:
        # The claim states the whole source: the source's own note carries it, so the same
        # sentence is not stored twice.
        claimed = note.model_copy(
            update={
                "metadata": {**note.metadata, EXTRACTION_METADATA_KEY: records.note_claim},
                "updated_at": now,
            }
        )
        updates.append((note, claimed))
        claims.append(claimed)
        annotated.append(note.id)
    plan = plan_supersedences(
        deps, owner, claims, evidence_id=event.id, seed=seed, now=now, limit=MAX_SUPERSEDED
    )
    # A claim that replaced earlier ones says so in its metadata: retrieval reads it as the
    # current value of its fact (ranked first for a question about the present).
    nodes = [mark_superseding(n, plan) for n in nodes]
    updates = [(before, mark_superseding(after, plan)) for before, after in updates]
    updates += plan.updates + plan.sources
    edges = [*records.edges, *plan.edges]
    journal = JournalRecord.build(
        record_id=journal_id,
        owner=owner,
        operation=EXTRACTION_JOURNAL,
        subject_id=event.id,
        created_at=now,
        payload={
            "event_id": event.id,
            "extractor": extraction.extractor,
            "node_ids": [n.id for n in nodes],
            "edge_ids": [e.id for e in edges],
            "reference_time": event.effective_time.isoformat(),
            "annotated_node_ids": annotated,
            "superseded": plan.superseded,
            "extraction": _saved_extraction(extraction),
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
                work_id=str(uuid.uuid5(seed, "alias_scan")),
            ),
        )
        if entities
        else ()
    )
    # A superseded claim's index document changes state (a note's claim is not indexed).
    superseded = [new for _, new in plan.updates]
    index_work = tuple(index_work_item(deps, new) for new in superseded)
    deps.ledger.commit_node_change(
        NodeChange(
            updates=tuple(updates),
            journal=journal,
            edges=tuple(edges),
            new_nodes=tuple(nodes),
            work=(*alias_work, *index_work),
            work_updates=(done,),
        )
    )
    return tuple(zip(index_work, superseded, strict=True))


def _journal_id(item: WorkItem) -> str:
    return str(uuid.uuid5(uuid.UUID(item.id), "journal"))


def extraction_record_ids(deps: EngineDeps, owner: OwnerKey, work: list[WorkItem]) -> list[str]:
    """The saved extraction records of an event's extraction work. Deleting the event removes
    them with it: each holds the validated extraction, the source's sentences verbatim."""
    ids = [_journal_id(item) for item in work if item.kind is WorkKind.EXTRACT]
    return [
        i
        for i in ids
        if (r := deps.ledger.get_journal(owner, i)) and r.operation == EXTRACTION_JOURNAL
    ]


def _is_claim(node: MemoryNode) -> bool:
    extracted = node.metadata.get(EXTRACTION_METADATA_KEY)
    return isinstance(extracted, dict) and extracted.get("kind") == "claim"


def _source_note(
    deps: EngineDeps, owner: OwnerKey, event: Event, item: WorkItem
) -> MemoryNode | None:
    """The source's raw note (committed with it; the work item names it) while it can take a
    claim: active, holding the source's words, and carrying no claim yet."""
    if not item.node_id:
        return None
    note = deps.ledger.get_node(owner, item.node_id)
    if (
        note is None
        or note.lifecycle_state in INACTIVE_LIFECYCLE_STATES
        or note.content != event.content
        or event.id not in note.evidence_refs
        or EXTRACTION_METADATA_KEY in note.metadata
    ):
        return None
    return note


def _saved_extraction(extraction: Extraction) -> dict[str, Any]:
    """The validated extraction as the journal keeps it, each list cut to what can be saved."""
    dump = extraction.model_dump(mode="json")
    for name in ("entities", "claims", "quantities", "relationships"):
        if len(dump[name]) > MAX_SAVED_ARTIFACTS:
            dump[name] = dump[name][:MAX_SAVED_ARTIFACTS]
            dump["truncated"] = True
    # Quotes repeat whole sentences: a record of long ones keeps its claims alone.
    if len(json.dumps(dump)) > MAX_SAVED_CHARACTERS:
        dump = {**dump, "entities": [], "quantities": [], "relationships": [], "truncated": True}
        while dump["claims"] and len(json.dumps(dump)) > MAX_SAVED_CHARACTERS:
            dump["claims"] = dump["claims"][:-1]
    return dump


def saved_extraction(deps: EngineDeps, owner: OwnerKey, event_id: str) -> SavedExtraction:
    """The journal record of the event's completed extraction; NotFound for an unknown or
    foreign event, and for one whose extraction has not completed."""
    if deps.ledger.get_event(owner, event_id) is None:
        raise NotFoundError("Event not found")
    for item in deps.ledger.list_event_work(owner, event_id):
        if item.kind is not WorkKind.EXTRACT:
            continue
        record = deps.ledger.get_journal(owner, _journal_id(item))
        if record is None or record.operation != EXTRACTION_JOURNAL:
            continue
        payload = record.payload
        dump = payload.get("extraction")
        return SavedExtraction(
            event_id=event_id,
            extractor=payload["extractor"],
            reference_time=payload["reference_time"],
            extracted_at=record.created_at,
            extraction=None
            if dump is None
            else Extraction.model_validate({k: v for k, v in dump.items() if k != "truncated"}),
            truncated=bool(dump and dump.get("truncated")),
            node_ids=list(payload.get("node_ids", [])),
            annotated_node_ids=list(payload.get("annotated_node_ids", [])),
            edge_ids=list(payload.get("edge_ids", [])),
            superseded=[SupersededClaim.model_validate(s) for s in payload.get("superseded", [])],
        )
    raise NotFoundError("No completed extraction for this event")


def _record_failure(deps: EngineDeps, item: WorkItem, reason: WorkFailure) -> WorkFailure:
    deps.ledger.save_work(after_failed_attempt(item, reason, deps.clock.now()))
    return reason


@dataclass(frozen=True)
class ExtractedRecords:
    """What an extraction becomes: new nodes and edges, and the claim that states the whole
    source, which goes onto the source's note (`note_claim`) or, without a note, into a
    node of its own (`note_claim_node`)."""

    nodes: list[MemoryNode]
    edges: list[MemoryEdge]
    note_claim: dict[str, Any] | None = None
    note_claim_node: MemoryNode | None = None

    def claim_as_node(self) -> ExtractedRecords:
        if self.note_claim_node is None:
            return self
        return ExtractedRecords(nodes=[*self.nodes, self.note_claim_node], edges=self.edges)


def _claim_metadata(claim: ExtractedClaim) -> dict[str, Any]:
    return {
        "kind": "claim",
        "subject": claim.subject,
        "predicate": claim.predicate,
        "object": claim.object,
        "occurred_on": claim.occurred_on.isoformat() if claim.occurred_on else None,
        "evidence_quote": claim.evidence_quote,
        "polarity": claim.polarity,
        "replaces_object": claim.replaces_object,
        "assertion_key": claim_assertion_key(claim),
    }


def _distinct_claims(claims: tuple[ExtractedClaim, ...]) -> list[tuple[int, ExtractedClaim]]:
    """Each claim once: one source asserting the same thing twice is one assertion."""
    seen: set[tuple[str, ...]] = set()
    kept: list[tuple[int, ExtractedClaim]] = []
    for i, claim in enumerate(claims):
        identity = (
            normalize_phrase(claim.statement),
            claim_assertion_key(claim),
            object_key(claim.object),
            claim.polarity,
            object_key(claim.replaces_object),
        )
        if identity not in seen:
            seen.add(identity)
            kept.append((i, claim))
    return kept


def artifacts_to_records(
    deps: EngineDeps, event: Event, item: WorkItem, extraction: Extraction
) -> ExtractedRecords:
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
    whole_source = normalize_phrase(event.content)
    note_spec: tuple[str, NodeType, str, dict[str, Any], datetime | None] | None = None
    for i, claim in _distinct_claims(extraction.claims):
        occurred = (
            datetime(
                claim.occurred_on.year, claim.occurred_on.month, claim.occurred_on.day, tzinfo=UTC
            )
            if claim.occurred_on
            else None
        )
        spec = (f"claim:{i}", NodeType.FACT, claim.statement, _claim_metadata(claim), occurred)
        if note_spec is None and normalize_phrase(claim.statement) == whole_source:
            note_spec = spec
        else:
            specs.append(spec)
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

    def build(spec: tuple[str, NodeType, str, dict[str, Any], datetime | None]) -> MemoryNode:
        name, node_type, text, meta, valid_from = spec
        return node_from_event(
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

    room = MAX_ARTIFACT_NODES - (note_spec is not None)
    nodes = [build(spec) for spec in specs[:room]]
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
    if note_spec is None:
        return ExtractedRecords(nodes=nodes, edges=edges)
    note_claim_node = build(note_spec)
    return ExtractedRecords(
        nodes=nodes,
        edges=edges,
        note_claim={**note_spec[3], "extractor": extraction.extractor},
        note_claim_node=note_claim_node,
    )

"""Reads of sources, nodes, processing state and receipts; foreign ids read as not found."""

from __future__ import annotations

from datetime import timedelta

from prme.engine.deps import EngineDeps
from prme.engine.journal import read_journal
from prme.errors import CorruptRecordError, NotFoundError
from prme.model.enums import ProcessingStatus, WorkFamily, WorkStatus
from prme.model.records import Event, JournalRecord, MemoryNode, OwnerKey, WorkItem
from prme.retrieval.receipts import RECEIPT_OPERATION, RetrievalReceipt


def get_event(deps: EngineDeps, owner: OwnerKey, event_id: str) -> Event:
    event = deps.ledger.get_event(owner, event_id)
    if event is None:
        raise NotFoundError("Event not found")
    return event


def _require_event(deps: EngineDeps, owner: OwnerKey, event_id: str) -> None:
    """NotFoundError unless the owner has this event; a quarantined one exists, so it passes:
    what was derived from it, and why its work failed, stay readable."""
    try:
        get_event(deps, owner, event_id)
    except CorruptRecordError:
        return


def list_event_nodes(deps: EngineDeps, owner: OwnerKey, event_id: str) -> list[MemoryNode]:
    _require_event(deps, owner, event_id)
    return deps.ledger.list_event_nodes(owner, event_id)


def get_node(deps: EngineDeps, owner: OwnerKey, node_id: str) -> MemoryNode:
    node = deps.ledger.get_node(owner, node_id)
    if node is None:
        raise NotFoundError("Node not found")
    return node


def summarize_work(items: list[WorkItem]) -> ProcessingStatus:
    if any(item.status is WorkStatus.FAILED for item in items):
        return ProcessingStatus.FAILED
    if any(item.status in (WorkStatus.PENDING, WorkStatus.RUNNING) for item in items):
        return ProcessingStatus.PENDING
    return ProcessingStatus.COMPLETED


def get_processing_status(
    deps: EngineDeps, owner: OwnerKey, event_id: str, *, family: WorkFamily = "materialize"
) -> tuple[ProcessingStatus, list[WorkItem]]:
    """Materialization work by default; `family="extract"` gives the extraction status."""
    _require_event(deps, owner, event_id)
    items = [w for w in deps.ledger.list_event_work(owner, event_id) if w.kind.family == family]
    return summarize_work(items), items


def get_receipt_record(deps: EngineDeps, owner: OwnerKey, request_id: str) -> JournalRecord:
    """The journaled receipt of a retrieval; a tampered one raises JournalIntegrityError."""
    record = read_journal(deps, owner, request_id, receipt=True)
    if record is None or record.operation != RECEIPT_OPERATION or receipt_expired(deps, record):
        raise NotFoundError("Retrieval receipt not found")
    return record


def receipt_expired(deps: EngineDeps, record: JournalRecord) -> bool:
    """Past its retention: from its saved expiry, or for a receipt saved before expiries
    existed, from its age under the current retention setting. DynamoDB's TTL deletes
    expired items only eventually, so every read checks."""
    expires_at = record.expires_at or record.created_at + timedelta(
        days=deps.config.receipt_retention_days
    )
    return deps.clock.now() >= expires_at


def get_receipt(deps: EngineDeps, owner: OwnerKey, request_id: str) -> RetrievalReceipt:
    return RetrievalReceipt.from_payload(get_receipt_record(deps, owner, request_id).payload)

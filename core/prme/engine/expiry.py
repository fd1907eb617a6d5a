"""TTL expiry: nodes past their expiry leave retrieval at once and are archived by maintenance.

Retrieval already hides a node from its expiry time on; this pass makes that durable in
the lifecycle, with a journal record, and queues the index update. The source event stays.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import timedelta

from prme.engine.deps import EngineDeps
from prme.engine.materialize import index_work_item
from prme.errors import ConflictError, PrmeError
from prme.model.enums import LifecycleState
from prme.model.records import JournalRecord, MemoryNode, OwnerKey, WorkItem

TTL_ARCHIVE_OPERATION = "ttl_expiry_archive"
_TTL_NAMESPACE = uuid.UUID("6f1e3c52-8a1d-4f7e-9b39-3d0c2a7e5b14")


def delete_expired_receipts(deps: EngineDeps, *, limit: int = 1000) -> int:
    """Delete up to `limit` receipts past their retention, across owners; returns how many.
    They already read as not found (`receipt_expired`); this frees their space where the
    store has no TTL of its own (the embedded ledger)."""
    now = deps.clock.now()
    retention = timedelta(days=deps.config.receipt_retention_days)
    return deps.ledger.delete_expired_receipts(now, saved_before=now - retention, limit=limit)


def expiry_archive(
    deps: EngineDeps, node: MemoryNode
) -> tuple[MemoryNode, JournalRecord, WorkItem]:
    """The archived state of an expired node, its journal record and its index work. The
    record's id comes from the node and its expiry, so a pass repeated after a crash can
    never journal the same expiry twice."""
    now = deps.clock.now()
    owner = OwnerKey(tenant_id=node.tenant_id, owner_id=node.owner_id)
    updated = node.model_copy(
        update={"lifecycle_state": LifecycleState.ARCHIVED, "updated_at": now}
    )
    expires_at = node.expires_at.isoformat() if node.expires_at else None
    journal = JournalRecord.build(
        record_id=str(uuid.uuid5(_TTL_NAMESPACE, f"{node.id}|{expires_at}")),
        owner=owner,
        operation=TTL_ARCHIVE_OPERATION,
        subject_id=node.id,
        created_at=now,
        payload={
            "node_id": node.id,
            "from_state": node.lifecycle_state.value,
            "to_state": LifecycleState.ARCHIVED.value,
            "expires_at": expires_at,
        },
    )
    # The index copy must learn the new state too: a normal index work item does it.
    return updated, journal, index_work_item(deps, updated)


def archive_expired_nodes(deps: EngineDeps, *, limit: int = 100) -> int:
    """Archive up to `limit` expired nodes across owners; returns how many this pass archived."""
    now = deps.clock.now()
    archived = 0
    for node in deps.ledger.list_expired_nodes(now, limit):
        updated, journal, work = expiry_archive(deps, node)
        try:
            deps.ledger.archive_node(updated, journal, work)
        except ConflictError:
            continue  # another pass archived it first
        archived += 1
        with contextlib.suppress(PrmeError):
            deps.queue.enqueue([work])
    return archived

"""Ledger commits built by hand for the ledger adapters' own tests."""

from __future__ import annotations

from datetime import UTC, datetime

from prme.model.enums import (
    EpistemicType,
    LifecycleState,
    NodeType,
    Role,
    Scope,
    SourceType,
    WorkKind,
)
from prme.model.records import Event, JournalRecord, MemoryNode, OwnerKey, StoreCommit, WorkItem

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_commit(
    owner: OwnerKey,
    n: int,
    *,
    at: datetime = T0,
    content: str = "I adopted a dog named Rex.",
    extra_evidence: tuple[str, ...] = (),
    event_id: str | None = None,
) -> StoreCommit:
    event_id = event_id or f"ev-{n:04d}"
    ids = {"tenant_id": owner.tenant_id, "owner_id": owner.owner_id}
    event = Event(
        id=event_id,
        content=content,
        content_sha256="0" * 64,
        role=Role.USER,
        ingested_at=at,
        **ids,
    )
    node = MemoryNode(
        id=f"node-{n:04d}",
        node_type=NodeType.NOTE,
        content=content,
        content_sha256="0" * 64,
        scope=Scope.PERSONAL,
        source_type=SourceType.USER_STATED,
        epistemic_type=EpistemicType.ASSERTED,
        confidence=0.9,
        lifecycle_state=LifecycleState.TENTATIVE,
        created_at=at,
        updated_at=at,
        evidence_refs=(event_id, *extra_evidence),
        **ids,
    )
    journal = JournalRecord.build(
        record_id=f"jr-{n:04d}",
        owner=owner,
        operation="store",
        subject_id=event_id,
        created_at=at,
        payload={"node_id": node.id},
    )
    work = WorkItem.queued(
        WorkKind.INDEX_NODE,
        work_id=f"work-{n:04d}",
        owner=owner,
        event_id=event_id,
        node_id=node.id,
        now=at,
    )
    return StoreCommit(event=event, node=node, journal=journal, work=work)

"""Direct store: commit the verbatim source with its node, journal and work in one transaction."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from prme.engine.deadlines import share_of_deadline
from prme.engine.deps import EngineDeps
from prme.engine.idempotency import (
    commit_or_replay,
    key_binding,
    new_record,
    require_sources_held,
    saved_result,
)
from prme.engine.indexing import index_nodes
from prme.engine.metering import meter_write
from prme.engine.nodes import NodeChoices, new_event, node_from_event
from prme.engine.reads import summarize_work
from prme.engine.work_retry import after_failed_attempt
from prme.errors import PrmeError
from prme.model.enums import NodeType, ProcessingStatus, WorkKind
from prme.model.graph import direct_store_record_id
from prme.model.inputs import StoreInput
from prme.model.records import (
    VALUE_BINDINGS_METADATA_KEY,
    JournalRecord,
    MemoryNode,
    OwnerKey,
    StoreCommit,
    WorkItem,
)
from prme.retrieval.value_bindings import bindings_to_metadata, check_binding_admission

DIRECT_STORE_OPERATION = "direct_store"
# The index write may use this share of what is left of the request's deadline; the rest is
# kept for the ledger commit, so a hung index costs a pending status, never the commit.
INDEX_SHARE_OF_DEADLINE = 0.5
STORE_OPERATION = "store"


@dataclass(frozen=True)
class StoreResult:
    event_id: str
    node_id: str | None
    processing_status: ProcessingStatus


def build_store_commit(
    deps: EngineDeps,
    owner: OwnerKey,
    request: StoreInput,
    *,
    idempotency: tuple[str, str] | None = None,
    operation: str = STORE_OPERATION,
) -> StoreCommit:
    """Turn a validated request into the records of one transaction (no I/O)."""
    if request.value_bindings:
        check_binding_admission(
            request.value_bindings,
            source_content=request.content,
            indexed_text=request.indexed_text,
        )
    now = deps.clock.now()
    metadata = dict(request.metadata or {})
    if request.value_bindings:
        metadata[VALUE_BINDINGS_METADATA_KEY] = bindings_to_metadata(request.value_bindings)
    event = new_event(deps, owner, request, now=now, metadata=metadata)
    node = node_from_event(
        deps,
        event,
        node_id=deps.ids(),
        now=now,
        choices=NodeChoices(
            node_type=request.node_type,
            indexed_text=request.indexed_text,
            source_type=request.source_type,
            epistemic_type=request.epistemic_type,
            confidence=request.confidence,
            ttl_given=request.ttl_given,
            ttl_days=request.ttl_days,
        ),
    )
    journal = JournalRecord.build(
        record_id=direct_store_record_id(event.id),
        owner=owner,
        operation=DIRECT_STORE_OPERATION,
        subject_id=event.id,
        created_at=now,
        payload={
            "event_id": event.id,
            "event_sha256": event.content_sha256,
            # The snapshot without the words (content_sha256 names them): the event holds
            # them, and deleting the memory must leave none behind in the journal.
            "node": node.model_dump(mode="json", exclude={"content", "metadata"}),
        },
    )
    work = WorkItem.queued(
        WorkKind.INDEX_NODE,
        work_id=deps.ids(),
        owner=owner,
        event_id=event.id,
        node_id=node.id,
        now=now,
    )
    record = None
    if idempotency is not None:
        key, digest = idempotency
        result = {"event_id": event.id, "node_id": node.id}
        record = new_record(owner, operation, key, digest=digest, result=result, now=now)
    return StoreCommit(event=event, node=node, journal=journal, work=work, idempotency=record)


def alias_scan_work(
    deps: EngineDeps, node: MemoryNode, *, event_id: str, work_id: str | None = None
) -> WorkItem:
    """A pending alias scan of the node's owner, left for the maintenance pass.

    Its own work family: it never counts in a source's processing or extraction status."""
    return WorkItem.queued(
        WorkKind.ALIAS_SCAN,
        work_id=work_id or deps.ids(),
        owner=OwnerKey(tenant_id=node.tenant_id, owner_id=node.owner_id),
        event_id=event_id,
        node_id=node.id,
        now=deps.clock.now(),
    )


def _replayed(deps: EngineDeps, owner: OwnerKey, result: dict[str, Any]) -> StoreResult:
    require_sources_held(deps.ledger, owner, [result["event_id"]])
    work = [
        w
        for w in deps.ledger.list_event_work(owner, result["event_id"])
        if w.kind.family == "materialize"
    ]
    return StoreResult(
        event_id=result["event_id"],
        node_id=result["node_id"],
        processing_status=summarize_work(work),
    )


def store_memory(
    deps: EngineDeps,
    owner: OwnerKey,
    request: StoreInput,
    idempotency_key: str | None = None,
    *,
    operation: str = STORE_OPERATION,
    digest_of: BaseModel | None = None,
    extra_work: Callable[[StoreCommit], tuple[WorkItem, ...]] | None = None,
) -> StoreResult:
    """Admit a source and its direct node. `operation`, `digest_of` and `extra_work` let
    other write routes (ingest) reuse this path with their own key scope and work."""
    binding = key_binding(idempotency_key, operation, digest_of or request)
    replay = saved_result(deps.ledger, owner, operation, binding)
    if replay is not None:
        return _replayed(deps, owner, replay)
    commit = build_store_commit(deps, owner, request, idempotency=binding, operation=operation)
    extras = extra_work(commit) if extra_work is not None else ()
    if commit.node.node_type is NodeType.ENTITY:
        extras = (*extras, alias_scan_work(deps, commit.node, event_id=commit.event.id))
    if extras:
        commit = commit.model_copy(update={"extra_work": extras})
    # Index first, then commit everything in one ledger write whose work item already says
    # whether indexing happened. A crash or failed commit in between leaves only an index
    # document without a node, which retrieval drops because it reads nodes from the ledger.
    with share_of_deadline(INDEX_SHARE_OF_DEADLINE):
        failure = index_nodes(deps, [commit.node])
    indexed = deps.clock.now()
    if failure is None:
        work = commit.work.succeeded(indexed)
    else:
        work = after_failed_attempt(commit.work, failure, indexed)
    commit = commit.model_copy(update={"work": work})
    replay = commit_or_replay(
        lambda: deps.ledger.commit_store(commit), deps.ledger, owner, operation, binding
    )
    if replay is not None:
        return _replayed(deps, owner, replay)
    # Acknowledged from here on.
    meter_write(
        deps,
        operation,
        owner,
        idempotency_key or commit.event.id,
        [commit.event.content],
        embeddings=int(failure is None),
    )
    if failure is None:
        status = ProcessingStatus.COMPLETED
    else:
        status = ProcessingStatus.PENDING
        # The work item is saved as pending; a sweeper finds it even if this send is lost.
        with contextlib.suppress(PrmeError):
            deps.queue.enqueue([commit.work])
    return StoreResult(event_id=commit.event.id, node_id=commit.node.id, processing_status=status)

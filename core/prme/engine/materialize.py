"""Derived work: embed nodes and write them to the search index, then mark their work done."""

from __future__ import annotations

import math
import struct
import time
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

from prme.engine.deadlines import pass_budget_ms
from prme.engine.deps import EngineDeps
from prme.engine.nodes import node_from_event
from prme.engine.vector_input import vector_segments
from prme.engine.work_refs import WorkRef
from prme.errors import (
    ConflictError,
    CorruptRecordError,
    EmbeddingUnavailableError,
    IndexUnavailableError,
    PrmeError,
    WorkDeferredError,
)
from prme.model.enums import WorkFamily, WorkKind, WorkStatus
from prme.model.records import MemoryNode, OwnerKey, WorkItem
from prme.model.search import IndexDocument

MAX_WORK_ATTEMPTS = 25
# A vector as the engine handles it: a tuple from an index, or a float64 row of embeddings.
Vector: TypeAlias = Sequence[float] | NDArray[np.float64]


@dataclass(frozen=True)
class MaterializeOutcome:
    processed: int
    failed: int
    # Items left pending because a dependency was down; the next pass retries them.
    deferred: int


@dataclass(frozen=True)
class ProcessingReport:
    processed: int
    pending: int
    failed: int


def index_document(
    node: MemoryNode,
    vector: Sequence[float],
    model_key: str,
    *,
    content_vector: Sequence[float] | None = None,
) -> IndexDocument:
    """The node as the index stores it; `content_vector` (its own embedding) defaults to `vector`."""
    searched = _floats(vector)
    content = searched if content_vector is None else _floats(content_vector)
    return IndexDocument(**_document_fields(node, searched, content, model_key))


def _made_document(
    node: MemoryNode,
    vector: tuple[float, ...],
    content_vector: tuple[float, ...],
    model_key: str,
) -> IndexDocument:
    """`index_document` for vectors `index_nodes` has just made with `tolist`.

    Every field already has its model type (a validated node's fields, tuples of Python
    floats), so validation would only copy both vectors float by float: it is skipped."""
    return IndexDocument.model_construct(
        **_document_fields(node, vector, content_vector, model_key)
    )


def _document_fields(
    node: MemoryNode,
    vector: tuple[float, ...],
    content_vector: tuple[float, ...],
    model_key: str,
) -> dict[str, Any]:
    return {
        "tenant_id": node.tenant_id,
        "owner_id": node.owner_id,
        "node_id": node.id,
        "text": node.content,
        "vector": vector,
        "content_vector": content_vector,
        "embedding_model": model_key,
        "node_type": node.node_type,
        "source_type": node.source_type,
        "epistemic_type": node.epistemic_type,
        "lifecycle_state": node.lifecycle_state,
        "scope": node.scope,
        "session_id": node.session_id,
        "event_time": node.event_time,
        "created_at": node.created_at,
        "expires_at": node.expires_at,
    }


def index_work_item(deps: EngineDeps, node: MemoryNode) -> WorkItem:
    """A pending item that (re)writes a node's index document, e.g. after a state change."""
    now = deps.clock.now()
    return WorkItem(
        id=deps.ids(),
        tenant_id=node.tenant_id,
        owner_id=node.owner_id,
        kind=WorkKind.INDEX_NODE,
        event_id=node.evidence_refs[0] if node.evidence_refs else node.id,
        node_id=node.id,
        created_at=now,
        updated_at=now,
    )


def _floats(vector: Sequence[float] | NDArray[np.float64]) -> tuple[float, ...]:
    """A vector as a tuple of Python floats (tolist converts numpy arrays in one C call)."""
    if isinstance(vector, tuple):
        return vector
    values = np.asarray(vector, dtype=np.float64).tolist()
    return tuple(values)


def session_context_vector(
    own: Sequence[float], predecessor: Sequence[float] | None, weight: float
) -> tuple[float, ...]:
    """What vector search compares against: normalize(own + weight * predecessor).

    A short reply ("Yes, last week!") lands near what it answers. The own vector is kept
    as it is without a predecessor, with weight 0, or when the mix would have no direction."""
    mixed = _mixed(np.asarray(own, dtype=np.float64), predecessor, weight)
    return _floats(own) if mixed is None else _floats(mixed)


def _mixed(
    own: NDArray[np.float64], predecessor: Vector | None, weight: float
) -> NDArray[np.float64] | None:
    """normalize(own + weight * predecessor), or None where `session_context_vector` keeps
    the own vector. Works on arrays so indexing converts each vector to a tuple only once."""
    if predecessor is None or weight <= 0:
        return None
    before = _array(predecessor)
    if before.shape != own.shape:
        return None
    mixed = own + weight * before
    # np.linalg.norm of a 1-d vector is sqrt(x.dot(x)): the same value without its checks.
    norm = math.sqrt(mixed.dot(mixed))
    if not math.isfinite(norm) or norm == 0.0:
        return None
    mixed /= norm
    return mixed


def _array(vector: Vector) -> NDArray[np.float64]:
    """A vector as a float64 array. A tuple of floats is packed as C doubles in one call:
    the same values for about half the work of `np.asarray`, which inspects each item."""
    if isinstance(vector, tuple):
        return np.frombuffer(struct.pack(f"{len(vector)}d", *vector), dtype=np.float64)
    return np.asarray(vector, dtype=np.float64)


def _order(node: MemoryNode) -> tuple[datetime, str]:
    # Predecessors are compared by effective time, then node id: the rule of the index lookup.
    return (node.effective_time, node.id)


def _batch_predecessors(nodes: Sequence[MemoryNode]) -> dict[int, int]:
    """For each node with a session, the position of the latest earlier node of its owner
    and session in the same batch (equal times are not earlier; ties: greatest node id)."""
    sessions: dict[tuple[str, str, str], list[int]] = {}
    for i, node in enumerate(nodes):
        if node.session_id is not None:
            key = (node.tenant_id, node.owner_id, node.session_id)
            sessions.setdefault(key, []).append(i)
    found: dict[int, int] = {}
    for members in sessions.values():
        members.sort(key=lambda i: _order(nodes[i]))
        times = [nodes[i].effective_time for i in members]
        for i in members:
            earlier = bisect_left(times, nodes[i].effective_time)
            if earlier:
                found[i] = members[earlier - 1]
    return found


def session_predecessors(
    deps: EngineDeps, nodes: Sequence[MemoryNode], own: Sequence[Vector]
) -> list[Vector | None]:
    """The own vector of the record said just before each node in its session, if any.

    The latest earlier record among this batch and the index: a batch need not hold every
    record of a session (a reindex of some records, a late turn), and a record must get the
    same vector whatever batch it is indexed in. One batched index lookup per owner."""
    result: list[Vector | None] = [None] * len(nodes)
    if deps.config.vector_session_context <= 0:
        return result
    model_key = deps.embedder.model.key
    in_batch = _batch_predecessors(nodes)
    batch_ids = {node.id for node in nodes}
    # Index answers that compete with a batch candidate: the later of the two wins.
    contested: dict[int, str] = {}
    for i, found in _indexed_predecessors(deps, nodes, model_key).items():
        batch = in_batch.get(i)
        if found is None or found[0] in batch_ids:
            # Nothing indexed, or an older copy of a node of this batch: the batch's
            # candidate is at least as late and its vector is fresh.
            result[i] = own[batch] if batch is not None else None
        else:
            result[i] = found[1]
            if batch is not None:
                contested[i] = found[0]
    indexed = _ledger_orders(deps, nodes, contested)
    for i, node_id in contested.items():
        batch = in_batch[i]
        order = indexed.get((_owner_of(nodes[i]), node_id))
        # A document whose node was never committed (a failed store) loses to the batch.
        if order is None or order < _order(nodes[batch]):
            result[i] = own[batch]
    return result


def _indexed_predecessors(
    deps: EngineDeps, nodes: Sequence[MemoryNode], model_key: str
) -> dict[int, tuple[str, tuple[float, ...]] | None]:
    """The index's answer for every node with a session, by position: one call per owner."""
    by_owner: dict[OwnerKey, list[int]] = {}
    for i, node in enumerate(nodes):
        if node.session_id is not None:
            by_owner.setdefault(_owner_of(node), []).append(i)
    found: dict[int, tuple[str, tuple[float, ...]] | None] = {}
    for owner, positions in by_owner.items():
        lookups = [(nodes[i].session_id or "", nodes[i].effective_time) for i in positions]
        answers = deps.index.session_predecessors(owner, lookups, model_key)
        found.update(zip(positions, answers, strict=True))
    return found


def _owner_of(node: MemoryNode) -> OwnerKey:
    return _owner_key(node.tenant_id, node.owner_id)


@lru_cache(maxsize=1024)
def _owner_key(tenant_id: str, owner_id: str) -> OwnerKey:
    # Keys are frozen, so one per partition is shared; indexing asks for it once a record.
    return OwnerKey(tenant_id=tenant_id, owner_id=owner_id)


def _ledger_orders(
    deps: EngineDeps, nodes: Sequence[MemoryNode], wanted: dict[int, str]
) -> dict[tuple[OwnerKey, str], tuple[datetime, str]]:
    """The (effective time, id) of indexed predecessors, read from the ledger per owner."""
    by_owner: dict[OwnerKey, set[str]] = {}
    for i, node_id in wanted.items():
        by_owner.setdefault(_owner_of(nodes[i]), set()).add(node_id)
    return {
        (owner, node_id): _order(node)
        for owner, node_ids in by_owner.items()
        for node_id, node in deps.ledger.get_nodes(owner, sorted(node_ids)).items()
    }


def write_index_documents(deps: EngineDeps, nodes: Sequence[MemoryNode]) -> None:
    """Embed nodes and upsert their index documents. Raises EmbeddingUnavailableError or
    IndexUnavailableError when a dependency is down."""
    if not nodes:
        return
    config = deps.config
    embedded = deps.embedder.embed_segmented(
        [vector_segments(node, config.vector_text, config.vector_segments) for node in nodes]
    )
    # Float64 rows (the embedder's values exactly): mixing reads them without copies and
    # each vector becomes a tuple of floats once, for its index document.
    own: list[NDArray[np.float64]] = list(np.asarray(embedded, dtype=np.float64))
    before = session_predecessors(deps, nodes, own)
    weight = config.vector_session_context
    model_key = deps.embedder.model.key
    documents: list[IndexDocument] = []
    for node, vector, previous in zip(nodes, own, before, strict=True):
        content = _floats(vector)
        mixed = _mixed(vector, previous, weight)
        searched = content if mixed is None else _floats(mixed)
        documents.append(_made_document(node, searched, content, model_key))
    deps.index.upsert(documents)


def index_nodes(deps: EngineDeps, nodes: Sequence[MemoryNode]) -> str | None:
    """Embed and index nodes; the failure category when a dependency is down, else None."""
    try:
        write_index_documents(deps, nodes)
    except EmbeddingUnavailableError:
        return "embedding_unavailable"
    except IndexUnavailableError:
        return "index_unavailable"
    return None


@dataclass(frozen=True)
class Target:
    """One work item and the node it produces: existing (index it) or new (save it too)."""

    item: WorkItem
    node: MemoryNode
    new: bool = False


def materialize_nodes(
    deps: EngineDeps, work: Sequence[tuple[WorkItem, MemoryNode]]
) -> MaterializeOutcome:
    """Index existing nodes; their work items become done, or stay pending on a failure."""
    return materialize_targets(deps, [Target(item, node) for item, node in work])


def materialize_targets(deps: EngineDeps, targets: Sequence[Target]) -> MaterializeOutcome:
    """Embed and index a batch; on a dependency failure every item stays pending."""
    if not targets:
        return MaterializeOutcome(0, 0, 0)
    reason = index_nodes(deps, [t.node for t in targets])
    now = deps.clock.now()
    failed = 0
    for target in targets:
        item = target.item
        if reason is None:
            done = item.model_copy(update={"status": WorkStatus.DONE, "updated_at": now})
            if target.new:
                try:
                    deps.ledger.commit_materialization(target.node, done)
                    continue
                except ConflictError:
                    pass  # another pass saved this node first; just close the work item
            deps.ledger.save_work(done)
            continue
        attempts = item.attempts + 1
        status = WorkStatus.FAILED if attempts >= MAX_WORK_ATTEMPTS else WorkStatus.PENDING
        failed += status is WorkStatus.FAILED
        deps.ledger.save_work(
            item.model_copy(
                update={
                    "status": status,
                    "attempts": attempts,
                    "last_error": reason,
                    "updated_at": now,
                }
            )
        )
    if reason is None:
        return MaterializeOutcome(processed=len(targets), failed=0, deferred=0)
    return MaterializeOutcome(processed=0, failed=failed, deferred=len(targets) - failed)


SOURCE_MISSING = "source_missing"
# Extraction records a failure by its class name, so its missing source is spelled apart.
EXTRACTION_SOURCE_MISSING = "SourceMissing"
# Failures no retry can mend, of either kind of work: the source is gone or unreadable.
FINAL_FAILURES = frozenset(
    {SOURCE_MISSING, EXTRACTION_SOURCE_MISSING, CorruptRecordError.reason_code}
)


def resolve_targets(
    deps: EngineDeps, owner: OwnerKey, items: Sequence[WorkItem]
) -> tuple[list[Target], list[tuple[WorkItem, str]]]:
    """The node each pending item works on; items that cannot have one are returned apart,
    each with the reason it fails for good (its source is gone, or unreadable)."""
    existing = deps.ledger.get_nodes(
        owner, [i.node_id for i in items if i.kind is WorkKind.INDEX_NODE]
    )
    targets: list[Target] = []
    unworkable: list[tuple[WorkItem, str]] = []
    for item in items:
        try:
            target = _target(deps, owner, item, existing)
        except CorruptRecordError as exc:
            # Quarantined: this item fails with the reason, the rest of the batch goes on.
            unworkable.append((item, exc.reason_code))
            continue
        if target is None:
            unworkable.append((item, SOURCE_MISSING))
        else:
            targets.append(target)
    return targets, unworkable


def _target(
    deps: EngineDeps, owner: OwnerKey, item: WorkItem, existing: dict[str, MemoryNode]
) -> Target | None:
    """The item's target, None when its source is gone. Raises CorruptRecordError."""
    if item.kind is WorkKind.INDEX_NODE:
        node = existing.get(item.node_id)
        if node is None:
            # A batch read leaves an unreadable node out: read it alone to tell which it is.
            node = deps.ledger.get_node(owner, item.node_id)
        return None if node is None else Target(item, node)
    event = deps.ledger.get_event(owner, item.event_id)
    if event is None:
        return None
    already = deps.ledger.get_node(owner, item.node_id)
    if already is not None:
        return Target(item, already)
    node = node_from_event(deps, event, node_id=item.node_id, now=deps.clock.now())
    return Target(item, node, new=True)


def _fail_unworkable(deps: EngineDeps, unworkable: Sequence[tuple[WorkItem, str]]) -> None:
    now = deps.clock.now()
    for item, reason in unworkable:
        deps.ledger.save_work(
            item.model_copy(
                update={"status": WorkStatus.FAILED, "last_error": reason, "updated_at": now}
            )
        )


def process_work_refs(deps: EngineDeps, refs: Sequence[WorkRef]) -> ProcessingReport:
    """Process the work items queue messages point at; done or unknown items are skipped."""
    processed = failed = 0
    by_owner: dict[OwnerKey, set[tuple[str, str]]] = {}
    for ref in refs:
        by_owner.setdefault(ref.owner, set()).add((ref.event_id, ref.work_id))
    for owner, wanted in by_owner.items():
        named = [
            item
            for event_id in sorted({event_id for event_id, _ in wanted})
            for item in deps.ledger.list_event_work(owner, event_id)
            if (item.event_id, item.id) in wanted
        ]
        items = [_revived(deps, item) if revives_on_redelivery(item) else item for item in named]
        items = [item for item in items if item.status is WorkStatus.PENDING]
        extract = [i for i in items if i.kind.family == "extract"]
        if extract:
            from prme.engine.extraction import run_extractions

            reasons = [run_extractions(deps, owner, [item]) for item in extract]
            if any(r is not None and r not in FINAL_FAILURES for r in reasons):
                raise WorkDeferredError()
            # Failed for good (e.g. a quarantined source): redelivery would change nothing.
            processed += reasons.count(None)
            failed += len(reasons) - reasons.count(None)
        items = [i for i in items if i.kind.family == "materialize"]
        targets, unworkable = resolve_targets(deps, owner, items)
        _fail_unworkable(deps, unworkable)
        outcome = materialize_targets(deps, targets)
        processed += outcome.processed
        failed += outcome.failed + len(unworkable)
        if outcome.deferred:
            # A dependency is down: fail the batch so the queue redelivers it later.
            raise WorkDeferredError()
    return ProcessingReport(processed=processed, pending=0, failed=failed)


def revives_on_redelivery(item: WorkItem) -> bool:
    """A message naming failed work comes back only when an operator redrives its dead-letter
    queue (the last receive fails the item before SQS moves the message): work that failed
    because its attempts ran out starts afresh then; work that can never succeed stays failed."""
    return item.status is WorkStatus.FAILED and item.last_error not in FINAL_FAILURES


def _revived(deps: EngineDeps, item: WorkItem) -> WorkItem:
    revived = item.model_copy(
        update={
            "status": WorkStatus.PENDING,
            "attempts": 0,
            "sweeps": 0,
            "last_error": None,
            "updated_at": deps.clock.now(),
        }
    )
    deps.ledger.save_work(revived)
    return revived


def fail_work(deps: EngineDeps, ref: WorkRef, reason: str) -> bool:
    """Mark a work item failed (its retries are spent); True when a pending item changed."""
    for item in deps.ledger.list_event_work(ref.owner, ref.event_id):
        if item.id == ref.work_id and item.status is WorkStatus.PENDING:
            deps.ledger.save_work(
                item.model_copy(
                    update={
                        "status": WorkStatus.FAILED,
                        "last_error": reason,
                        "updated_at": deps.clock.now(),
                    }
                )
            )
            return True
    return False


# Families of queued work the sweeper re-announces. Alias scans are not queued: every
# maintenance pass lists and runs them itself, so none can be lost.
SWEPT_FAMILIES: tuple[WorkFamily, ...] = ("materialize", "extract")
# Times the sweeper announces one item again; overdue once more after that, it is failed.
MAX_SWEEPS = 3
# The reason an item failed by the sweeper shows (its last failure, if any, is logged).
SWEEPS_EXHAUSTED = "overdue_after_retries"
# Items saved and announced together (SQS sends up to ten messages in one call).
_SWEEP_BATCH = 10


@dataclass(frozen=True)
class SweepReport:
    announced: int
    failed: int
    # Items failed by this pass, with the last failure each had recorded before (or None):
    # a category, never content, so an edge may log it.
    failures: tuple[tuple[WorkItem, str | None], ...] = ()


def sweep_overdue_work(
    deps: EngineDeps,
    *,
    overdue_seconds: int | Mapping[WorkFamily, int],
    limit: int = 500,
) -> SweepReport:
    """Announce again every queued item (any family) pending untouched for longer than its
    family's `overdue_seconds` (lost sends, crashed or timed-out workers, dead-lettered
    messages), at most MAX_SWEEPS times; an item overdue after that is failed with its reason.

    Each announcement is saved (count and time) before it is sent: a worker that finishes
    the item meanwhile is not overwritten later, and a send that fails still counts. Items
    are saved and sent a queue batch at a time, so a pass cut short (its deadline, an
    outage) leaves at most one batch counted but not announced."""
    now = deps.clock.now()
    announced = 0
    failures: list[tuple[WorkItem, str | None]] = []
    for family in SWEPT_FAMILIES:
        seconds = overdue_seconds if isinstance(overdue_seconds, int) else overdue_seconds[family]
        cutoff = now - timedelta(seconds=seconds)
        listed = deps.ledger.list_pending_work(None, limit, family=family)
        overdue = [w for w in listed if w.updated_at <= cutoff]
        for start in range(0, len(overdue), _SWEEP_BATCH):
            announce: list[WorkItem] = []
            for item in _still_overdue(deps, overdue[start : start + _SWEEP_BATCH], cutoff):
                if item.sweeps >= MAX_SWEEPS:
                    failed = item.model_copy(
                        update={
                            "status": WorkStatus.FAILED,
                            "last_error": SWEEPS_EXHAUSTED,
                            "updated_at": now,
                        }
                    )
                    deps.ledger.save_work(failed)
                    failures.append((failed, item.last_error))
                    continue
                swept = item.model_copy(update={"sweeps": item.sweeps + 1, "updated_at": now})
                deps.ledger.save_work(swept)
                announce.append(swept)
            if announce:
                deps.queue.enqueue(announce)
                announced += len(announce)
    return SweepReport(announced=announced, failed=len(failures), failures=tuple(failures))


def _still_overdue(
    deps: EngineDeps, candidates: Sequence[WorkItem], cutoff: datetime
) -> list[WorkItem]:
    """The candidates as the ledger holds them now, those still pending and untouched.

    A listing of pending work may lag (DynamoDB's GSIs are eventually consistent): an item a
    worker has just finished must not be saved back as pending. Overdue work is rare, so one
    consistent read per source is cheap."""
    current: list[WorkItem] = []
    for item in candidates:
        owner = _owner_key(item.tenant_id, item.owner_id)
        for stored in deps.ledger.list_event_work(owner, item.event_id):
            if (
                stored.id == item.id
                and stored.status is WorkStatus.PENDING
                and stored.updated_at <= cutoff
            ):
                current.append(stored)
    return current


def process_pending_work(
    deps: EngineDeps, owner: OwnerKey | None, *, budget_ms: int | None = None
) -> ProcessingReport:
    """One bounded pass over pending work (one owner, or all owners when `owner` is None)."""
    budget_ms = pass_budget_ms(budget_ms)
    batch = deps.config.work_batch_size
    if budget_ms == 0:
        return ProcessingReport(
            processed=0, pending=deps.ledger.count_pending_work(owner), failed=0
        )
    started = time.monotonic()
    processed = failed = 0
    items = deps.ledger.list_pending_work(owner, batch)
    # Group by owner: nodes are read per partition.
    by_owner: dict[OwnerKey, list[WorkItem]] = {}
    for item in items:
        by_owner.setdefault(OwnerKey(tenant_id=item.tenant_id, owner_id=item.owner_id), []).append(
            item
        )
    for key, owner_items in by_owner.items():
        if budget_ms is not None and (time.monotonic() - started) * 1000 >= budget_ms:
            break
        targets, unworkable = resolve_targets(deps, key, owner_items)
        _fail_unworkable(deps, unworkable)
        failed += len(unworkable)
        try:
            outcome = materialize_targets(deps, targets)
        except PrmeError:
            break
        processed += outcome.processed
        failed += outcome.failed
    return ProcessingReport(
        processed=processed, pending=deps.ledger.count_pending_work(owner), failed=failed
    )

"""Materialization work: the node each index or fast-ingest work item produces, built if it is
new, indexed, and its item closed (done, or pending again when a dependency is down)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prme.engine.deps import EngineDeps
from prme.engine.indexing import index_nodes
from prme.engine.metering import meter_work
from prme.engine.nodes import node_from_event
from prme.engine.work_retry import after_failed_attempt
from prme.errors import ConflictError, CorruptRecordError
from prme.model.enums import WorkFailure, WorkKind, WorkStatus
from prme.model.records import MemoryNode, OwnerKey, WorkItem
from prme.model.usage import UsageUnits


@dataclass(frozen=True)
class WorkOutcome:
    """What one batch of work came to."""

    processed: int
    failed: int
    # Items left pending because a dependency was down; the next pass retries them.
    deferred: int


@dataclass(frozen=True)
class Target:
    """One work item and the node it produces: existing (index it) or new (save it too)."""

    item: WorkItem
    node: MemoryNode
    new: bool = False


def index_work_item(deps: EngineDeps, node: MemoryNode) -> WorkItem:
    """A pending item that (re)writes a node's index document, e.g. after a state change."""
    return WorkItem.queued(
        WorkKind.INDEX_NODE,
        work_id=deps.ids(),
        owner=OwnerKey(tenant_id=node.tenant_id, owner_id=node.owner_id),
        event_id=node.evidence_refs[0] if node.evidence_refs else node.id,
        node_id=node.id,
        now=deps.clock.now(),
    )


def materialize_nodes(deps: EngineDeps, work: Sequence[tuple[WorkItem, MemoryNode]]) -> WorkOutcome:
    """Index existing nodes; their work items become done, or stay pending on a failure."""
    return materialize_targets(deps, [Target(item, node) for item, node in work])


def materialize_targets(deps: EngineDeps, targets: Sequence[Target]) -> WorkOutcome:
    """Embed and index a batch; on a dependency failure every item stays pending."""
    if not targets:
        return WorkOutcome(0, 0, 0)
    reason = index_nodes(deps, [t.node for t in targets])
    now = deps.clock.now()
    failed = 0
    for target in targets:
        item = target.item
        if reason is None:
            done = item.succeeded(now)
            if target.new:
                try:
                    deps.ledger.commit_materialization(target.node, done)
                    continue
                except ConflictError:
                    pass  # another pass saved this node first; just close the work item
            deps.ledger.save_work(done)
            continue
        retried = after_failed_attempt(item, reason, now)
        failed += retried.status is WorkStatus.FAILED
        deps.ledger.save_work(retried)
    if reason is None:
        # Built: a node saved from its source here; every target's vectors were made.
        meter_work(
            deps,
            "materialize",
            [(t.item, UsageUnits(records=int(t.new), embeddings=1)) for t in targets],
        )
        return WorkOutcome(processed=len(targets), failed=0, deferred=0)
    return WorkOutcome(processed=0, failed=failed, deferred=len(targets) - failed)


def materialize_work(deps: EngineDeps, owner: OwnerKey, items: Sequence[WorkItem]) -> WorkOutcome:
    """Materialize one owner's items; those whose source is gone or unreadable fail for good."""
    targets, unworkable = resolve_targets(deps, owner, items)
    fail_unworkable(deps, unworkable)
    outcome = materialize_targets(deps, targets)
    return WorkOutcome(outcome.processed, outcome.failed + len(unworkable), outcome.deferred)


def resolve_targets(
    deps: EngineDeps, owner: OwnerKey, items: Sequence[WorkItem]
) -> tuple[list[Target], list[tuple[WorkItem, WorkFailure]]]:
    """The node each pending item works on; items that cannot have one are returned apart,
    each with the reason it fails for good (its source is gone, or unreadable)."""
    existing = deps.ledger.get_nodes(
        owner, [i.node_id for i in items if i.kind is WorkKind.INDEX_NODE]
    )
    targets: list[Target] = []
    unworkable: list[tuple[WorkItem, WorkFailure]] = []
    for item in items:
        try:
            target = _target(deps, owner, item, existing)
        except CorruptRecordError:
            # Quarantined: this item fails with the reason, the rest of the batch goes on.
            unworkable.append((item, WorkFailure.CORRUPT_RECORD))
            continue
        if target is None:
            unworkable.append((item, WorkFailure.SOURCE_MISSING))
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
    # Recorded when its source was, as a stored memory is: a node's time (without an
    # event_time) orders it in its session, and the order work happens to run in, or the
    # function instance that runs it, must not change that order.
    node = node_from_event(deps, event, node_id=item.node_id, now=event.ingested_at)
    return Target(item, node, new=True)


def fail_unworkable(deps: EngineDeps, unworkable: Sequence[tuple[WorkItem, WorkFailure]]) -> None:
    now = deps.clock.now()
    for item, reason in unworkable:
        deps.ledger.save_work(item.failed(reason, now))

"""Lifecycle moves (promote, archive, reinforce) and supersedence: forward-only, audited, atomic.

Each move commits the new node state, a checksummed journal record, any edge and the index
work together, guarded against concurrent changes. An Idempotency-Key makes a retried move
return the current node; without one the strict state machine answers a repeated move.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prme.engine.deps import EngineDeps
from prme.engine.idempotency import check_replay, new_record
from prme.engine.materialize import index_work_item
from prme.engine.organizer_rules import decay_record
from prme.errors import ConflictError, InvalidRequestError, NotFoundError, PrmeError
from prme.model.canonical import checksum
from prme.model.enums import INACTIVE_LIFECYCLE_STATES, LifecycleState
from prme.model.records import (
    DECAY_METADATA_KEY,
    IdempotencyRecord,
    JournalRecord,
    MemoryEdge,
    MemoryNode,
    NodeChange,
    OwnerKey,
)

LIFECYCLE_OPERATION = "lifecycle"
SUPERSEDE_OPERATION = "supersede"
_PROMOTABLE = frozenset({LifecycleState.TENTATIVE, LifecycleState.CONTESTED})
# Each confirmation closes a tenth of the remaining distance to full confidence.
_REINFORCE_STEP = 0.1


class InvalidTransitionError(ConflictError):
    """The node's current state does not allow this move."""


def _node(deps: EngineDeps, owner: OwnerKey, node_id: str) -> MemoryNode:
    node = deps.ledger.get_node(owner, node_id)
    if node is None:
        raise NotFoundError("Node not found")
    return node


def _commit(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    updates: list[tuple[MemoryNode, MemoryNode]],
    operation: str,
    payload: dict[str, Any],
    edges: tuple[MemoryEdge, ...] = (),
    idempotency: IdempotencyRecord | None = None,
) -> None:
    now = deps.clock.now()
    subject = updates[0][1].id
    journal = JournalRecord.build(
        record_id=deps.ids(),
        owner=owner,
        operation=operation,
        subject_id=subject,
        created_at=now,
        payload=payload,
    )
    work = tuple(index_work_item(deps, new) for _, new in updates)
    deps.ledger.commit_node_change(
        NodeChange(
            updates=tuple(updates),
            journal=journal,
            edges=edges,
            work=work,
            idempotency=idempotency,
        )
    )
    with contextlib.suppress(PrmeError):
        deps.queue.enqueue(list(work))


# The same two steps for the other graph changes (conditions, contradictions).
existing_node = _node
commit_change = _commit


def _move(
    deps: EngineDeps,
    owner: OwnerKey,
    node_id: str,
    *,
    action: str,
    request: dict[str, Any],
    idempotency_key: str | None,
    apply: Callable[[MemoryNode], MemoryNode],
) -> MemoryNode:
    digest = checksum({"action": action, "node_id": node_id, "request": request})
    if idempotency_key:
        saved = deps.ledger.get_idempotency(owner, LIFECYCLE_OPERATION, idempotency_key)
        if saved is not None:
            check_replay(saved, LIFECYCLE_OPERATION, digest)
            return _node(deps, owner, node_id)
    node = _node(deps, owner, node_id)
    updated = apply(node)
    record = None
    if idempotency_key:
        record = new_record(
            owner,
            LIFECYCLE_OPERATION,
            idempotency_key,
            digest=digest,
            result={"node_id": node_id},
            now=deps.clock.now(),
        )
    try:
        _commit(
            deps,
            owner,
            updates=[(node, updated)],
            operation=f"node_{action}",
            payload={
                "node_id": node_id,
                "from_state": node.lifecycle_state.value,
                "to_state": updated.lifecycle_state.value,
                "request": request,
            },
            idempotency=record,
        )
    except ConflictError:
        if idempotency_key:
            saved = deps.ledger.get_idempotency(owner, LIFECYCLE_OPERATION, idempotency_key)
            if saved is not None:
                check_replay(saved, LIFECYCLE_OPERATION, digest)
                return _node(deps, owner, node_id)
        raise
    return updated


@dataclass(frozen=True)
class _StateMove:
    """A lifecycle action that only sets the node's state, from the states that allow it."""

    to: LifecycleState
    allowed_from: frozenset[LifecycleState]
    refusal: str  # formatted with the node's current state


_STATE_MOVES = {
    "promote": _StateMove(LifecycleState.STABLE, _PROMOTABLE, "A {state} node cannot be promoted"),
    "archive": _StateMove(
        LifecycleState.ARCHIVED,
        frozenset(LifecycleState) - {LifecycleState.ARCHIVED},
        "The node is already archived",
    ),
}


def _set_state(
    deps: EngineDeps, owner: OwnerKey, node_id: str, action: str, idempotency_key: str | None
) -> MemoryNode:
    move = _STATE_MOVES[action]

    def apply(node: MemoryNode) -> MemoryNode:
        if node.lifecycle_state not in move.allowed_from:
            raise InvalidTransitionError(move.refusal.format(state=node.lifecycle_state.value))
        return node.model_copy(update={"lifecycle_state": move.to, "updated_at": deps.clock.now()})

    return _move(
        deps,
        owner,
        node_id,
        action=action,
        request={},
        idempotency_key=idempotency_key,
        apply=apply,
    )


def promote(
    deps: EngineDeps, owner: OwnerKey, node_id: str, *, idempotency_key: str | None = None
) -> MemoryNode:
    return _set_state(deps, owner, node_id, "promote", idempotency_key)


def archive(
    deps: EngineDeps, owner: OwnerKey, node_id: str, *, idempotency_key: str | None = None
) -> MemoryNode:
    return _set_state(deps, owner, node_id, "archive", idempotency_key)


def reinforce(
    deps: EngineDeps,
    owner: OwnerKey,
    node_id: str,
    *,
    evidence_id: str | None = None,
    idempotency_key: str | None = None,
) -> MemoryNode:
    if evidence_id is not None and deps.ledger.get_event(owner, evidence_id) is None:
        raise NotFoundError("Evidence event not found")

    def apply(node: MemoryNode) -> MemoryNode:
        if node.lifecycle_state in INACTIVE_LIFECYCLE_STATES:
            raise InvalidTransitionError(
                f"A {node.lifecycle_state.value} node cannot be reinforced"
            )
        refs = node.evidence_refs
        if evidence_id is not None and evidence_id not in refs:
            refs = (*refs, evidence_id)
        now = deps.clock.now()
        confidence = node.confidence + (1.0 - node.confidence) * _REINFORCE_STEP
        salience = min(1.0, node.salience + _REINFORCE_STEP)
        return node.model_copy(
            update={
                "confidence": confidence,
                "salience": salience,
                "evidence_refs": refs,
                "updated_at": now,
                # The organizer's decay starts again from the reinforced values.
                "metadata": {
                    **node.metadata,
                    DECAY_METADATA_KEY: decay_record(salience, confidence, now),
                },
            }
        )

    return _move(
        deps,
        owner,
        node_id,
        action="reinforce",
        request={"evidence_id": evidence_id},
        idempotency_key=idempotency_key,
        apply=apply,
    )


def supersede(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    old_node_id: str,
    new_node_id: str,
    evidence_id: str | None = None,
) -> tuple[MemoryNode, MemoryNode]:
    """Mark `old` superseded by `new`: state, edge and audit in one commit; exact replay is safe."""
    if old_node_id == new_node_id:
        raise InvalidRequestError("A node cannot supersede itself", field=("new_node_id",))
    # The pair is the key: the same body again returns the published result, while other
    # evidence for an already published pair is refused.
    pair_key = f"{old_node_id}>{new_node_id}"
    digest = checksum({"evidence_id": evidence_id})
    saved = deps.ledger.get_idempotency(owner, SUPERSEDE_OPERATION, pair_key)
    if saved is not None:
        _replay_supersedence(saved, digest)
        return _node(deps, owner, old_node_id), _node(deps, owner, new_node_id)
    old, new = _node(deps, owner, old_node_id), _node(deps, owner, new_node_id)
    if evidence_id is not None:
        event = deps.ledger.get_event(owner, evidence_id)
        if event is None:
            raise NotFoundError("Evidence event not found")
        if event.scope is not old.scope:
            raise InvalidRequestError(
                "The evidence belongs to another scope", field=("evidence_id",)
            )
    if old.scope is not new.scope:
        raise InvalidRequestError("Both nodes must be in one scope", field=("new_node_id",))
    for node, field in ((old, "old_node_id"), (new, "new_node_id")):
        if node.lifecycle_state in INACTIVE_LIFECYCLE_STATES:
            raise InvalidTransitionError(f"The {field} node is {node.lifecycle_state.value}")
    now = deps.clock.now()
    updated_old, edge = superseded_by(
        old, new, edge_id=deps.ids(), evidence_id=evidence_id, now=now, valid_to=now
    )
    record = new_record(
        owner, SUPERSEDE_OPERATION, pair_key, digest=digest, result={"edge_id": edge.id}, now=now
    )
    try:
        _commit(
            deps,
            owner,
            updates=[(old, updated_old)],
            operation="supersede",
            payload={
                "old_node_id": old.id,
                "new_node_id": new.id,
                "evidence_id": evidence_id,
                "edge_id": edge.id,
            },
            edges=(edge,),
            idempotency=record,
        )
    except ConflictError:
        saved = deps.ledger.get_idempotency(owner, SUPERSEDE_OPERATION, pair_key)
        if saved is None:
            raise
        _replay_supersedence(saved, digest)
        return _node(deps, owner, old_node_id), _node(deps, owner, new_node_id)
    return updated_old, new


def superseded_by(
    old: MemoryNode,
    new: MemoryNode,
    *,
    edge_id: str,
    evidence_id: str | None,
    now: datetime,
    valid_to: datetime,
) -> tuple[MemoryNode, MemoryEdge]:
    """The state change of `old` superseded by `new`: the old node's next state and the
    `supersedes` edge from new to old. Extraction applies the same change on ingest."""
    updated_old = old.model_copy(
        update={
            "lifecycle_state": LifecycleState.SUPERSEDED,
            "valid_to": valid_to,
            "updated_at": now,
        }
    )
    edge = MemoryEdge(
        id=edge_id,
        tenant_id=old.tenant_id,
        owner_id=old.owner_id,
        edge_type="supersedes",
        source_node_id=new.id,
        target_node_id=old.id,
        evidence_refs=(evidence_id,) if evidence_id else (),
        created_at=now,
    )
    return updated_old, edge


def _replay_supersedence(saved: IdempotencyRecord, digest: str) -> None:
    try:
        check_replay(saved, SUPERSEDE_OPERATION, digest)
    except ConflictError:
        raise InvalidRequestError(
            "This supersedence was published with other evidence", field=("evidence_id",)
        ) from None

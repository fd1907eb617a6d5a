"""Contradictions between memories: marking two memories as contradicting each other
(both contested, linked by a `contradicts` edge) and resolving it (winner stable, loser
deprecated), each with its journal record and index work in one transaction.

The pair is the key, as for a supersedence: the same request again answers the current
nodes without a second edge; the same pair with other evidence is refused (422).
"""

from __future__ import annotations

from prme.engine.contradiction_links import CONTRADICTS_EDGE, linking_edges
from prme.engine.deps import EngineDeps
from prme.engine.idempotency import check_replay, new_record
from prme.engine.lifecycle import InvalidTransitionError, commit_change, existing_node
from prme.engine.node_evidence import checked_evidence
from prme.errors import ConflictError, InvalidRequestError
from prme.model.canonical import checksum
from prme.model.enums import INACTIVE_LIFECYCLE_STATES, LifecycleState
from prme.model.records import IdempotencyRecord, MemoryEdge, MemoryNode, OwnerKey

MARK_OPERATION = "mark_contradiction"
RESOLVE_OPERATION = "resolve_contradiction"


def _replayed(
    deps: EngineDeps,
    owner: OwnerKey,
    saved: IdempotencyRecord,
    *,
    operation: str,
    digest: str,
    node_ids: tuple[str, str],
) -> tuple[MemoryNode, MemoryNode]:
    try:
        check_replay(saved, operation, digest)
    except ConflictError:
        raise InvalidRequestError(
            "This pair was already recorded with other evidence", field=("evidence_id",)
        ) from None
    first, second = node_ids
    return existing_node(deps, owner, first), existing_node(deps, owner, second)


def _evidence_digest(evidence_id: str | None) -> str:
    return checksum({"evidence_id": evidence_id})


def _pair(
    deps: EngineDeps, owner: OwnerKey, ids: tuple[str, str], fields: tuple[str, str]
) -> tuple[MemoryNode, MemoryNode]:
    if ids[0] == ids[1]:
        raise InvalidRequestError("The two memories must differ", field=(fields[1],))
    first, second = existing_node(deps, owner, ids[0]), existing_node(deps, owner, ids[1])
    if first.scope is not second.scope:
        raise InvalidRequestError("Both memories must be in one scope", field=(fields[1],))
    return first, second


def _open_contradictions(
    deps: EngineDeps,
    owner: OwnerKey,
    node: MemoryNode,
    edges: list[MemoryEdge],
    *,
    besides: str,
) -> bool:
    """Whether `node` is linked by a `contradicts` edge to a contested memory other than
    `besides`: a contradiction still open."""
    partners = {
        e.target_node_id if e.source_node_id == node.id else e.source_node_id
        for e in edges
        if e.edge_type == CONTRADICTS_EDGE
    } - {node.id, besides}
    if not partners:
        return False
    found = deps.ledger.get_nodes(owner, sorted(partners))
    return any(n.lifecycle_state is LifecycleState.CONTESTED for n in found.values())


def mark_contradiction(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    node_a_id: str,
    node_b_id: str,
    evidence_id: str | None = None,
) -> tuple[MemoryNode, MemoryNode]:
    """Both memories become contested, linked by one `contradicts` edge (a to b); answers
    them in the order asked. Either may already be contested by a third memory."""
    # Unordered: b against a is the same contradiction as a against b.
    pair_key = "contradicts:" + "|".join(sorted((node_a_id, node_b_id)))
    digest = _evidence_digest(evidence_id)
    asked = (node_a_id, node_b_id)
    saved = deps.ledger.get_idempotency(owner, MARK_OPERATION, pair_key)
    if saved is not None:
        return _replayed(
            deps, owner, saved, operation=MARK_OPERATION, digest=digest, node_ids=asked
        )
    a, b = _pair(deps, owner, asked, ("node_a_id", "node_b_id"))
    checked_evidence(deps, owner, evidence_id, scope=a.scope)
    for node, field in ((a, "node_a_id"), (b, "node_b_id")):
        if node.lifecycle_state in INACTIVE_LIFECYCLE_STATES:
            raise InvalidTransitionError(f"The {field} memory is {node.lifecycle_state.value}")
    # An edge outliving its pair key (keys expire) still makes this a replay, never a twin.
    existing = linking_edges(deps.ledger.list_node_edges(owner, a.id), a.id, b.id)
    if existing:
        if tuple(existing[0].evidence_refs) != ((evidence_id,) if evidence_id else ()):
            raise InvalidRequestError(
                "This pair was already recorded with other evidence", field=("evidence_id",)
            )
        return a, b
    now = deps.clock.now()
    contested = [
        node.model_copy(update={"lifecycle_state": LifecycleState.CONTESTED, "updated_at": now})
        for node in (a, b)
    ]
    edge = MemoryEdge(
        id=deps.ids(),
        tenant_id=owner.tenant_id,
        owner_id=owner.owner_id,
        edge_type=CONTRADICTS_EDGE,
        source_node_id=a.id,
        target_node_id=b.id,
        evidence_refs=(evidence_id,) if evidence_id else (),
        created_at=now,
    )
    record = new_record(
        owner, MARK_OPERATION, pair_key, digest=digest, result={"edge_id": edge.id}, now=now
    )
    try:
        commit_change(
            deps,
            owner,
            updates=[(a, contested[0]), (b, contested[1])],
            operation=MARK_OPERATION,
            payload={
                "node_a_id": a.id,
                "node_b_id": b.id,
                "from_states": [a.lifecycle_state.value, b.lifecycle_state.value],
                "evidence_id": evidence_id,
                "edge_id": edge.id,
            },
            edges=(edge,),
            idempotency=record,
        )
    except ConflictError:
        saved = deps.ledger.get_idempotency(owner, MARK_OPERATION, pair_key)
        if saved is None:
            raise
        return _replayed(
            deps, owner, saved, operation=MARK_OPERATION, digest=digest, node_ids=asked
        )
    return contested[0], contested[1]


def resolve_contradiction(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    winner_id: str,
    loser_id: str,
    evidence_id: str | None = None,
) -> tuple[MemoryNode, MemoryNode]:
    """The winner becomes stable (or stays contested while a third memory still contradicts
    it) and the loser deprecated (out of default retrieval); both must be contested and
    linked by a `contradicts` edge. Answers winner, then loser."""
    pair_key = f"resolves:{winner_id}>{loser_id}"
    digest = _evidence_digest(evidence_id)
    asked = (winner_id, loser_id)
    saved = deps.ledger.get_idempotency(owner, RESOLVE_OPERATION, pair_key)
    if saved is not None:
        return _replayed(
            deps, owner, saved, operation=RESOLVE_OPERATION, digest=digest, node_ids=asked
        )
    winner, loser = _pair(deps, owner, asked, ("winner_id", "loser_id"))
    checked_evidence(deps, owner, evidence_id, scope=winner.scope)
    for node, field in ((winner, "winner_id"), (loser, "loser_id")):
        if node.lifecycle_state is not LifecycleState.CONTESTED:
            raise InvalidRequestError(
                f"The {field} memory is {node.lifecycle_state.value}, not contested",
                field=(field,),
            )
    winner_edges = deps.ledger.list_node_edges(owner, winner.id)
    edges = linking_edges(winner_edges, winner.id, loser.id)
    if not edges:
        raise InvalidRequestError(
            "The two memories were not marked as contradicting each other", field=("loser_id",)
        )
    now = deps.clock.now()
    # A winner still contradicted by a third memory stays contested: made stable, it would
    # read as undisputed while the third says otherwise, and that contradiction could never
    # be settled (resolving needs both sides contested).
    settled = not _open_contradictions(deps, owner, winner, winner_edges, besides=loser.id)
    stable = winner.model_copy(
        update={
            "lifecycle_state": LifecycleState.STABLE if settled else LifecycleState.CONTESTED,
            "updated_at": now,
        }
    )
    deprecated = loser.model_copy(
        update={"lifecycle_state": LifecycleState.DEPRECATED, "updated_at": now}
    )
    record = new_record(
        owner, RESOLVE_OPERATION, pair_key, digest=digest, result={"winner_id": winner.id}, now=now
    )
    try:
        commit_change(
            deps,
            owner,
            updates=[(winner, stable), (loser, deprecated)],
            operation=RESOLVE_OPERATION,
            payload={
                "winner_id": winner.id,
                "loser_id": loser.id,
                "evidence_id": evidence_id,
                "edge_ids": [e.id for e in edges],
            },
            idempotency=record,
        )
    except ConflictError:
        saved = deps.ledger.get_idempotency(owner, RESOLVE_OPERATION, pair_key)
        if saved is None:
            raise
        return _replayed(
            deps, owner, saved, operation=RESOLVE_OPERATION, digest=digest, node_ids=asked
        )
    return stable, deprecated

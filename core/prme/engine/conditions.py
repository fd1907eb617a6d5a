"""Condition evaluations of conditional memories: the new state, its journal record and the
node's index work committed in one transaction, so retrieval follows the condition.

A conditional memory is retrieved by default only while its condition is `true`. Only an
active conditional memory can be evaluated: another memory is refused (422), and a
superseded, deprecated or archived one is refused like an illegal lifecycle move (409).
"""

from __future__ import annotations

from prme.engine.deps import EngineDeps
from prme.engine.idempotency import check_replay, new_record
from prme.engine.lifecycle import InvalidTransitionError, commit_change, existing_node
from prme.engine.node_evidence import checked_evidence
from prme.errors import ConflictError, InvalidRequestError
from prme.model.canonical import checksum
from prme.model.conditions import CONDITION_METADATA_KEY, ConditionEvaluation, ConditionInput
from prme.model.enums import INACTIVE_LIFECYCLE_STATES, EpistemicType
from prme.model.records import MemoryNode, OwnerKey

# The Idempotency-Key scope of condition evaluations, and the journal operation of each.
CONDITION_OPERATION = "evaluate_condition"


def evaluate_condition(
    deps: EngineDeps,
    owner: OwnerKey,
    node_id: str,
    request: ConditionInput,
    *,
    idempotency_key: str | None = None,
) -> MemoryNode:
    """Record a new state of a conditional memory's condition and answer the node.

    With an Idempotency-Key, the same key and body again answer the node as it is now; the
    key with another body (or another node) is a conflict."""
    digest = checksum(
        {
            "node_id": node_id,
            # Every field, defaults included: a default sent explicitly is the same request.
            "request": request.model_dump(mode="json"),
        }
    )
    if idempotency_key:
        saved = deps.ledger.get_idempotency(owner, CONDITION_OPERATION, idempotency_key)
        if saved is not None:
            check_replay(saved, CONDITION_OPERATION, digest)
            return existing_node(deps, owner, node_id)
    node = existing_node(deps, owner, node_id)
    evidence_id = str(request.evidence_id) if request.evidence_id is not None else None
    checked_evidence(deps, owner, evidence_id, scope=node.scope)
    if node.epistemic_type is not EpistemicType.CONDITIONAL:
        raise InvalidRequestError("Only a conditional memory has a condition to evaluate")
    if node.lifecycle_state in INACTIVE_LIFECYCLE_STATES:
        raise InvalidTransitionError(
            f"The condition of a {node.lifecycle_state.value} memory cannot be evaluated"
        )
    now = deps.clock.now()
    evaluation = ConditionEvaluation(
        state=request.state,
        evaluation_method=request.evaluation_method,
        reason=request.reason,
        evidence_id=evidence_id,
        evaluated_at=request.evaluated_at or now,
    )
    refs = node.evidence_refs
    if evidence_id is not None and evidence_id not in refs:
        refs = (*refs, evidence_id)
    updated = node.model_copy(
        update={
            "metadata": {**node.metadata, CONDITION_METADATA_KEY: evaluation.as_metadata()},
            "evidence_refs": refs,
            "updated_at": now,
        }
    )
    record = None
    if idempotency_key:
        record = new_record(
            owner,
            CONDITION_OPERATION,
            idempotency_key,
            digest=digest,
            result={"node_id": node_id},
            now=now,
        )
    previous = node.condition_state
    try:
        commit_change(
            deps,
            owner,
            updates=[(node, updated)],
            operation=CONDITION_OPERATION,
            # The reason stays on the node only: it is caller text, and the journal outlives
            # a deleted memory.
            payload={
                "node_id": node_id,
                "from_state": previous.value if previous is not None else None,
                "to_state": evaluation.state.value,
                "evaluation_method": request.evaluation_method.value,
                "evidence_id": evidence_id,
                "evaluated_at": evaluation.evaluated_at.isoformat()
                if evaluation.evaluated_at
                else None,
            },
            idempotency=record,
        )
    except ConflictError:
        if idempotency_key:
            saved = deps.ledger.get_idempotency(owner, CONDITION_OPERATION, idempotency_key)
            if saved is not None:
                check_replay(saved, CONDITION_OPERATION, digest)
                return existing_node(deps, owner, node_id)
        raise
    return updated

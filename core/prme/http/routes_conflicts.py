"""The routes of conditional memories and contradictions: condition evaluations, contradiction
marks and their resolution."""

from __future__ import annotations

from fastapi import FastAPI

from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.conflict_schemas import ConditionRequest, ContradictionRequest, ResolutionRequest
from prme.http.dependencies import Caller, IdempotencyKey, NodeIdPath, UserIdQuery, key_text, served
from prme.http.schemas import NodeResponse
from prme.model.conditions import ConditionInput


def _text(value: object | None) -> str | None:
    return str(value) if value is not None else None


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @served(app, "evaluate_condition")
    def evaluate_condition(
        node_id: NodeIdPath,
        body: ConditionRequest,
        caller: Caller,
        idempotency_key: IdempotencyKey = None,
        user_id: UserIdQuery = None,
    ) -> NodeResponse:
        request = ConditionInput.model_validate(body.model_dump(exclude_unset=True))
        node = engine.evaluate_condition(
            resolve_owner(caller, user_id),
            str(node_id),
            request,
            idempotency_key=key_text(idempotency_key),
        )
        return NodeResponse.of(node)

    @served(app, "mark_contradiction")
    def mark_contradiction(body: ContradictionRequest, caller: Caller) -> list[NodeResponse]:
        nodes = engine.mark_contradiction(
            resolve_owner(caller, body.user_id),
            node_a_id=str(body.node_a_id),
            node_b_id=str(body.node_b_id),
            evidence_id=_text(body.evidence_id),
        )
        return [NodeResponse.of(node) for node in nodes]

    @served(app, "resolve_contradiction")
    def resolve_contradiction(body: ResolutionRequest, caller: Caller) -> list[NodeResponse]:
        nodes = engine.resolve_contradiction(
            resolve_owner(caller, body.user_id),
            winner_id=str(body.winner_id),
            loser_id=str(body.loser_id),
            evidence_id=_text(body.evidence_id),
        )
        return [NodeResponse.of(node) for node in nodes]

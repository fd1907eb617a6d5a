"""Routes of one capability (aliases); each resolves the owner and calls one engine method.

Alias proposals are listed and reviewed here; a node's edges (verified alias links among
them) are read here too, since those links are what an acceptance creates.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from fastapi import FastAPI, Query
from pydantic import BaseModel, ConfigDict, Field

from prme.engine.aliases import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT
from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import ERRORS, READ_ERRORS, Caller, UserIdQuery
from prme.http.schemas import USER_ID, ErrorResponse
from prme.model.aliases import (
    MAX_REVIEW_REASON_CHARS,
    MAX_REVIEWER_ID_CHARS,
    AliasDecision,
    AliasProposal,
    AliasProposalItem,
    AliasReview,
    AliasStatus,
)
from prme.model.enums import Scope
from prme.model.records import JournalRecord, MemoryEdge

REVIEW_ERRORS: dict[int | str, dict[str, Any]] = {
    **READ_ERRORS,
    409: {
        "model": ErrorResponse,
        "description": "The proposal was already reviewed with another decision, or a node "
        "changed since it was assessed (stale)",
    },
}


class AliasReviewRequest(BaseModel):
    """POST /v1/alias-proposals/{proposal_operation_id}/review."""

    model_config = ConfigDict(extra="forbid")

    decision: AliasDecision
    reviewer_id: str = Field(
        min_length=1, max_length=MAX_REVIEWER_ID_CHARS, description="Who decided"
    )
    reason: str | None = Field(
        default=None,
        max_length=MAX_REVIEW_REASON_CHARS,
        description="Why; required for a rejection",
    )
    user_id: str | None = USER_ID


class JournalRecordResponse(BaseModel):
    """A journal record as stored: its checksum covers operation, subject and payload."""

    id: str
    operation: str
    subject_id: str
    created_at: datetime
    payload: dict[str, Any]
    checksum: str

    @classmethod
    def of(cls, record: JournalRecord) -> JournalRecordResponse:
        return cls(
            id=record.id,
            operation=record.operation,
            subject_id=record.subject_id,
            created_at=record.created_at,
            payload=record.payload,
            checksum=record.checksum,
        )


class AliasProposalResponse(BaseModel):
    proposal_operation_id: str
    status: AliasStatus
    proposal: AliasProposal
    review: AliasReview | None
    proposal_journal: JournalRecordResponse
    review_journal: JournalRecordResponse | None

    @classmethod
    def of(cls, item: AliasProposalItem) -> AliasProposalResponse:
        return cls(
            proposal_operation_id=item.proposal_operation_id,
            status=item.status,
            proposal=item.proposal,
            review=item.review,
            proposal_journal=JournalRecordResponse.of(item.proposal_journal),
            review_journal=(
                JournalRecordResponse.of(item.review_journal) if item.review_journal else None
            ),
        )


class AliasProposalListResponse(BaseModel):
    items: list[AliasProposalResponse]


class EdgeResponse(BaseModel):
    id: str
    edge_type: str
    source_node_id: str
    target_node_id: str
    evidence_refs: list[str]
    created_at: datetime
    verified: bool
    operation_id: str | None

    @classmethod
    def of(cls, edge: MemoryEdge) -> EdgeResponse:
        return cls(
            id=edge.id,
            edge_type=edge.edge_type,
            source_node_id=edge.source_node_id,
            target_node_id=edge.target_node_id,
            evidence_refs=list(edge.evidence_refs),
            created_at=edge.created_at,
            verified=edge.verified,
            operation_id=edge.operation_id,
        )


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @app.get("/v1/alias-proposals", response_model=AliasProposalListResponse, responses=ERRORS)
    def list_alias_proposals(
        caller: Caller,
        status: AliasStatus | None = None,
        scope: Scope | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT)] = DEFAULT_LIST_LIMIT,
        user_id: UserIdQuery = None,
    ) -> AliasProposalListResponse:
        items = engine.list_alias_proposals(
            resolve_owner(caller, user_id), status=status, scope=scope, limit=limit
        )
        return AliasProposalListResponse(items=[AliasProposalResponse.of(i) for i in items])

    @app.post(
        "/v1/alias-proposals/{proposal_operation_id}/review",
        response_model=AliasProposalResponse,
        responses=REVIEW_ERRORS,
    )
    def review_alias_proposal(
        proposal_operation_id: UUID, body: AliasReviewRequest, caller: Caller
    ) -> AliasProposalResponse:
        item = engine.review_alias_proposal(
            resolve_owner(caller, body.user_id),
            str(proposal_operation_id),
            actor=caller,
            decision=body.decision,
            reviewer_id=body.reviewer_id,
            reason=body.reason,
        )
        return AliasProposalResponse.of(item)

    @app.get("/v1/nodes/{node_id}/edges", response_model=list[EdgeResponse], responses=READ_ERRORS)
    def get_node_edges(
        node_id: UUID, caller: Caller, user_id: UserIdQuery = None
    ) -> list[EdgeResponse]:
        edges = engine.list_node_edges(resolve_owner(caller, user_id), str(node_id))
        return [EdgeResponse.of(edge) for edge in edges]

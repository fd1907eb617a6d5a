"""Bodies of the judgment routes: relevance, citations, tool arguments, aliases, quantities."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from prme.http.schemas import USER_ID
from prme.model.aliases import (
    MAX_REVIEW_REASON_CHARS,
    MAX_REVIEWER_ID_CHARS,
    AliasDecision,
    AliasProposal,
    AliasProposalItem,
    AliasReview,
    AliasStatus,
)
from prme.model.feedback import AnswerCitationInput, RelevanceInput
from prme.model.quantities import MAX_QUESTION_CHARS, QuantityAggregationQuery
from prme.model.records import JournalRecord, MemoryEdge


class RelevanceRequest(RelevanceInput):
    """POST /v1/relevance: one explicit judgment of a saved retrieval's candidates."""

    user_id: str | None = USER_ID


class AnswerCitationRequest(AnswerCitationInput):
    """POST /v1/answer-citations: which context entries an answer used."""

    user_id: str | None = USER_ID


class ResolveToolArgumentsRequest(BaseModel):
    """POST /v1/retrievals/{request_id}/resolve-tool-arguments."""

    model_config = ConfigDict(extra="forbid")

    arguments: dict[str, Any] = Field(description="The tool call's JSON argument object")
    user_id: str | None = USER_ID


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


class QuantityAggregationRequest(BaseModel):
    """POST /v1/quantities/aggregate: a structured aggregation query."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = USER_ID
    query: QuantityAggregationQuery


class QuantityQuestionRequest(BaseModel):
    """POST /v1/quantities/aggregate-text: one supported question in plain words."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = USER_ID
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question must contain non-whitespace text")
        return value

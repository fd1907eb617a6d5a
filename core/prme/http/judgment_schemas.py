"""Bodies of the judgment routes: relevance, citations, tool arguments, aliases, quantities."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from prme.engine.aliases import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT
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
from prme.model.enums import Scope
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
    """Tool arguments to resolve against the value bindings of a saved retrieval."""

    model_config = ConfigDict(extra="forbid")

    arguments: dict[str, Any] = Field(description="The tool call's JSON argument object")
    user_id: str | None = USER_ID


class AliasReviewRequest(BaseModel):
    """POST /v1/alias-proposals/{proposal_operation_id}/review."""

    model_config = ConfigDict(extra="forbid")

    decision: AliasDecision = Field(description="accepted or rejected")
    reviewer_id: str = Field(
        min_length=1, max_length=MAX_REVIEWER_ID_CHARS, description="Who decided"
    )
    reason: str | None = Field(
        default=None,
        max_length=MAX_REVIEW_REASON_CHARS,
        description="Why; required for a rejection",
    )
    user_id: str | None = USER_ID


class AliasProposalQuery(BaseModel):
    """GET /v1/alias-proposals: which proposals to list."""

    status: AliasStatus | None = Field(
        default=None, description="Only proposals in this state: pending, accepted or rejected"
    )
    scope: Scope | None = Field(default=None, description="Only proposals of this scope")
    limit: int = Field(
        default=DEFAULT_LIST_LIMIT,
        ge=1,
        le=MAX_LIST_LIMIT,
        description="Most proposals to return",
    )
    user_id: str | None = USER_ID


class JournalRecordResponse(BaseModel):
    """A journal record as stored: its checksum covers operation, subject and payload."""

    id: str = Field(description="The record's id")
    operation: str = Field(description="The operation it records, e.g. alias_proposal")
    subject_id: str = Field(description="The id of what the operation was about")
    created_at: datetime = Field(description="When it was written")
    payload: dict[str, Any] = Field(description="The operation's payload")
    checksum: str = Field(description="Digest that detects corruption and unrecomputed edits")

    @classmethod
    def of(cls, record: JournalRecord) -> JournalRecordResponse:
        return cls.model_validate(record, from_attributes=True)


class AliasProposalResponse(BaseModel):
    """An alias proposal with its review, when one exists, and both journal records."""

    proposal_operation_id: str = Field(description="The proposal's id")
    status: AliasStatus = Field(description="pending, accepted or rejected")
    proposal: AliasProposal = Field(description="The two entity nodes and why they were paired")
    review: AliasReview | None = Field(description="The decision; null while pending")
    proposal_journal: JournalRecordResponse = Field(description="The proposal as journaled")
    review_journal: JournalRecordResponse | None = Field(
        description="The review as journaled; null while pending"
    )

    @classmethod
    def of(cls, item: AliasProposalItem) -> AliasProposalResponse:
        return cls.model_validate(item, from_attributes=True)


class AliasProposalListResponse(BaseModel):
    """Alias proposals of one owner."""

    items: list[AliasProposalResponse] = Field(description="The proposals")


class EdgeResponse(BaseModel):
    """A typed link between two memory nodes of one owner."""

    id: str = Field(description="The edge's id")
    edge_type: str = Field(description="What the link means, e.g. alias_of or supersedes")
    source_node_id: str = Field(description="The node the link starts from")
    target_node_id: str = Field(description="The node the link points to")
    evidence_refs: list[str] = Field(description="Ids of the source events behind it")
    created_at: datetime = Field(description="When it was made")
    verified: bool = Field(
        description="True when a person confirmed the link (an accepted alias review)"
    )
    operation_id: str | None = Field(
        description="The journal record that created the link, when one operation did"
    )

    @classmethod
    def of(cls, edge: MemoryEdge) -> EdgeResponse:
        return cls.model_validate(edge, from_attributes=True)


class QuantityAggregationRequest(BaseModel):
    """POST /v1/quantities/aggregate: a structured aggregation query."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = USER_ID
    query: QuantityAggregationQuery = Field(
        description="Which quantities to add up: subjects, predicates, predicate_prefixes, "
        "units, scopes, group_by (must include unit), event_time_from/to"
    )


class QuantityQuestionRequest(BaseModel):
    """POST /v1/quantities/aggregate-text: one supported question in plain words."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = USER_ID
    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="A supported question such as 'How much did I raise?' or 'How many books "
        "did I buy?'; the plan says when wording is unsupported",
    )

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question must contain non-whitespace text")
        return value

"""HTTP bodies of conditional memories and contradictions (issue 20)."""

from __future__ import annotations

from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from prme.http.schemas import USER_ID
from prme.model.conditions import ConditionInput


class ConditionRequest(ConditionInput):
    """PUT /v1/nodes/{node_id}/condition: a new evaluation of a conditional memory's condition."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"state": "true", "evaluation_method": "tool", "reason": "Flight booked"}]
        }
    )


class ContradictionRequest(BaseModel):
    """POST /v1/contradictions: two memories of one scope contradict each other."""

    model_config = ConfigDict(extra="forbid")

    node_a_id: UUID = Field(description="One of the two memories")
    node_b_id: UUID = Field(description="The memory that contradicts it")
    evidence_id: UUID | None = Field(
        default=None, description="Source event that shows the contradiction"
    )
    user_id: str | None = USER_ID


class ResolutionRequest(BaseModel):
    """POST /v1/contradictions/resolve: which of two contradicting memories holds."""

    model_config = ConfigDict(extra="forbid")

    winner_id: UUID = Field(description="The memory that holds; it becomes stable")
    loser_id: UUID = Field(
        description="The memory that does not; it becomes deprecated and leaves default retrieval"
    )
    evidence_id: UUID | None = Field(
        default=None, description="Source event that settles the contradiction"
    )
    user_id: str | None = USER_ID

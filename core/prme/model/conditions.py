"""Conditional memories: the condition states, how a state was decided, and the evaluation
record a conditional node keeps under its reserved metadata key."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any
from uuid import UUID

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
)

from prme.model.input_policy import check_text

# Where a conditional node keeps its latest evaluation; only the engine writes it.
CONDITION_METADATA_KEY = "prme_condition_v1"
# The caller's statement of what a conditional memory depends on (required in its metadata).
CONDITION_TEXT_KEY = "condition"
MAX_CONDITION_CHARS = 4000
MAX_REASON_CHARS = 4000


class ConditionState(StrEnum):
    """Whether a conditional memory's condition holds; only `true` is retrieved by default."""

    UNKNOWN = "unknown"
    TRUE = "true"
    FALSE = "false"
    EXPIRED = "expired"


class EvaluationMethod(StrEnum):
    """Who or what decided a condition's state."""

    USER = "user"
    TOOL = "tool"
    RULE = "rule"
    LLM = "llm"


class ConditionEvaluation(BaseModel):
    """The latest evaluation of a conditional node's condition (unknown until one is made)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: ConditionState
    evaluation_method: EvaluationMethod | None = None
    reason: str | None = None
    evidence_id: str | None = None
    evaluated_at: AwareDatetime | None = None

    def as_metadata(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class ConditionInput(BaseModel):
    """A new evaluation of a conditional memory's condition, as a caller sends it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state: ConditionState = Field(
        description="Whether the condition holds now: unknown, true, false or expired; only "
        "true makes the memory part of default retrieval"
    )
    evidence_id: UUID | None = Field(
        default=None,
        description="A source event of the same owner that shows the state; it joins the "
        "memory's evidence",
    )
    evaluation_method: EvaluationMethod = Field(
        default=EvaluationMethod.USER,
        description="Who decided the state: user, tool, rule or llm",
    )
    reason: Annotated[str, AfterValidator(check_text)] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_REASON_CHARS,
        description="Why the state was decided, in words",
    )
    evaluated_at: AwareDatetime | None = Field(
        default=None,
        description="When the state was decided, ISO 8601 with a timezone offset; omitted "
        "means now",
    )


def stored_condition(metadata: dict[str, Any]) -> ConditionEvaluation | None:
    """The evaluation kept in a node's metadata; None when there is none (or it is unreadable,
    which reads as never evaluated: such a node stays out of default retrieval)."""
    value = metadata.get(CONDITION_METADATA_KEY)
    if not isinstance(value, dict):
        return None
    try:
        return ConditionEvaluation.model_validate(value)
    except ValidationError:
        return None


def check_condition_text(metadata: dict[str, Any] | None) -> None:
    """A conditional memory names its condition: a non-empty `metadata.condition` string."""
    text = (metadata or {}).get(CONDITION_TEXT_KEY)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(
            "a conditional memory needs metadata.condition: the condition it depends on, "
            "as non-empty text"
        )
    if len(text) > MAX_CONDITION_CHARS:
        raise ValueError(f"metadata.condition must be at most {MAX_CONDITION_CHARS} characters")

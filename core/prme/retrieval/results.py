"""What a retrieval returns: ranked results, the packed context bundle and metrics."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from prme.model.bindings import ToolArgumentResolution, VisibleValueBinding
from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType
from prme.retrieval.value_bindings import render_value_bindings, resolve_tool_arguments


class RetrievalResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    node_id: str
    content: str
    score: float
    semantic_relevance: float | None = None
    node_type: NodeType
    lifecycle_state: LifecycleState
    confidence: float
    salience: float
    epistemic_type: EpistemicType
    source_type: SourceType
    scope: Scope
    session_id: str | None = None
    speaker: str | None = None
    event_time: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    evidence_refs: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class ContextEntry(BaseModel):
    """One record of the packed context. `folded` entries carry no text of their own."""

    model_config = ConfigDict(frozen=True)

    ref: str
    node_id: str
    representation: Literal["full", "folded"]
    tokens: int
    folded_into: str | None = None


class ExcludedCandidate(BaseModel):
    model_config = ConfigDict(frozen=True)

    node_id: str
    reason: Literal[
        "min_score", "source_limit", "evidence_limit", "limit", "token_budget", "response_size"
    ]


class ContextBundle(BaseModel):
    """The packed context and everything needed to audit and use it."""

    model_config = ConfigDict(frozen=True)

    context: str
    context_format: Literal["reader", "auditable"]
    context_sha256: str
    token_budget: int
    tokens_used: int
    entries: list[ContextEntry]
    context_references: dict[str, str]
    excluded: list[ExcludedCandidate]
    visible_value_bindings: list[VisibleValueBinding] = Field(default_factory=list)

    def value_bindings(self) -> list[VisibleValueBinding]:
        """Bindings whose presentation form survived packing, in context order."""
        return list(self.visible_value_bindings)

    def render_value_bindings(self) -> str:
        return render_value_bindings(self.visible_value_bindings)

    def resolve_tool_arguments(self, arguments: dict[str, Any]) -> ToolArgumentResolution:
        """Replace complete argument values equal to a visible presentation with its lookup."""
        return resolve_tool_arguments(arguments, self.visible_value_bindings)


class RetrievalMetrics(BaseModel):
    model_config = ConfigDict(frozen=True)

    request_id: str
    receipt_persisted: bool
    candidates: int
    vector_candidates: int
    lexical_candidates: int
    returned: int
    packed: int
    backend_failures: list[str] = Field(default_factory=list)
    min_score_skipped: bool = False
    current_state_query: bool = False
    limit: int
    token_budget: int
    tokens_used: int
    max_per_source: int | None = None
    max_per_evidence: int | None = None
    min_score: float | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)


class ResponseSizeLimit(BaseModel):
    """Why a retrieval returned fewer records than its limit and token budget allowed."""

    model_config = ConfigDict(frozen=True)

    reason: Literal["response_size"] = Field(
        default="response_size",
        description="Records were left out so the response stays under the server's byte limit",
    )
    omitted: int = Field(
        description="How many ranked records were left out (listed in bundle.excluded with "
        "reason response_size); every record returned ranks above every record left out"
    )
    max_response_bytes: int = Field(
        description="The server's limit on a response, in bytes as sent (PRME_MAX_RESPONSE_BYTES)"
    )
    message: str = Field(
        description="What to do: ask for fewer records (limit, token_budget) or retrieve again "
        "with a narrower query"
    )


class RetrievalResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    results: list[RetrievalResult]
    bundle: ContextBundle
    value_bindings: list[VisibleValueBinding]
    metrics: RetrievalMetrics
    size_limit: ResponseSizeLimit | None = None

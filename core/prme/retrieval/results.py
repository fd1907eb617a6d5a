"""What a retrieval returns: ranked results, the packed context bundle and metrics."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from prme.model.bindings import ToolArgumentResolution, VisibleValueBinding
from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType
from prme.retrieval.value_bindings import render_value_bindings, resolve_tool_arguments


class RetrievalResult(BaseModel):
    """One selected memory with its fused score."""

    model_config = ConfigDict(frozen=True)

    node_id: str = Field(description="The memory node's id")
    content: str = Field(description="The memory's text")
    score: float = Field(description="Rank fusion score; higher ranks first")
    semantic_relevance: float | None = Field(
        default=None,
        description="Cosine similarity of the query and the memory; null when the vector "
        "channel did not score it",
    )
    node_type: NodeType = Field(description="Memory type")
    lifecycle_state: LifecycleState = Field(description="Where the memory is in its lifecycle")
    confidence: float = Field(description="Confidence, 0 to 1")
    salience: float = Field(description="Importance, 0 to 1; reinforcing raises it")
    epistemic_type: EpistemicType = Field(description="How certain it is")
    source_type: SourceType = Field(description="Provenance class")
    scope: Scope = Field(description="Visibility scope")
    session_id: str | None = Field(default=None, description="Session of its source")
    speaker: str | None = Field(default=None, description="Who said it")
    event_time: datetime | None = Field(default=None, description="When it happened")
    valid_from: datetime | None = Field(default=None, description="Since when it holds")
    valid_to: datetime | None = Field(
        default=None, description="Until when it held; set when superseded"
    )
    evidence_refs: list[str] = Field(
        default_factory=list, description="Ids of the source events behind it"
    )
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form JSON")
    conflict_flag: bool = Field(
        default=False,
        description="True when the memory is contested: another memory contradicts it",
    )
    contradicts_id: str | None = Field(
        default=None,
        description="For a contested memory, the id of the memory it contradicts (the most "
        "recently linked one when there are several)",
    )


class ContextEntry(BaseModel):
    """One record of the packed context. `folded` entries carry no text of their own."""

    model_config = ConfigDict(frozen=True)

    ref: str = Field(description="The entry's reference in the context: m1, m2, ...")
    node_id: str = Field(description="The memory node the entry shows")
    representation: Literal["full", "folded"] = Field(
        description="full: the entry has its own text; folded: its text repeats another entry's"
    )
    tokens: int = Field(description="Tokens the entry takes in the context")
    folded_into: str | None = Field(
        default=None, description="For a folded entry, the ref of the entry holding the text"
    )


class ExcludedCandidate(BaseModel):
    """A ranked candidate left out of the results, and the rule that left it out."""

    model_config = ConfigDict(frozen=True)

    node_id: str = Field(description="The memory node left out")
    reason: Literal[
        "min_score", "source_limit", "evidence_limit", "limit", "token_budget", "response_size"
    ] = Field(description="The rule that left it out")


class ContextBundle(BaseModel):
    """The packed context and everything needed to audit and use it."""

    model_config = ConfigDict(frozen=True)

    context: str = Field(description="The packed context to answer from")
    context_format: Literal["reader", "auditable"] = Field(
        description="The layout the context was written in"
    )
    context_sha256: str = Field(description="SHA-256 hex of the context")
    token_budget: int = Field(description="The token budget the context was packed to")
    tokens_used: int = Field(description="Tokens the context takes")
    entries: list[ContextEntry] = Field(description="The context's entries, in ref order")
    context_references: dict[str, str] = Field(
        description="Context reference (m1, m2, ...) to node id"
    )
    excluded: list[ExcludedCandidate] = Field(
        description="Ranked candidates left out, each with its reason"
    )
    visible_value_bindings: list[VisibleValueBinding] = Field(
        default_factory=list,
        description="Value bindings whose presentation survived packing, in context order",
    )

    def value_bindings(self) -> list[VisibleValueBinding]:
        """Bindings whose presentation form survived packing, in context order."""
        return list(self.visible_value_bindings)

    def render_value_bindings(self) -> str:
        return render_value_bindings(self.visible_value_bindings)

    def resolve_tool_arguments(self, arguments: dict[str, Any]) -> ToolArgumentResolution:
        """Replace complete argument values equal to a visible presentation with its lookup."""
        return resolve_tool_arguments(arguments, self.visible_value_bindings)


class RetrievalMetrics(BaseModel):
    """Counts, limits and timings of one retrieval."""

    model_config = ConfigDict(frozen=True)

    request_id: str = Field(
        description="The retrieval's id: its receipt's id, and what feedback and citations name"
    )
    receipt_persisted: bool = Field(description="True when the receipt was saved")
    candidates: int = Field(description="Candidates ranked by fusion")
    vector_candidates: int = Field(description="Hits of the vector channel")
    lexical_candidates: int = Field(description="Hits of the lexical channel")
    returned: int = Field(description="Results returned")
    packed: int = Field(description="Context entries with their own text")
    backend_failures: list[str] = Field(
        default_factory=list,
        description="Search channels that failed; the ranking used the others",
    )
    min_score_skipped: bool = Field(
        default=False,
        description="True when min_score was not applied because no semantic scores were "
        "available (the vector channel failed)",
    )
    current_state_query: bool = Field(
        default=False,
        description="True when the query asks for the current state, which favours recent memories",
    )
    ranking_profile_id: str | None = Field(
        default=None,
        description="The learned ranking profile that ranked this retrieval (null: none was "
        "active for its scopes; the engine's settings ranked it)",
    )
    limit: int = Field(description="The result limit applied")
    token_budget: int = Field(description="The token budget applied")
    tokens_used: int = Field(description="Tokens the context takes")
    max_per_source: int | None = Field(default=None, description="The cap per source applied")
    max_per_evidence: int | None = Field(
        default=None, description="The cap per evidence set applied"
    )
    min_score: float | None = Field(default=None, description="The minimum score applied")
    timings_ms: dict[str, float] = Field(
        default_factory=dict, description="Milliseconds spent: search and total"
    )


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
    """What a retrieval returns to the engine's callers."""

    model_config = ConfigDict(frozen=True)

    results: list[RetrievalResult]
    bundle: ContextBundle
    value_bindings: list[VisibleValueBinding]
    metrics: RetrievalMetrics
    size_limit: ResponseSizeLimit | None = None

"""Validated inputs of the use cases, shared by MemoryClient and the HTTP schemas.

Every rule here runs before any I/O, so a rejected input writes nothing.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from prme.model.bindings import MemoryValueBinding
from prme.model.conditions import check_condition_text
from prme.model.enums import (
    EpistemicType,
    NodeType,
    RetrievalMode,
    Role,
    Scope,
    SourceType,
)
from prme.model.input_policy import (
    MAX_METADATA_DEPTH,
    InputPolicyError,
    check_json_value,
    check_name,
    check_text,
)
from prme.model.records import RESERVED_METADATA_KEYS

# The node type of a stored memory that names none, unless the deployment sets another.
DEFAULT_NODE_TYPE = NodeType.NOTE

MAX_CONTENT_CHARS = 100_000
MAX_SPEAKER_CHARS = 200
MAX_METADATA_BYTES = 16_384

# Text kept verbatim (content, queries): any valid Unicode but NUL.
SafeText = Annotated[str, AfterValidator(check_text)]
# Names people read and match on (session ids): no control, format or invisible characters.
SafeName = Annotated[str, AfterValidator(check_name)]


def normalize_speaker(value: str | None) -> str | None:
    """Strip a speaker name and reject empty, overlong or control-bearing names.

    Format characters (zero-width, bidirectional controls) are refused too: "Caroline\u200b"
    would look like Caroline yet never match her."""
    if value is None:
        return None
    name = value.strip()
    if not name:
        raise ValueError("speaker must not be empty")
    if len(name) > MAX_SPEAKER_CHARS:
        raise ValueError(f"speaker must be at most {MAX_SPEAKER_CHARS} characters")
    try:
        check_name(name)
    except ValueError as exc:
        raise ValueError(f"speaker {exc}") from None
    return name


def _check_metadata(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    reserved = sorted(RESERVED_METADATA_KEYS.intersection(value))
    if reserved:
        raise ValueError(
            f"metadata key {reserved[0]!r} is reserved; pass speaker or value_bindings instead"
        )
    from prme.model.canonical import canonical_json

    # The size first: encoding is fast C, and it bounds the walk below, which (during a
    # request's validation, on the event loop) would take seconds over megabytes of values.
    try:
        size: int | None = len(canonical_json(value).encode("utf-8", "surrogatepass"))
    except (RecursionError, TypeError, ValueError):
        size = None  # not plain JSON: the walk below says where
    if size is not None and size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata must be at most {MAX_METADATA_BYTES} bytes as JSON")
    # Stored metadata is read back exactly or refused now: nothing the read path (or a JSON
    # parser's recursion limit) cannot load again, and no NaN quietly turned into null.
    try:
        check_json_value(value, max_depth=MAX_METADATA_DEPTH)
    except InputPolicyError as exc:
        where = ".".join(str(part) for part in exc.path)
        raise ValueError(f"metadata{'.' + where if where else ''} {exc.message}") from None
    return value


class SourceInput(BaseModel):
    """The fields every write route takes about its source, with their shared rules."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: SafeText = Field(
        min_length=1,
        max_length=MAX_CONTENT_CHARS,
        description="The exact text to remember, kept verbatim",
        examples=["I moved to Lisbon in March 2024."],
    )
    role: Role = Field(
        default=Role.USER,
        description="Who wrote it: user (the owner), participant, assistant, tool or system",
    )
    speaker: str | None = Field(
        default=None, description="Who said it, e.g. a name", examples=["Caroline"]
    )
    session_id: SafeName | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="Conversation or session label",
        examples=["chat-2024-03-02"],
    )
    scope: Scope | None = Field(
        default=None, description="Visibility scope; omitted means personal"
    )
    metadata: dict[str, Any] | None = Field(
        default=None,
        description="Free-form JSON kept with the source; speaker and value_bindings are "
        "reserved keys",
    )
    event_time: AwareDatetime | None = Field(
        default=None,
        description="When it happened or was said, ISO 8601 with a timezone offset; anchors "
        "relative dates such as 'yesterday'",
        examples=["2024-03-02T18:30:00+00:00"],
    )

    _speaker = field_validator("speaker")(normalize_speaker)
    _metadata = field_validator("metadata")(_check_metadata)

    @field_validator("content")
    @classmethod
    def _content_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must contain non-whitespace text")
        return value


class StoreInput(SourceInput):
    """What a direct store accepts, before the owner is resolved."""

    retrieval_content: SafeText | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_CONTENT_CHARS,
        description="A compact form to index and show instead of content (optional)",
    )
    value_bindings: list[MemoryValueBinding] | None = Field(
        default=None,
        max_length=64,
        description="Typed values whose presentation occurs verbatim in content and in the "
        "indexed text, each paired with the exact lookup form a tool needs",
    )
    node_type: NodeType | None = Field(
        default=None,
        description=f"Memory type (default {DEFAULT_NODE_TYPE.value}, unless the engine is "
        "configured with another default_node_type)",
    )
    epistemic_type: EpistemicType | None = Field(
        default=None,
        description="How certain it is: observed, asserted, inferred, ...; conditional needs "
        "metadata.condition (what it depends on) and is retrieved by default only once that "
        "condition is evaluated true",
    )
    source_type: SourceType | None = Field(default=None, description="Provenance class")
    confidence: float | None = Field(
        default=None, ge=0.0, le=1.0, allow_inf_nan=False, description="Confidence, 0 to 1"
    )
    ttl_days: int | None = Field(
        default=None,
        ge=0,
        le=36_500,
        strict=True,
        description="Days until the memory expires from creation; null never expires; "
        "omitted uses the configured default for its node type",
    )

    @model_validator(mode="after")
    def _conditional_names_its_condition(self) -> StoreInput:
        # A conditional memory is only retrieved once its condition is known to hold, so
        # the condition must be stated where a reviewer (or an evaluator) can read it.
        if self.epistemic_type is EpistemicType.CONDITIONAL:
            check_condition_text(self.metadata)
        return self

    @field_validator("retrieval_content")
    @classmethod
    def _retrieval_content_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must contain non-whitespace text")
        return value

    @property
    def ttl_given(self) -> bool:
        """True when the caller sent ttl_days (null disables TTL); False uses the node type default."""
        return "ttl_days" in self.model_fields_set

    @property
    def indexed_text(self) -> str:
        return self.retrieval_content if self.retrieval_content is not None else self.content


# A DynamoDB transaction holds at most 100 writes: two per item (event and its work item),
# plus the batch's journal record and its idempotency record.
MAX_FAST_INGEST_ITEMS = 49


class FastIngestItem(SourceInput):
    """One raw source of a fast-ingest batch; its node is built later by materialization."""


class FastIngestInput(BaseModel):
    """An ordered batch, validated whole before any I/O."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    items: list[FastIngestItem] = Field(
        min_length=1,
        description=f"Up to {MAX_FAST_INGEST_ITEMS} raw sources, kept in this order",
    )

    @field_validator("items")
    @classmethod
    def _fits_one_transaction(cls, items: list[FastIngestItem]) -> list[FastIngestItem]:
        if len(items) > MAX_FAST_INGEST_ITEMS:
            raise ValueError(
                f"at most {MAX_FAST_INGEST_ITEMS} items fit one transaction; "
                "split the batch or send it through the SQS ingest queue"
            )
        return items


class IngestInput(SourceInput):
    """A message to keep verbatim and extract memories from."""

    wait_for_extraction: bool = Field(
        default=False,
        description="Wait until memories are extracted before answering (slower)",
    )


class RetrievalFilters(BaseModel):
    """Which memories a retrieval may consider; omitted filters match anything."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scope: Scope | list[Scope] | None = Field(
        default=None, description="Only this scope, or only these scopes (a non-empty list)"
    )
    time_from: AwareDatetime | None = Field(
        default=None,
        description="Only memories whose event time (or, without one, creation time) is at or "
        "after this, ISO 8601 with offset",
    )
    time_to: AwareDatetime | None = Field(
        default=None,
        description="Only memories whose event time (or, without one, creation time) is at or "
        "before this, ISO 8601 with offset",
    )
    event_time_from: AwareDatetime | None = Field(
        default=None,
        description="Only memories with an event time at or after this, ISO 8601 with offset",
    )
    event_time_to: AwareDatetime | None = Field(
        default=None,
        description="Only memories with an event time at or before this, ISO 8601 with offset",
    )
    exclude_node_types: list[NodeType] | None = Field(
        default=None, description="Memory types to leave out"
    )
    source_types: list[SourceType] | None = Field(
        default=None, description="Only these provenance classes; [] returns nothing"
    )

    @field_validator("scope")
    @classmethod
    def _scope_list_not_empty(cls, value: Scope | list[Scope] | None) -> Scope | list[Scope] | None:
        if isinstance(value, list) and not value:
            raise ValueError("scope list must not be empty")
        return value

    @property
    def scopes(self) -> frozenset[Scope] | None:
        if self.scope is None:
            return None
        return frozenset(self.scope) if isinstance(self.scope, list) else frozenset({self.scope})


class RetrieveInput(BaseModel):
    """What a retrieval accepts, before the owner is resolved."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: SafeText = Field(
        min_length=1,
        max_length=10_000,
        description="What you need to know, in plain words",
        examples=["Where does Caroline live now?"],
    )
    reference_time: AwareDatetime | None = Field(
        default=None,
        description="'Now' for recency and relative dates, ISO 8601 with offset; omitted means "
        "the server's current time",
    )
    token_budget: int | None = Field(
        default=None,
        ge=0,
        le=200_000,
        strict=True,
        description="Context size in tokens; omitted uses the configured default_token_budget",
    )
    limit: int | None = Field(
        default=None,
        ge=0,
        le=200,
        strict=True,
        description="Most results to return; omitted uses the configured default_limit, which "
        "by default returns as many as the token budget holds",
    )
    max_per_source: int | None = Field(
        default=None, ge=1, strict=True, description="Cap per identical source"
    )
    max_per_evidence: int | None = Field(
        default=None, ge=1, strict=True, description="Cap per evidence set (one source)"
    )
    min_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="Minimum semantic relevance, 0 to 1",
    )
    mode: RetrievalMode | None = Field(
        default=None,
        description="explicit also returns superseded, archived and deprecated memories and "
        "hypothetical or retracted statements; omitted means default",
    )
    filters: RetrievalFilters | None = Field(default=None, description="Which memories to consider")
    ranking_multipliers: dict[str, float] | None = Field(
        default=None,
        description="Reserved: rank fusion has no feature weights, so every factor must be 1.0",
    )
    ranking_profile: Literal["active", "none"] = Field(
        default="active",
        description="active: ranked by the owner's learned ranking profile for this scope "
        "filter when one is active (metrics.ranking_profile_id names it); none: by the "
        "engine's settings, e.g. to compare",
    )
    context_format: Literal["reader", "auditable"] = Field(
        default="reader",
        description="reader: one line per record ('[m1] date speaker: text') for a model to "
        "answer from; auditable: one JSON object per record with its ref, node_id, time, "
        "speaker, source_type, session_id and text",
    )

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must contain non-whitespace text")
        return value

    @field_validator("ranking_multipliers")
    @classmethod
    def _neutral_multipliers(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        # Rank fusion has no feature weights to multiply: only the neutral trial is accepted.
        if value is not None:
            for name, factor in value.items():
                if not math.isfinite(factor) or factor != 1.0:
                    raise ValueError(
                        f"ranking_multipliers.{name} must be 1.0 under rank fusion scoring"
                    )
        return value

    @model_validator(mode="after")
    def _time_bounds_ordered(self) -> RetrieveInput:
        f = self.filters
        if f is not None:
            for low, high in ((f.time_from, f.time_to), (f.event_time_from, f.event_time_to)):
                if low is not None and high is not None and low > high:
                    raise ValueError("time filter lower bound is after its upper bound")
        return self

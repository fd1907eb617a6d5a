"""Exact assertion aggregation and the state of a fact: the queries and their results.

An assertion is an extracted claim (subject, predicate, object, polarity) stored on a fact
node. Subjects, predicates and objects are compared in one normalized form, shown in every
result, so a caller can see exactly what was counted together.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from prme.model.enums import INACTIVE_LIFECYCLE_STATES, LifecycleState, RetrievalMode, Scope
from prme.model.quantities import normalize_predicate, normalize_text

AssertionDimension = Literal["subject", "predicate", "object", "polarity"]
Polarity = Literal["affirmed", "negated"]
# Group keys are always listed in this order, whatever order group_by names.
ASSERTION_GROUP_ORDER: tuple[AssertionDimension, ...] = (
    "subject",
    "predicate",
    "object",
    "polarity",
)
MAX_FILTER_VALUES = 100
MAX_SAMPLE_LIMIT = 50
MAX_GROUP_LIMIT = 1000
MAX_STATE_LIMIT = 1000


def normalize_subject(value: str) -> str:
    """Subjects and objects: NFKC, casefolded, runs of whitespace made one space."""
    return normalize_text(value)


def normalize_assertion_predicate(value: str) -> str:
    """Predicates: as subjects, and the words joined by underscores ("works at" = works_at)."""
    return normalize_predicate(value)


def _checked_values(values: tuple[str, ...] | None, *, max_chars: int) -> tuple[str, ...] | None:
    if values is None:
        return None
    if not values:
        raise ValueError("must name at least one value, or be omitted to match any")
    for value in values:
        if not normalize_text(value):
            raise ValueError("values must contain non-whitespace text")
        if len(value) > max_chars:
            raise ValueError(f"values must be at most {max_chars} characters")
    return values


def _checked_text(value: str, *, max_chars: int) -> str:
    if not normalize_text(value):
        raise ValueError("must contain non-whitespace text")
    if len(value) > max_chars:
        raise ValueError(f"must be at most {max_chars} characters")
    return value


ASSERTION_QUERY_EXAMPLE: dict[str, Any] = {
    "subjects": ["I"],
    "predicates": ["live"],
    "group_by": ["object", "polarity"],
}


class AssertionQuery(BaseModel):
    """Which extracted assertions of one owner to count, and how to group them.

    Omitted filters match anything. Matching is exact after normalization (NFKC, case folded,
    whitespace collapsed; in predicates spaces and hyphens become underscores); nothing is
    matched by meaning.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, json_schema_extra={"examples": [ASSERTION_QUERY_EXAMPLE]}
    )

    subjects: tuple[str, ...] | None = Field(
        default=None,
        max_length=MAX_FILTER_VALUES,
        description="Only assertions about these subjects, e.g. I or my sister Ana",
    )
    predicates: tuple[str, ...] | None = Field(
        default=None,
        max_length=MAX_FILTER_VALUES,
        description="Only these predicates, e.g. live or works_at",
    )
    objects: tuple[str, ...] | None = Field(
        default=None,
        max_length=MAX_FILTER_VALUES,
        description="Only these objects as recorded, e.g. in Lisbon",
    )
    polarities: tuple[Polarity, ...] | None = Field(
        default=None,
        min_length=1,
        max_length=2,
        description="Only affirmed or only negated assertions (a claim without one is affirmed)",
    )
    group_by: tuple[AssertionDimension, ...] = Field(
        default=ASSERTION_GROUP_ORDER,
        min_length=1,
        max_length=4,
        description="Dimensions to count apart: subject, predicate, object, polarity",
    )
    scopes: tuple[Scope, ...] | None = Field(
        default=None, min_length=1, max_length=len(Scope), description="Only these scopes"
    )
    lifecycle_states: tuple[LifecycleState, ...] | None = Field(
        default=None,
        min_length=1,
        max_length=len(LifecycleState),
        description="Only nodes whose stored lifecycle state is one of these; superseded, "
        "deprecated and archived need retrieval_mode explicit",
    )
    retrieval_mode: RetrievalMode = Field(
        default=RetrievalMode.DEFAULT,
        description="default: leave out superseded, deprecated, archived, expired, hypothetical "
        "and retracted assertions, as retrieval does; explicit: count them too",
    )
    event_time_from: AwareDatetime | None = Field(
        default=None,
        description="Only assertions said at or after this, ISO 8601 with offset; undated "
        "ones are left out when a bound is given",
    )
    event_time_to: AwareDatetime | None = Field(
        default=None, description="Only assertions said at or before this, ISO 8601 with offset"
    )
    valid_at: AwareDatetime | None = Field(
        default=None,
        description="Only assertions whose validity window (valid_from, else when said, up to "
        "valid_to) contains this instant, ISO 8601 with offset",
    )
    knowledge_at: AwareDatetime | None = Field(
        default=None,
        description="Count what was known then: only nodes stored at or before this instant, "
        "their state judged as of it where that is exact (see docs/assertions.md)",
    )
    group_limit: int = Field(
        default=MAX_GROUP_LIMIT,
        ge=1,
        le=MAX_GROUP_LIMIT,
        strict=True,
        description="Most groups returned, largest first",
    )
    sample_limit: int = Field(
        default=10,
        ge=0,
        le=MAX_SAMPLE_LIMIT,
        strict=True,
        description="Most assertions shown per group, oldest first",
    )

    @field_validator("subjects", "objects")
    @classmethod
    def _texts(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _checked_values(value, max_chars=500)

    @field_validator("predicates")
    @classmethod
    def _predicates(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _checked_values(value, max_chars=80)

    @field_validator("group_by", "polarities")
    @classmethod
    def _no_repeats(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("must not repeat a value")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> AssertionQuery:
        low, high = self.event_time_from, self.event_time_to
        if low is not None and high is not None and low > high:
            raise ValueError("event_time_from is after event_time_to")
        inactive = set(self.lifecycle_states or ()) & INACTIVE_LIFECYCLE_STATES
        if inactive and self.retrieval_mode is RetrievalMode.DEFAULT:
            # Default mode leaves these states out, so asking for them could never match.
            raise ValueError(
                "lifecycle_states names superseded, deprecated or archived: set "
                "retrieval_mode to explicit to count them"
            )
        return self


class AssertionSample(BaseModel):
    """One counted assertion as stored, with the sources behind it."""

    model_config = ConfigDict(frozen=True)

    node_id: str = Field(description="The fact node holding the assertion")
    subject: str = Field(description="Who or what it is about, as written")
    predicate: str = Field(description="The relation, as written, e.g. live")
    object: str | None = Field(description="The value, as written; null when none was recorded")
    polarity: Polarity = Field(description="affirmed, or negated (the source denies it)")
    lifecycle_state: LifecycleState = Field(description="The node's stored lifecycle state")
    event_ids: tuple[str, ...] = Field(description="The source events behind it")
    event_time: AwareDatetime | None = Field(description="When it was said, when known")
    valid_from: AwareDatetime | None = Field(description="Start of its validity window")
    valid_to: AwareDatetime | None = Field(description="End of its validity window; null: open")


class AssertionGroup(BaseModel):
    """The counted assertions sharing one normalized value of each grouped dimension."""

    model_config = ConfigDict(frozen=True)

    key: dict[AssertionDimension, str | None] = Field(
        description="The normalized value of each grouped dimension (null object: none recorded)"
    )
    count: int = Field(description="Counted assertions in the group (exact)")
    event_count: int = Field(description="Distinct source events behind them")
    samples: tuple[AssertionSample, ...] = Field(
        description="Counted assertions, oldest first, up to sample_limit"
    )
    samples_truncated: bool = Field(description="True when the group has more than the samples")


AssertionExclusion = Literal[
    "malformed",
    "filtered",
    "outside_event_time_window",
    "no_event_time",
    "not_yet_known",
    "lifecycle_state",
    "inactive",
    "expired",
    "hypothetical",
    "retracted",
    "not_valid_at",
]


class AssertionAggregation(BaseModel):
    """Exact counts of the matching assertions, per group.

    `claim_nodes == counted + sum(exclusions.values())`: every assertion read is either counted
    or has exactly one reason it was not.
    """

    model_config = ConfigDict(frozen=True)

    query: AssertionQuery = Field(description="The query that was run")
    scanned_nodes: int = Field(description="Nodes of the owner read by the scan, of every type")
    claim_nodes: int = Field(description="Of those, the nodes holding an extracted assertion")
    matched: int = Field(
        description="Assertions that passed the subject, predicate, object, polarity and scope "
        "filters"
    )
    counted: int = Field(description="Assertions counted into the groups")
    groups: tuple[AssertionGroup, ...] = Field(
        description="The groups, largest first (ties by key), up to group_limit"
    )
    group_count: int = Field(description="How many groups there were in all")
    groups_truncated: bool = Field(description="True when there were more than group_limit")
    exclusions: dict[AssertionExclusion, int] = Field(
        description="Reason to how many assertions it kept out of the counts"
    )
    knowledge_at_inexact: int = Field(
        description="Assertions whose state at knowledge_at could not be rebuilt exactly and "
        "was judged by their stored state (0 without knowledge_at)"
    )
    stored_set_exhaustive: Literal[True] = Field(
        default=True,
        description="The scan read every stored node of the owner, not a ranked or sampled subset",
    )
    consistency: Literal["complete_for_unchanged_store"] = Field(
        default="complete_for_unchanged_store",
        description="Exact when nothing was written during the scan; concurrent writes may be "
        "half seen",
    )
    extraction_coverage: Literal["unknown"] = Field(
        default="unknown",
        description="Only assertions an extractor recorded are counted; how many it missed is "
        "not known",
    )


class AssertionStateQuery(BaseModel):
    """One fact (a subject and a predicate) whose value to read, as of two times."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={"examples": [{"subject": "I", "predicate": "live"}]},
    )

    subject: str = Field(description="Who or what the fact is about, e.g. I")
    predicate: str = Field(description="The relation, e.g. live or works_at")
    scope: Scope | None = Field(default=None, description="Only assertions of this scope")
    valid_at: AwareDatetime | None = Field(
        default=None,
        description="The instant whose value is asked for, ISO 8601 with offset; default now",
    )
    knowledge_at: AwareDatetime | None = Field(
        default=None,
        description="Answer with what was known then (nodes stored at or before it), ISO "
        "8601 with offset; default now",
    )
    limit: int = Field(
        default=MAX_STATE_LIMIT,
        ge=1,
        le=MAX_STATE_LIMIT,
        strict=True,
        description="Most timeline entries returned (the newest ones)",
    )

    @field_validator("subject")
    @classmethod
    def _subject(cls, value: str) -> str:
        return _checked_text(value, max_chars=500)

    @field_validator("predicate")
    @classmethod
    def _predicate(cls, value: str) -> str:
        return _checked_text(value, max_chars=80)


class AssertionTimelineEntry(BaseModel):
    """One stored assertion of the fact, with its window and what ended it."""

    model_config = ConfigDict(frozen=True)

    node_id: str = Field(description="The fact node holding the assertion")
    object: str | None = Field(description="The value as written; null when none was recorded")
    object_key: str | None = Field(description="The value in normalized form")
    polarity: Polarity = Field(description="affirmed, or negated (ends an earlier value)")
    valid_from: AwareDatetime | None = Field(description="Start of its validity window")
    valid_to: AwareDatetime | None = Field(
        description="End of its validity window as known at knowledge_at; null: open"
    )
    lifecycle_state: LifecycleState = Field(description="The node's stored lifecycle state")
    active_at_knowledge_at: bool = Field(
        description="Whether it was neither superseded, deprecated nor archived at knowledge_at"
    )
    event_time: AwareDatetime | None = Field(description="When it was said, when known")
    created_at: AwareDatetime = Field(description="When it was stored")
    event_ids: tuple[str, ...] = Field(description="The source events behind it")
    ended_by: str | None = Field(
        description="The negated assertion that ended this value by valid_at, if any"
    )
    current: bool = Field(description="True when it is one of the candidates")


class AssertionState(BaseModel):
    """The value(s) of one fact at valid_at as known at knowledge_at, and its stored timeline.

    `status`: `unknown` (no assertion holds at valid_at), `current` (every candidate names the
    same value) or `ambiguous` (candidates disagree; all are returned, none is chosen).
    """

    model_config = ConfigDict(frozen=True)

    query: AssertionStateQuery = Field(description="The query that was run")
    subject_key: str = Field(description="The subject in normalized form")
    predicate_key: str = Field(description="The predicate in normalized form")
    valid_at: AwareDatetime = Field(description="The instant asked about")
    knowledge_at: AwareDatetime = Field(description="What was known up to this instant counted")
    status: Literal["unknown", "current", "ambiguous"] = Field(
        description="unknown, current, or ambiguous when candidates disagree"
    )
    value: str | None = Field(
        description="The value when status is current (as written by the newest candidate)"
    )
    candidates: tuple[AssertionTimelineEntry, ...] = Field(
        description="The affirmed assertions holding at valid_at, newest first (the newest "
        "`limit` of them)"
    )
    candidate_count: int = Field(description="How many candidates there are in all")
    timeline: tuple[AssertionTimelineEntry, ...] = Field(
        description="Every stored assertion of the fact known at knowledge_at, oldest first "
        "(the newest `limit` of them)"
    )
    timeline_count: int = Field(description="How many assertions the timeline has in all")
    timeline_truncated: bool = Field(description="True when older entries were left out")
    scanned_nodes: int = Field(description="Nodes of the owner read by the scan")
    knowledge_at_inexact: int = Field(
        description="Timeline entries whose state at knowledge_at was judged by their stored "
        "state because it could not be rebuilt exactly"
    )

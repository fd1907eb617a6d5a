"""Grounded quantity aggregation: the structured query, its result, and the plan of a question.

A query names which extracted quantities to add up; the result says what was counted, what
was left out and why, and states plainly what the totals do not promise (units are never
converted, extraction may have missed amounts).
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    field_validator,
    model_validator,
)

from prme.model.enums import Scope

GroupDimension = Literal["unit", "subject", "predicate"]
QuestionShape = Literal["how_much", "how_much_money", "total", "how_many"]
# Groups are always ordered by these dimensions in this order, whatever order group_by names.
GROUP_ORDER: tuple[GroupDimension, ...] = ("unit", "subject", "predicate")
MAX_FILTER_VALUES = 100
MAX_SAMPLE_LIMIT = 100
MAX_GROUP_LIMIT = 10_000
MAX_QUESTION_CHARS = 500

# Exact decimal text ("1200", "-3.50"), never a float or an exponent.
DecimalText = Annotated[Decimal, PlainSerializer(lambda value: format(value, "f"), return_type=str)]

_WHITESPACE = re.compile(r"\s+")
_PREDICATE_SEPARATORS = re.compile(r"[\s\-‐‑‒–—―]+")


def normalize_text(value: str) -> str:
    """The form subjects and units are compared in: NFKC, casefolded, whitespace collapsed."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", value).casefold()).strip()


def normalize_predicate(value: str) -> str:
    """Like `normalize_text`, and spaces or hyphens become underscores ("bought books")."""
    return _PREDICATE_SEPARATORS.sub("_", normalize_text(value))


def predicate_has_prefix(predicate: str, prefix: str) -> bool:
    """True for the prefix itself or an underscore-delimited extension of it, both normalized.

    "bought" covers "bought" and "bought_books", never "boughtx"."""
    return predicate == prefix or predicate.startswith(prefix + "_")


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


QUANTITY_QUERY_EXAMPLE: dict[str, Any] = {
    "subjects": ["I"],
    "predicate_prefixes": ["raised"],
    "units": ["USD"],
    "group_by": ["unit", "subject"],
    "event_time_from": "2024-01-01T00:00:00+00:00",
}


class QuantityAggregationQuery(BaseModel):
    """Which extracted quantities of one owner to add up, and how to group them.

    Omitted filters match anything. `predicates` and `predicate_prefixes` are alternatives:
    a predicate is accepted when it equals one of the first or extends one of the second.
    Matching is exact after normalization; nothing is matched by meaning.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, json_schema_extra={"examples": [QUANTITY_QUERY_EXAMPLE]}
    )

    subjects: tuple[str, ...] | None = Field(
        default=None,
        max_length=MAX_FILTER_VALUES,
        description="Only quantities about these subjects, e.g. I or we",
    )
    predicates: tuple[str, ...] | None = Field(
        default=None,
        max_length=MAX_FILTER_VALUES,
        description="Only these predicates, e.g. raised or bought_books",
    )
    predicate_prefixes: tuple[str, ...] | None = Field(
        default=None,
        max_length=MAX_FILTER_VALUES,
        description="Or predicates extending these, e.g. bought covers bought_books",
    )
    units: tuple[str, ...] | None = Field(
        default=None, max_length=MAX_FILTER_VALUES, description="Only these units, e.g. USD"
    )
    scopes: tuple[Scope, ...] | None = Field(
        default=None, min_length=1, max_length=len(Scope), description="Only these scopes"
    )
    group_by: tuple[GroupDimension, ...] = Field(
        default=GROUP_ORDER,
        min_length=1,
        max_length=3,
        description="Dimensions to total apart: unit (required), subject, predicate",
    )
    event_time_from: AwareDatetime | None = Field(
        default=None,
        description="Only quantities said at or after this, ISO 8601 with offset; undated "
        "ones are left out when a bound is given",
    )
    event_time_to: AwareDatetime | None = Field(
        default=None,
        description="Only quantities said at or before this, ISO 8601 with offset",
    )
    include_inactive: bool = Field(
        default=False,
        strict=True,
        description="Also count superseded, deprecated, archived and expired quantities (never "
        "hypothetical ones)",
    )
    sample_limit: int = Field(
        default=10,
        ge=0,
        le=MAX_SAMPLE_LIMIT,
        strict=True,
        description="Most counted quantities shown per group",
    )
    group_limit: int = Field(
        default=1000, ge=1, le=MAX_GROUP_LIMIT, strict=True, description="Most groups returned"
    )

    @field_validator("subjects")
    @classmethod
    def _subjects(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _checked_values(value, max_chars=200)

    @field_validator("predicates")
    @classmethod
    def _predicates(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _checked_values(value, max_chars=80)

    @field_validator("predicate_prefixes")
    @classmethod
    def _prefixes(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        checked = _checked_values(value, max_chars=80)
        for prefix in checked or ():
            normalized = normalize_predicate(prefix)
            if normalized.startswith("_") or normalized.endswith("_"):
                raise ValueError("a predicate prefix must not begin or end with a separator")
        return checked

    @field_validator("units")
    @classmethod
    def _units(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return _checked_values(value, max_chars=40)

    @field_validator("group_by")
    @classmethod
    def _group_by(cls, value: tuple[GroupDimension, ...]) -> tuple[GroupDimension, ...]:
        if len(set(value)) != len(value):
            raise ValueError("group_by must not repeat a dimension")
        if "unit" not in value:
            # Units are never converted, so amounts of different units must never share a sum.
            raise ValueError(
                "group_by must include 'unit': amounts of different units are never added"
            )
        return value

    @model_validator(mode="after")
    def _window_ordered(self) -> QuantityAggregationQuery:
        low, high = self.event_time_from, self.event_time_to
        if low is not None and high is not None and low > high:
            raise ValueError("event_time_from is after event_time_to")
        return self


class QuantitySample(BaseModel):
    """One counted quantity as stored, with the quote and sources that ground it."""

    model_config = ConfigDict(frozen=True)

    node_id: str = Field(description="The fact node holding the quantity")
    subject: str = Field(description="Who or what it is about, as written")
    predicate: str = Field(description="What was counted or measured, e.g. raised")
    value: DecimalText = Field(description="The amount as exact decimal text")
    unit: str | None = Field(description="Its unit as written; null for a plain count")
    evidence_quote: str = Field(description="The source words that state it")
    event_ids: tuple[str, ...] = Field(description="The source events behind it")
    event_time: AwareDatetime | None = Field(description="When it was said, when known")


class QuantityGroup(BaseModel):
    """The counted quantities sharing one value of each grouped dimension.

    Members share the normalized value; the group shows it as written (the first written form
    in sort order when members wrote it differently, e.g. "We" and "we"). A dimension that is
    not grouped is null; `unit` is always grouped, null there meaning "no unit"."""

    model_config = ConfigDict(frozen=True)

    unit: str | None = Field(description="The group's unit; null means no unit")
    subject: str | None = Field(default=None, description="The group's subject when grouped")
    predicate: str | None = Field(default=None, description="The group's predicate when grouped")
    count: int = Field(description="Counted quantities in the group")
    total: DecimalText = Field(description="Their exact sum, as decimal text")
    minimum: DecimalText = Field(description="The smallest amount, as decimal text")
    maximum: DecimalText = Field(description="The largest amount, as decimal text")
    event_count: int = Field(description="Distinct source messages behind the counted quantities")
    repeated_in_other_events: int = Field(
        description="Counted quantities whose quote and value already appeared in another "
        "source message: possibly the same amount mentioned twice. They are still counted; "
        "the caller decides."
    )
    earliest_event_time: AwareDatetime | None = Field(description="The oldest event time")
    latest_event_time: AwareDatetime | None = Field(description="The newest event time")
    samples: tuple[QuantitySample, ...] = Field(
        description="Counted quantities, dated ones first and oldest first, up to sample_limit"
    )
    samples_truncated: bool = Field(description="True when the group has more than the samples")


ExclusionReason = Literal[
    "malformed",
    "filtered",
    "outside_event_time_window",
    "no_event_time",
    "inactive",
    "expired",
    "hypothetical",
    "unparsable_value",
    "value_not_in_evidence",
    "unit_not_in_evidence",
    "source_missing",
    "evidence_not_in_source",
    "claim_not_in_source",
]


class QuantityAggregation(BaseModel):
    """Per-unit totals over every stored quantity that matched and passed revalidation.

    `quantity_nodes == counted + sum(exclusions.values())`: every quantity read is either
    counted or has exactly one reason it was not.
    """

    model_config = ConfigDict(frozen=True)

    query: QuantityAggregationQuery = Field(description="The query that was run")
    scanned_nodes: int = Field(
        description="Fact nodes of the owner read by the scan (quantities are fact nodes)"
    )
    quantity_nodes: int = Field(description="Of those, the nodes holding a quantity")
    matched: int = Field(
        description="Quantities that passed the subject, predicate, unit, scope and time filters"
    )
    counted: int = Field(description="Quantities added into the totals")
    groups: tuple[QuantityGroup, ...] = Field(description="The totals, up to group_limit groups")
    group_count: int = Field(description="How many groups there were in all")
    groups_truncated: bool = Field(description="True when there were more than group_limit")
    exclusions: dict[ExclusionReason, int] = Field(
        description="Reason to how many quantities it kept out of the totals"
    )
    stored_set_exhaustive: Literal[True] = Field(
        default=True,
        description="The scan read every stored quantity of the owner, not a ranked or "
        "sampled subset",
    )
    unit_conversion: Literal["none"] = Field(
        default="none",
        description="Amounts of different units are reported apart and never converted",
    )
    consistency: Literal["complete_for_unchanged_store"] = Field(
        default="complete_for_unchanged_store",
        description="Exact when nothing was written during the scan; concurrent writes may be "
        "half seen",
    )
    extraction_coverage: Literal["unknown"] = Field(
        default="unknown",
        description="Only amounts an extractor recorded are counted; how many it missed is "
        "not known",
    )


class QuantityQuestionPlan(BaseModel):
    """How a question was read: the structured query it became, or why it was not supported."""

    model_config = ConfigDict(frozen=True)

    question: str = Field(description="The question as asked")
    status: Literal["ready", "unsupported"] = Field(
        description="ready: it became a query; unsupported: its wording is not supported"
    )
    reason: str | None = Field(default=None, description="Why it is unsupported")
    shape: QuestionShape | None = Field(
        default=None, description="The supported question form it matched"
    )
    query: QuantityAggregationQuery | None = Field(
        default=None, description="The structured query it became"
    )
    assumptions: tuple[str, ...] = Field(
        default=(), description="What the reading assumed, in plain words"
    )


class QuantityQuestionAnswer(BaseModel):
    """The plan, always; the aggregation only when the plan was ready (memory is read then)."""

    model_config = ConfigDict(frozen=True)

    plan: QuantityQuestionPlan = Field(description="How the question was read")
    aggregation: QuantityAggregation | None = Field(
        description="The totals; null when the question was unsupported"
    )

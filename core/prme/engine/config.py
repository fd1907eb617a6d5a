"""Engine configuration (`EngineConfig`): scoring, packing, vector and retrieval-profile settings.

The retrieval techniques' settings take their defaults from the named retrieval profile
(retrieval/profiles.py); the defaults declared here are the `conversation` profile's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prme.engine.organizer_rules import OrganizerConfig
from prme.model.enums import NodeType
from prme.model.inputs import DEFAULT_NODE_TYPE
from prme.retrieval.profiles import (
    DEFAULT_PROFILE,
    PROFILE_NAMES,
    ProfileName,
    profile_settings,
)

DEFAULT_TTL_DAYS: dict[NodeType, int | None] = {
    NodeType.ENTITY: None,
    NodeType.FACT: None,
    NodeType.EVENT: 365,
    NodeType.DECISION: 180,
    NodeType.PREFERENCE: None,
    NodeType.TASK: 90,
    NodeType.SUMMARY: 365,
    NodeType.NOTE: 90,
    NodeType.INSTRUCTION: None,
}


class ScoringConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # 20 rather than the customary 60: the first ranks of each channel weigh more.
    rrf_k: int = Field(default=20, ge=1)
    rrf_recency_boost: float = Field(default=0.25, ge=0.0, le=10.0)
    rrf_tie_break: str = Field(default="event_time", pattern="^(event_time|none)$")
    # A lexical hit whose BM25 score is below this share of the best hit's counts in the
    # other channel only: it matched a common word of the query and little else.
    weak_lexical_share: float = Field(default=0.3, ge=0.0, lt=1.0)
    # Records spoken by someone the query names score this much more (2.0: three times).
    speaker_boost: float = Field(default=2.0, ge=0.0, le=10.0)
    # Records said on a day, month or year the query names score this much more.
    time_mention_boost: float = Field(default=1.0, ge=0.0, le=10.0)
    # A share of the best score among the candidates said around a record in its session.
    session_neighbour_weight: float = Field(default=0.2, ge=0.0, le=1.0)
    session_neighbour_span: int = Field(default=2, ge=0, le=10)
    # For a question about the present, a claim that superseded an earlier value on ingest
    # ("I moved from Lisbon to Berlin") scores this much more than it would.
    current_value_boost: float = Field(default=1.0, ge=0.0, le=10.0)
    # A record worded as a correction ("Actually it's ...", "I meant ...") scores this much more
    # for any query: it exists to replace what was said before it.
    correction_boost: float = Field(default=1.0, ge=0.0, le=10.0)
    # For a question about the present, an entity node ("Dublin") that a candidate record
    # names ranks after every record: the record says what holds, the bare name does not.
    current_state_entities_last: bool = True


class PackingConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    fold_repeated_text: bool = True
    # How the reader format lays records out: grouped under date-and-session headers in time
    # order ("sessions"), or one timed record per line in rank order ("ranked").
    reader_layout: Literal["sessions", "ranked"] = "sessions"
    session_context_rank_fusion_score_decay: float = Field(default=0.6, ge=0.0, le=1.0)


class RetrievalConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # The limit when a request names none: None fills the token budget (up to fill_limit);
    # a number restores a fixed default (10 was the first releases' behaviour).
    default_limit: int | None = Field(default=None, ge=1, le=200)
    fill_limit: int = Field(default=200, ge=1, le=1000)
    # Candidates per channel for such a fill: a 4,096-token context holds about 130 records.
    fill_candidate_k: int = Field(default=150, ge=1, le=1000)
    default_token_budget: int = Field(default=2048, ge=0)
    # Budget fills put the records said around each of the first `session_context_anchors`
    # results (up to `session_context_radius` on each side, same session) right after them.
    session_context_anchors: int = Field(default=10, ge=0, le=100)
    session_context_radius: int = Field(default=2, ge=0, le=10)
    candidate_k: int = Field(default=50, ge=1, le=1000)


class EngineConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # Which retrieval techniques are on by default (retrieval/profiles.py); a technique's
    # setting given here explicitly overrides the profile.
    retrieval_profile: ProfileName = DEFAULT_PROFILE
    default_node_type: NodeType = DEFAULT_NODE_TYPE
    default_ttl_days: dict[NodeType, int | None] = Field(
        default_factory=lambda: dict(DEFAULT_TTL_DAYS)
    )
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    packing: PackingConfig = Field(default_factory=PackingConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    # What the vector channel embeds: the speaker's name then the text, or the text alone.
    vector_text: Literal["speaker_then_content", "content"] = "speaker_then_content"
    # Weight of the previous record of the same session in a record's vector:
    # normalize(own + w * previous_own); 0 indexes each record's own embedding alone.
    vector_session_context: float = Field(default=0.6, ge=0.0, le=4.0)
    # How a record's own vector is made: the mean of its sentences' vectors, or one vector
    # of the whole text (see engine/vector_input.py).
    vector_segments: Literal["sentences", "whole"] = "sentences"
    # Days a retrieval receipt stays readable (and replayable, and open to feedback); after
    # that it reads as not found on every backend, and DynamoDB's TTL deletes it.
    receipt_retention_days: int = Field(default=30, ge=1)
    # How long a process reuses an owner's active ranking profiles before reading them again:
    # a change made through this process applies at once, one made elsewhere (another Lambda
    # container or process) within this many seconds. 0 reads them on every retrieval.
    ranking_profile_cache_seconds: float = Field(default=5.0, ge=0.0, le=300.0)
    # How many pending work items one processing pass takes.
    work_batch_size: int = Field(default=100, ge=1)
    # How many of an owner's ledger records one erase call removes at most: a larger owner is
    # erased over several calls, each well inside an API Gateway request's 29 seconds.
    erase_records_per_call: int = Field(default=5000, ge=1)
    # Days a usage entry is kept (DynamoDB's TTL deletes it after that): past a year, so a
    # year's bill can still be summed from it.
    usage_retention_days: int = Field(default=400, ge=1)
    # The organizer's thresholds (engine/organizer_rules.py; `PRME_ORGANIZER__*`).
    organizer: OrganizerConfig = Field(default_factory=OrganizerConfig)

    @model_validator(mode="before")
    @classmethod
    def _profile_defaults(cls, data: Any) -> Any:
        """Fill every technique setting the caller did not give with its profile's value."""
        if not isinstance(data, dict):
            return data
        profile = data.get("retrieval_profile", DEFAULT_PROFILE)
        if profile not in PROFILE_NAMES:
            return data  # the field's own validation names the error
        filled = dict(data)
        for path, value in profile_settings(profile).items():
            group, _, name = path.rpartition(".")
            if not group:
                filled.setdefault(name, value)
            else:
                filled[group] = _default_in_group(filled.get(group), name, value)
        return filled


def _default_in_group(group: object, name: str, value: object) -> object:
    """`group` (absent, a dict of given values, or a config model) with `name` defaulting to
    `value`: a model keeps the fields it was built with and takes `value` for the others."""
    if group is None:
        return {name: value}
    if isinstance(group, dict):
        return {name: value, **group}
    if isinstance(group, BaseModel) and name not in group.model_fields_set:
        return group.model_copy(update={name: value})
    return group

"""Ranking profiles learned from feedback: the ranking weights a profile sets, and what the
evaluation of a proposal on held-out judgments found.

A profile changes only settings of the fused ranking that a saved receipt records
(`retrieval.fusion.FusionConfig`), so a receipt made under a profile replays with the
weights it was ranked by, and a proposal can be scored offline by re-ranking the
candidates of judged receipts. A weight left `None` keeps the value the engine's settings
give it.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator

from prme.model.enums import Scope

# The fused-ranking channels a channel weight can scale (retrieval/fusion.py rank names).
CHANNELS: tuple[str, ...] = ("vector", "lexical")
MAX_CHANNEL_WEIGHT = 100.0


class RankingWeights(BaseModel):
    """The fused-ranking settings a ranking profile overrides; `None` keeps the default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rrf_k: int | None = Field(default=None, ge=1, le=1000, description="k of 1/(k + rank)")
    channel_weights: dict[str, float] | None = Field(
        default=None,
        description="Multiplier of each channel's RRF term, by channel name (vector, "
        "lexical); a channel not named keeps 1",
    )
    speaker_boost: float | None = Field(
        default=None, ge=0.0, le=10.0, description="Bonus for a record by a person the query names"
    )
    time_mention_boost: float | None = Field(
        default=None, ge=0.0, le=10.0, description="Bonus for a record said in a period named"
    )
    session_neighbour_weight: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Share of the best session neighbour's score"
    )
    recency_boost: float | None = Field(
        default=None, ge=0.0, le=10.0, description="Recency bonus on current-state questions"
    )
    current_value_boost: float | None = Field(
        default=None, ge=0.0, le=10.0, description="Bonus for a claim that superseded a value"
    )
    correction_boost: float | None = Field(
        default=None, ge=0.0, le=10.0, description="Bonus for a record worded as a correction"
    )

    @field_validator("channel_weights")
    @classmethod
    def _known_finite_channels(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        """A weight of a channel fusion has, between 0 and MAX_CHANNEL_WEIGHT: NaN or infinity
        would make every score NaN (no order at all) and cannot be saved in a receipt's JSON."""
        for name, weight in (value or {}).items():
            if name not in CHANNELS:
                raise ValueError(f"Unknown ranking channel: {name} (channels: {CHANNELS})")
            if not math.isfinite(weight) or not 0.0 <= weight <= MAX_CHANNEL_WEIGHT:
                raise ValueError(
                    f"A channel weight must be a number from 0 to {MAX_CHANNEL_WEIGHT}: {name}"
                )
        return value

    def overrides(self) -> dict[str, object]:
        """The weights this profile sets, by `FusionConfig` field name (unset ones left out)."""
        return self.model_dump(exclude_none=True)

    def is_neutral(self) -> bool:
        return not self.overrides()


# -- evaluating a proposal on held-out judgments ------------------------------------------

DEFAULT_HOLDOUT_SHARE = 0.3
DEFAULT_MAX_RECORDS = 1000
MAX_RECORDS = 5000
# The training retrievals the search scores (in request id order); the metrics of the baseline
# and the proposal are still computed on the whole training and held-out parts.
MAX_FIT_RETRIEVALS = 500


class LearningInput(BaseModel):
    """Which of the owner's judged retrievals to learn ranking weights from, and how many to
    hold out for the evaluation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scopes: list[Scope] | None = Field(
        default=None,
        min_length=1,
        description="Learn for these scopes: only retrievals filtered to some of these scopes "
        "(and to no other) count. Omit to learn from every judged retrieval of the owner",
    )
    holdout_share: float = Field(
        default=DEFAULT_HOLDOUT_SHARE,
        ge=0.1,
        le=0.5,
        description="Share of the judged retrievals held out to evaluate the proposal (chosen "
        "by a hash of each retrieval's request id, so the split never moves)",
    )
    max_records: int = Field(
        default=DEFAULT_MAX_RECORDS,
        ge=1,
        le=MAX_RECORDS,
        description="Most relevance judgments, and most answer citations, read (in id order)",
    )


class LearningEvaluation(BaseModel):
    """Ranking weights fitted to the owner's judged retrievals, and how they and the baseline
    rank the retrievals held out of the fit. Nothing is saved or activated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    proposal: RankingWeights = Field(description="The weights fitted on the training retrievals")
    baseline: RankingWeights = Field(
        description="The weights the fit started from and is compared with (the active "
        "profile's; neutral: the settings each retrieval was ranked with)"
    )
    baseline_profile_id: str | None = Field(
        default=None, description="The active profile the baseline is, or null for neutral"
    )
    scopes: list[Scope] | None = Field(description="The scopes learned for (null: all)")
    metric: str = Field(description="The ranking metric: ndcg@10 of the nodes judged relevant")
    holdout_share: float = Field(description="The share of judged retrievals held out")
    relevance_records: int = Field(description="Relevance judgments read")
    citation_records: int = Field(description="Answer citations read")
    judged_retrievals: int = Field(
        description="Retrievals with a judgment or citation in scope whose receipt is still kept"
    )
    skipped_retrievals: int = Field(
        description="Judged retrievals not used: receipt expired, out of scope, no node "
        "judged relevant among their fused candidates, beyond max_records, or not read in time"
    )
    train_size: int = Field(description="Judged retrievals not held out (the training part)")
    fit_size: int = Field(
        description=f"Training retrievals the search scored (the first {MAX_FIT_RETRIEVALS} by "
        "request id; train_size when fewer)"
    )
    holdout_size: int = Field(description="Judged retrievals held out of the fit")
    baseline_train: float = Field(description="The metric of the baseline on the training set")
    proposal_train: float = Field(description="The metric of the proposal on the training set")
    baseline_holdout: float = Field(description="The metric of the baseline on the holdout")
    proposal_holdout: float = Field(description="The metric of the proposal on the holdout")
    gain: float = Field(description="proposal_holdout - baseline_holdout")
    recommend_margin: float = Field(
        description="How much the proposal must gain on the holdout to be recommended"
    )
    recommended: bool = Field(
        description="True when the proposal gains at least recommend_margin on the holdout "
        "and does not lose on the training set"
    )
    input_checksum: str = Field(
        description="SHA-256 hex over the request ids and receipt checksums of the judged "
        "retrievals used (train and holdout), in id order: what the proposal was learned from"
    )
    complete: bool = Field(
        default=True,
        description="False when the request's time ran short: the receipts of some judged "
        "retrievals were not read (unread_retrievals, also counted as skipped) or the search "
        "stopped before its rounds ended (search_complete); the figures are still those of "
        "the weights returned on the retrievals read. Ask again with a smaller max_records",
    )
    unread_retrievals: int = Field(
        default=0, description="Judged retrievals whose receipts the time left no room to read"
    )
    search_complete: bool = Field(
        default=True,
        description="False when the search stopped before its rounds ended to answer in time",
    )

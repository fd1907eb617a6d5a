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
from collections.abc import Iterable
from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from prme.model.enums import Scope

# The fused-ranking channels a channel weight can scale (retrieval/fusion.py rank names).
CHANNELS: tuple[str, ...] = ("vector", "lexical")
MAX_CHANNEL_WEIGHT = 10.0


class RankingWeights(BaseModel):
    """The fused-ranking settings a ranking profile overrides; `None` keeps the default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rrf_k: int | None = Field(default=None, ge=1, le=1000, description="k of 1/(k + rank)")
    channel_weights: dict[str, float] | None = Field(
        default=None,
        description="Multiplier of each channel's RRF term, by channel name (vector, "
        "lexical), from 0 to 10; a channel not named keeps 1",
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
    def _known_channels(cls, weights: dict[str, float] | None) -> dict[str, float] | None:
        """Only channels the fusion ranks, each weighted by a finite number from 0 to 10: a
        profile saved with another can never fail a retrieval."""
        for name, value in (weights or {}).items():
            if name not in CHANNELS:
                raise ValueError(f"unknown ranking channel {name!r} (known: {', '.join(CHANNELS)})")
            if not math.isfinite(value) or not 0.0 <= value <= MAX_CHANNEL_WEIGHT:
                raise ValueError(
                    f"the weight of channel {name!r} must be a number from 0 to "
                    f"{MAX_CHANNEL_WEIGHT:g}"
                )
        return weights

    def overrides(self) -> dict[str, object]:
        """The weights this profile sets, by `FusionConfig` field name (unset ones left out)."""
        return self.model_dump(exclude_none=True)

    def is_neutral(self) -> bool:
        return not self.overrides()


# -- ranking profiles: saved weights, and which one is active in each scope slot ------------

RankingProfileAction = Literal["activate", "deactivate", "rollback"]
# The sort key of the owner-wide slot (a profile for every scope); a scope name never sorts
# before it, so the slot key of a scope set is unambiguous.
OWNER_WIDE_SLOT = "*"


def scope_slot(scopes: Iterable[Scope]) -> str:
    """The key of a scope set's slot: its scope names sorted and joined (`*` for every scope)."""
    names = sorted({Scope(s).value for s in scopes})
    return "+".join(names) if names else OWNER_WIDE_SLOT


def sorted_scopes(scopes: Iterable[Scope]) -> list[Scope]:
    return sorted({Scope(s) for s in scopes}, key=lambda s: s.value)


class ProfileEvaluation(BaseModel):
    """What the evaluation of a proposal on held-out judgments found (evaluate_learning): the
    profile is activated only when this exists and recommends it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    holdout_size: int = Field(
        ge=1, description="Judged retrievals held out of the fit and scored by the evaluation"
    )
    metric: str = Field(
        min_length=1,
        max_length=64,
        description="The holdout metric compared (as evaluate_learning names it)",
    )
    baseline_metric: float = Field(
        allow_inf_nan=False, description="The metric of the baseline ranking on the holdout"
    )
    proposal_metric: float = Field(
        allow_inf_nan=False, description="The metric of the proposed weights on the holdout"
    )
    gain: float = Field(
        allow_inf_nan=False, description="proposal_metric - baseline_metric on the holdout"
    )
    recommended: bool = Field(
        description="Whether the evaluation recommends the proposal (a gain on the holdout)"
    )
    input_checksum: str = Field(
        pattern=r"^[0-9a-f]{64}$",
        description="sha256 of the judgments the evaluation read, as evaluate_learning returns it",
    )

    @model_validator(mode="after")
    def _consistent(self) -> ProfileEvaluation:
        if abs(self.gain - (self.proposal_metric - self.baseline_metric)) > 1e-9:
            raise ValueError("gain must be proposal_metric - baseline_metric")
        if self.recommended and self.gain <= 0:
            raise ValueError("an evaluation cannot recommend a proposal without a holdout gain")
        return self


class RankingProfileInput(BaseModel):
    """A ranking profile to save: its weights, what they were evaluated on and against."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile_id: UUID | None = Field(
        default=None, description="A UUID for the profile; one is made when omitted"
    )
    scopes: list[Scope] = Field(
        default_factory=list,
        max_length=len(Scope),
        description="The scopes whose judgments the profile was learned and evaluated on; "
        "empty: every scope (the profile may then be activated for any scope set)",
    )
    weights: RankingWeights = Field(description="The fused-ranking settings the profile sets")
    baseline_profile_id: UUID | None = Field(
        default=None,
        description="The profile the evaluation compared against (null: the engine's settings)",
    )
    evaluation: ProfileEvaluation | None = Field(
        default=None,
        description="The holdout evaluation of these weights; without one, or when it does not "
        "recommend them, the profile is saved but cannot be activated",
    )


class RankingProfile(BaseModel):
    """A saved ranking profile of one owner; immutable once created."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile_id: str = Field(description="The profile's UUID")
    user_id: str = Field(description="The owner the profile belongs to")
    scopes: list[Scope] = Field(description="Scopes it was learned on, sorted; empty: every scope")
    weights: RankingWeights = Field(description="The fused-ranking settings it sets")
    baseline_profile_id: str | None = Field(
        default=None, description="The profile its evaluation compared against"
    )
    evaluation: ProfileEvaluation | None = Field(
        default=None, description="Its holdout evaluation (null: not evaluated)"
    )
    created_at: datetime = Field(description="When it was saved")

    @property
    def activatable(self) -> bool:
        return self.evaluation is not None and self.evaluation.recommended


class RankingProfileState(BaseModel):
    """One change of which profile ranks the retrievals of a scope slot; the newest change of
    a slot is its current state, every change stays in its history."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scopes: list[Scope] = Field(description="The slot's scope set, sorted; empty: owner-wide")
    sequence: int = Field(ge=1, description="The change's number in its slot, from 1")
    change_id: str = Field(
        description="Opaque token of this change: the next change of the slot must name it "
        "(a stale one is refused with 409)"
    )
    active_profile_id: str | None = Field(
        description="The profile active in the slot after the change (null: none)"
    )
    previous_profile_id: str | None = Field(
        description="The profile that was active in the slot before the change"
    )
    action: RankingProfileAction = Field(description="activate, deactivate or rollback")
    actor: str = Field(description="Who made the change: role and key id ('keyless' without)")
    at: datetime = Field(description="When the change was made")

    @property
    def slot(self) -> str:
        return scope_slot(self.scopes)


class ActiveRankingProfile(BaseModel):
    """A scope slot as it stands, and the profile that ranks retrievals filtered to its scopes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scopes: list[Scope] = Field(description="The scopes asked about, sorted; empty: owner-wide")
    state: RankingProfileState | None = Field(
        description="The slot's current change (null: never changed); its change_id is what "
        "the next activate, deactivate or rollback of the slot names"
    )
    profile: RankingProfile | None = Field(
        description="The profile ranking retrievals filtered to exactly these scopes: the "
        "slot's own, else the owner-wide one (null: the engine's settings rank them)"
    )
    profile_slot_scopes: list[Scope] | None = Field(
        description="The slot the profile is active in (empty: owner-wide; null: no profile)"
    )


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
    profile: RankingProfileInput = Field(
        description="The body of create_ranking_profile (POST /v1/learning/profiles) that saves "
        "the proposal with this evaluation's holdout figures, on these scopes, against this "
        "baseline; send it as is (a profile_id may be added)"
    )

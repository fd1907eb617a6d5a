"""Ranking profiles learned from feedback: the ranking weights a profile sets, and what the
evaluation of a proposal on held-out judgments found.

A profile changes only settings of the fused ranking that a saved receipt records
(`retrieval.fusion.FusionConfig`), so a receipt made under a profile replays with the
weights it was ranked by, and a proposal can be scored offline by re-ranking the
candidates of judged receipts. A weight left `None` keeps the value the engine's settings
give it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prme.model.enums import Scope

# The fused-ranking channels a channel weight can scale (retrieval/fusion.py rank names).
CHANNELS: tuple[str, ...] = ("vector", "lexical")


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

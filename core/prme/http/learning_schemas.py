"""HTTP bodies and queries of the learning routes: the evaluation (/v1/learning/evaluate) and
the ranking profiles (/v1/learning/profiles...)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from prme.engine.ranking_profiles import (
    DEFAULT_HISTORY,
    DEFAULT_PROFILE_PAGE,
    MAX_HISTORY,
    MAX_PROFILE_PAGE,
)
from prme.http.schemas import USER_ID
from prme.model.enums import Scope
from prme.model.learning import LearningInput, RankingProfile, RankingProfileInput

CHANGE_ID: Any = Field(
    min_length=1,
    max_length=64,
    description="The change_id of the slot's current state, as the active profile or the "
    "history shows it: a change is refused (409) when another came first",
)
SLOT_SCOPES: Any = Field(
    default_factory=list,
    max_length=len(Scope),
    description="The scope slot: a retrieval filtered to exactly these scopes is ranked by its "
    "profile; empty: the owner-wide slot, used when no slot matches",
)


class LearningEvaluationRequest(LearningInput):
    """POST /v1/learning/evaluate: fit ranking weights to the owner's judged retrievals and
    evaluate them on those held out."""

    user_id: str | None = USER_ID


class RankingProfileRequest(RankingProfileInput):
    """POST /v1/learning/profiles: save learned weights and their holdout evaluation."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "scopes": ["personal"],
                    "weights": {"rrf_k": 40, "session_neighbour_weight": 0.2},
                    "evaluation": {
                        "holdout_size": 60,
                        "metric": "ndcg@10",
                        "baseline_metric": 0.61,
                        "proposal_metric": 0.66,
                        "gain": 0.05,
                        "recommended": True,
                        "input_checksum": "9f" * 32,
                    },
                }
            ]
        }
    )

    user_id: str | None = USER_ID


class RankingProfileListQuery(BaseModel):
    """GET /v1/learning/profiles: a page of the owner's profiles in id order."""

    model_config = ConfigDict(extra="forbid")

    limit: int = Field(
        default=DEFAULT_PROFILE_PAGE, ge=1, le=MAX_PROFILE_PAGE, description="Profiles per page"
    )
    after_id: UUID | None = Field(
        default=None, description="The last profile_id of the previous page"
    )
    user_id: str | None = USER_ID


class RankingProfileListResponse(BaseModel):
    """A page of ranking profiles; ask for the next with after_id = the last profile_id."""

    items: list[RankingProfile] = Field(description="The profiles, in profile_id order")


class RankingSlotQuery(BaseModel):
    """GET /v1/learning/profiles/active: one scope slot."""

    model_config = ConfigDict(extra="forbid")

    scopes: list[Scope] = SLOT_SCOPES
    user_id: str | None = USER_ID


class RankingHistoryQuery(RankingSlotQuery):
    """GET /v1/learning/profiles/history: the slot's newest changes first."""

    limit: int = Field(
        default=DEFAULT_HISTORY, ge=1, le=MAX_HISTORY, description="Most changes to return"
    )


class ActivateRankingProfileRequest(BaseModel):
    """POST /v1/learning/profiles/{profile_id}/activate."""

    model_config = ConfigDict(extra="forbid")

    change_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="The change_id of the slot's current state; omit it only for a slot that "
        "never changed (a stale or missing one is refused with 409)",
    )
    scopes: list[Scope] | None = Field(
        default=None,
        max_length=len(Scope),
        description="The slot to activate it in; default: the scopes the profile was learned "
        "on (a profile learned on every scope may serve any slot)",
    )
    user_id: str | None = USER_ID


class DeactivateRankingProfileRequest(BaseModel):
    """POST /v1/learning/profiles/deactivate: leave a slot without a profile."""

    model_config = ConfigDict(extra="forbid")

    change_id: str = CHANGE_ID
    scopes: list[Scope] = SLOT_SCOPES
    user_id: str | None = USER_ID


class RollbackRankingProfileRequest(DeactivateRankingProfileRequest):
    """POST /v1/learning/profiles/rollback: make active again a profile active there before."""

    profile_id: UUID = Field(
        description="A profile that was active in this slot before its current change"
    )

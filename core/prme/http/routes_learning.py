"""The ranking-profile routes' adapters: listing, the active profile and history of a scope
slot, and the changes of a slot (activate, deactivate, roll back), which record who made them.

Registered before the table-built routes, so /active and /history are not read as a
profile id."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query

from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import Caller, ProfileIdPath, served
from prme.http.learning_schemas import (
    ActivateRankingProfileRequest,
    DeactivateRankingProfileRequest,
    RankingHistoryQuery,
    RankingProfileListQuery,
    RankingProfileListResponse,
    RankingSlotQuery,
    RollbackRankingProfileRequest,
)
from prme.model.learning import ActiveRankingProfile, RankingProfileState


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's adapter routes to the app."""

    @served(app, "list_ranking_profiles")
    def list_ranking_profiles(
        caller: Caller, query: Annotated[RankingProfileListQuery, Query()]
    ) -> RankingProfileListResponse:
        items = engine.list_ranking_profiles(
            resolve_owner(caller, query.user_id),
            limit=query.limit,
            after_id=str(query.after_id) if query.after_id else None,
        )
        return RankingProfileListResponse(items=items)

    @served(app, "get_active_ranking_profile")
    def get_active_ranking_profile(
        caller: Caller, query: Annotated[RankingSlotQuery, Query()]
    ) -> ActiveRankingProfile:
        return engine.get_active_ranking_profile(resolve_owner(caller, query.user_id), query.scopes)

    @served(app, "list_ranking_profile_history")
    def list_ranking_profile_history(
        caller: Caller, query: Annotated[RankingHistoryQuery, Query()]
    ) -> list[RankingProfileState]:
        return engine.list_ranking_profile_history(
            resolve_owner(caller, query.user_id), query.scopes, limit=query.limit
        )

    @served(app, "activate_ranking_profile")
    def activate_ranking_profile(
        profile_id: ProfileIdPath, body: ActivateRankingProfileRequest, caller: Caller
    ) -> RankingProfileState:
        return engine.activate_ranking_profile(
            resolve_owner(caller, body.user_id),
            str(profile_id),
            actor=caller,
            change_id=body.change_id,
            scopes=body.scopes,
        )

    @served(app, "deactivate_ranking_profile")
    def deactivate_ranking_profile(
        body: DeactivateRankingProfileRequest, caller: Caller
    ) -> RankingProfileState:
        return engine.deactivate_ranking_profile(
            resolve_owner(caller, body.user_id),
            actor=caller,
            change_id=body.change_id,
            scopes=body.scopes,
        )

    @served(app, "rollback_ranking_profile")
    def rollback_ranking_profile(
        body: RollbackRankingProfileRequest, caller: Caller
    ) -> RankingProfileState:
        return engine.rollback_ranking_profile(
            resolve_owner(caller, body.user_id),
            actor=caller,
            change_id=body.change_id,
            scopes=body.scopes,
            profile_id=str(body.profile_id),
        )

"""The alias routes' adapters: proposal listing and review, and a node's edges (alias links).

Alias proposals are listed and reviewed here; a node's edges (verified alias links among
them) are read here too, since those links are what an acceptance creates.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query

from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import Caller, ProposalIdPath, served
from prme.http.judgment_schemas import (
    AliasProposalListResponse,
    AliasProposalQuery,
    AliasProposalResponse,
    AliasReviewRequest,
)


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @served(app, "list_alias_proposals")
    def list_alias_proposals(
        caller: Caller, query: Annotated[AliasProposalQuery, Query()]
    ) -> AliasProposalListResponse:
        items = engine.list_alias_proposals(
            resolve_owner(caller, query.user_id),
            status=query.status,
            scope=query.scope,
            limit=query.limit,
        )
        return AliasProposalListResponse(items=[AliasProposalResponse.of(i) for i in items])

    @served(app, "review_alias_proposal")
    def review_alias_proposal(
        proposal_operation_id: ProposalIdPath, body: AliasReviewRequest, caller: Caller
    ) -> AliasProposalResponse:
        item = engine.review_alias_proposal(
            resolve_owner(caller, body.user_id),
            str(proposal_operation_id),
            actor=caller,
            decision=body.decision,
            reviewer_id=body.reviewer_id,
            reason=body.reason,
        )
        return AliasProposalResponse.of(item)

"""The receipt listing routes' adapters: the owner's saved retrievals, and those of one node."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query

from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import Caller, NodeIdPath, served
from prme.http.receipt_listing_schemas import NodeRetrievalsQuery, RetrievalListQuery
from prme.model.receipt_listing import NodeRetrievalPage, RetrievalPage


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @served(app, "list_retrievals")
    def list_retrievals(
        caller: Caller, query: Annotated[RetrievalListQuery, Query()]
    ) -> RetrievalPage:
        return engine.list_retrievals(
            resolve_owner(caller, query.user_id),
            cursor=query.cursor,
            limit=query.limit,
            since=query.since,
            until=query.until,
        )

    @served(app, "list_node_retrievals")
    def list_node_retrievals(
        node_id: NodeIdPath, caller: Caller, query: Annotated[NodeRetrievalsQuery, Query()]
    ) -> NodeRetrievalPage:
        return engine.list_node_retrievals(
            resolve_owner(caller, query.user_id),
            str(node_id),
            cursor=query.cursor,
            scan_limit=query.scan_limit,
        )

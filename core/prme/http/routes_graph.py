"""The graph routes' adapters: a node's provenance, neighborhood and supersedence chain."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query

from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import Caller, NodeIdPath, served
from prme.http.graph_schemas import (
    ChainQuery,
    NeighborhoodQuery,
    NodeChainResponse,
    NodeNeighborhoodResponse,
    NodeProvenanceResponse,
    ProvenanceQuery,
)


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @served(app, "get_node_provenance")
    def get_node_provenance(
        node_id: NodeIdPath, caller: Caller, query: Annotated[ProvenanceQuery, Query()]
    ) -> NodeProvenanceResponse:
        found = engine.get_node_provenance(
            resolve_owner(caller, query.user_id),
            str(node_id),
            operation_cursor=query.operation_cursor,
            operation_limit=query.operation_limit,
        )
        return NodeProvenanceResponse.of(found)

    @served(app, "get_node_neighborhood")
    def get_node_neighborhood(
        node_id: NodeIdPath, caller: Caller, query: Annotated[NeighborhoodQuery, Query()]
    ) -> NodeNeighborhoodResponse:
        found = engine.get_node_neighborhood(
            resolve_owner(caller, query.user_id), str(node_id), max_hops=query.max_hops
        )
        return NodeNeighborhoodResponse.of(found)

    @served(app, "get_node_chain")
    def get_node_chain(
        node_id: NodeIdPath, caller: Caller, query: Annotated[ChainQuery, Query()]
    ) -> NodeChainResponse:
        found = engine.get_node_chain(
            resolve_owner(caller, query.user_id), str(node_id), direction=query.direction
        )
        return NodeChainResponse.of(found)

"""The adapter of POST /v1/nodes/batch-get: many memory nodes of one owner read in one call."""

from __future__ import annotations

from fastapi import FastAPI

from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import Caller, served
from prme.http.node_batch_schemas import NodeBatchRequest, NodeBatchResponse


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @served(app, "get_nodes")
    def get_nodes(body: NodeBatchRequest, caller: Caller) -> NodeBatchResponse:
        owner = resolve_owner(caller, body.user_id)
        batch = engine.get_nodes(owner, [str(node_id) for node_id in body.node_ids])
        return NodeBatchResponse.of(batch)

"""Request queries and responses of the graph and provenance reads of one node."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from prme.http.schemas import USER_ID, NodeResponse
from prme.model.graph import (
    DEFAULT_MAX_HOPS,
    DEFAULT_OPERATION_LIMIT,
    HISTORY_POSITION_PATTERN,
    MAX_CHAIN_NODES,
    MAX_HOPS,
    MAX_NEIGHBORHOOD_NODES,
    MAX_OPERATION_LIMIT,
    ChainDirection,
    NodeChain,
    NodeNeighborhood,
    NodeProvenance,
    OperationEntry,
)
from prme.model.records import Event

_CURSOR_DESCRIPTION = (
    "Where the page starts: the next_operation_cursor of the page before; omit for the first"
)


class ProvenanceQuery(BaseModel):
    """GET /v1/nodes/{node_id}/provenance: which page of the operation history to read."""

    model_config = ConfigDict(extra="forbid")

    operation_cursor: str | None = Field(
        default=None,
        max_length=300,
        pattern=HISTORY_POSITION_PATTERN,
        description=_CURSOR_DESCRIPTION,
    )
    operation_limit: int = Field(
        default=DEFAULT_OPERATION_LIMIT,
        ge=1,
        le=MAX_OPERATION_LIMIT,
        description="Most operations in the page",
    )
    user_id: str | None = USER_ID


class NeighborhoodQuery(BaseModel):
    """GET /v1/nodes/{node_id}/neighborhood: how far to walk the owner's edges."""

    model_config = ConfigDict(extra="forbid")

    max_hops: int = Field(
        default=DEFAULT_MAX_HOPS,
        ge=1,
        le=MAX_HOPS,
        description="Most edges between the node and a neighbor",
    )
    user_id: str | None = USER_ID


class ChainQuery(BaseModel):
    """GET /v1/nodes/{node_id}/chain: which way to follow supersedence."""

    model_config = ConfigDict(extra="forbid")

    direction: ChainDirection = Field(
        default="forward",
        description="forward: the node, then what superseded it, up to the current one; "
        "backward: the node, then what it superseded, down to the oldest; both: oldest to "
        "newest with the node in between",
    )
    user_id: str | None = USER_ID


class EvidenceResponse(BaseModel):
    """One source event behind a node, without its words (read them with GET /v1/events/{id})."""

    event_id: str = Field(description="The source event's id")
    role: str = Field(description="Who the source came from: user, assistant, system or tool")
    session_id: str | None = Field(description="The source's session, when given")
    scope: str = Field(description="The source's visibility scope")
    event_time: datetime | None = Field(description="When it happened, when given")
    ingested_at: datetime = Field(description="When it was stored")
    content_sha256: str = Field(description="SHA-256 hex of the source's exact content")

    @classmethod
    def of(cls, event: Event) -> EvidenceResponse:
        return cls(
            event_id=event.id,
            role=event.role.value,
            session_id=event.session_id,
            scope=event.scope.value,
            event_time=event.event_time,
            ingested_at=event.ingested_at,
            content_sha256=event.content_sha256,
        )


class OperationResponse(BaseModel):
    """One journal record that operated on the node."""

    record_id: str = Field(description="The journal record's id")
    operation: str = Field(
        description="What was done, e.g. direct_store, extraction, node_promote, supersede"
    )
    subject_id: str = Field(description="The id the record is about (a node, event or proposal)")
    created_at: datetime = Field(description="When it was written")
    payload: dict[str, Any] = Field(description="The operation's recorded details")
    verified: bool = Field(
        description="True when the record passes its checksum; false flags a damaged or "
        "altered record, listed so that the history shows it is there"
    )

    @classmethod
    def of(cls, entry: OperationEntry) -> OperationResponse:
        record = entry.record
        return cls(
            record_id=record.id,
            operation=record.operation,
            subject_id=record.subject_id,
            created_at=record.created_at,
            payload=record.payload,
            verified=entry.verified,
        )


class NodeProvenanceResponse(BaseModel):
    """A node with its evidence and one page of its operation history, oldest first."""

    node: NodeResponse = Field(description="The node as it is now")
    evidence: list[EvidenceResponse] = Field(
        description="The stored source events behind it, in evidence order"
    )
    missing_evidence: list[str] = Field(description="Evidence ids whose source event was deleted")
    operations: list[OperationResponse] = Field(
        description="Journal records that operated on it (stores, extractions, lifecycle "
        "moves, reinforcements, supersedences, reviews, expiry); retrieval receipts are not "
        "operations"
    )
    next_operation_cursor: str | None = Field(
        description="Pass as operation_cursor for the next page; null on the last page"
    )

    @classmethod
    def of(cls, found: NodeProvenance) -> NodeProvenanceResponse:
        return cls(
            node=NodeResponse.of(found.node),
            evidence=[EvidenceResponse.of(e) for e in found.evidence],
            missing_evidence=list(found.missing_evidence),
            operations=[OperationResponse.of(o) for o in found.operations],
            next_operation_cursor=found.next_cursor,
        )


class NeighborResponse(BaseModel):
    """A node reached over the owner's edges."""

    node: NodeResponse = Field(description="The node reached")
    hops: int = Field(description="Edges on the shortest path from the start node")
    edge_types: list[str] = Field(description="Types of the edges that reached it at that distance")


class NodeNeighborhoodResponse(BaseModel):
    """The nodes within max_hops of a node, nearest first; the node itself is not listed."""

    node_id: str = Field(description="The start node")
    max_hops: int = Field(description="The distance walked")
    neighbors: list[NeighborResponse] = Field(description="The nodes reached, nearest first")
    node_limit: int = Field(
        default=MAX_NEIGHBORHOOD_NODES, description="Most neighbors one read returns"
    )
    truncated: bool = Field(description="True when more nodes were in reach than node_limit")

    @classmethod
    def of(cls, found: NodeNeighborhood) -> NodeNeighborhoodResponse:
        return cls(
            node_id=found.node_id,
            max_hops=found.max_hops,
            neighbors=[
                NeighborResponse(
                    node=NodeResponse.of(n.node), hops=n.hops, edge_types=list(n.edge_types)
                )
                for n in found.neighbors
            ],
            truncated=found.truncated,
        )


class NodeChainResponse(BaseModel):
    """A supersedence chain through a node, in the order the direction gives."""

    node_id: str = Field(description="The node the chain was read from")
    direction: ChainDirection = Field(description="forward, backward or both")
    nodes: list[NodeResponse] = Field(description="The chain's nodes, the start node included")
    node_limit: int = Field(default=MAX_CHAIN_NODES, description="Most nodes one read returns")
    truncated: bool = Field(description="True when the chain went on past node_limit")

    @classmethod
    def of(cls, found: NodeChain) -> NodeChainResponse:
        return cls(
            node_id=found.node_id,
            direction=found.direction,
            nodes=[NodeResponse.of(n) for n in found.nodes],
            truncated=found.truncated,
        )

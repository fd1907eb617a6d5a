"""The `contradicts` links of contested memories, read without any write machinery so
retrieval can say what each contested result contradicts."""

from __future__ import annotations

from collections.abc import Iterable

from prme.engine.deps import EngineDeps
from prme.model.enums import LifecycleState
from prme.model.records import MemoryEdge, MemoryNode, OwnerKey

CONTRADICTS_EDGE = "contradicts"


def linking_edges(edges: Iterable[MemoryEdge], node_id: str, other_id: str) -> list[MemoryEdge]:
    """The `contradicts` edges between two nodes, in either direction."""
    return [
        e
        for e in edges
        if e.edge_type == CONTRADICTS_EDGE
        and {e.source_node_id, e.target_node_id} == {node_id, other_id}
    ]


def contradicted_by(
    deps: EngineDeps, owner: OwnerKey, nodes: Iterable[MemoryNode]
) -> dict[str, str]:
    """For each contested node, the memory it contradicts (the newest link's other side).

    One edge read per contested node: few results are contested."""
    partners: dict[str, str] = {}
    for node in nodes:
        if node.lifecycle_state is not LifecycleState.CONTESTED:
            continue
        links = [
            e
            for e in deps.ledger.list_node_edges(owner, node.id)
            if e.edge_type == CONTRADICTS_EDGE
        ]
        if links:
            newest = max(links, key=lambda e: (e.created_at, e.id))
            partners[node.id] = (
                newest.target_node_id if newest.source_node_id == node.id else newest.source_node_id
            )
    return partners

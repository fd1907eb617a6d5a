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
    """For each contested node, the memory it contradicts: the newest link's other side among
    those still contested (a contradiction still open), else the newest link's.

    One edge read per contested node (few results are contested) and one read of the other
    sides."""
    linked: dict[str, list[str]] = {}
    for node in nodes:
        if node.lifecycle_state is not LifecycleState.CONTESTED:
            continue
        links = sorted(
            (
                e
                for e in deps.ledger.list_node_edges(owner, node.id)
                if e.edge_type == CONTRADICTS_EDGE
            ),
            key=lambda e: (e.created_at, e.id),
            reverse=True,
        )
        others = [
            e.target_node_id if e.source_node_id == node.id else e.source_node_id for e in links
        ]
        if others:
            linked[node.id] = others
    if not linked:
        return {}
    # A winner still contested by a third memory also links the loser it settled with.
    others_read = deps.ledger.get_nodes(owner, sorted({o for ids in linked.values() for o in ids}))
    open_sides = {
        i for i, n in others_read.items() if n.lifecycle_state is LifecycleState.CONTESTED
    }
    return {
        node_id: next((o for o in others if o in open_sides), others[0])
        for node_id, others in linked.items()
    }

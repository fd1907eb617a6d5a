"""Graph and provenance reads of one node: evidence and operation history, neighborhood over
the owner's edges, and the supersedence chain. All are owner-scoped reads that write nothing."""

from __future__ import annotations

from collections.abc import Callable

from prme.engine.deps import EngineDeps
from prme.engine.reads import get_node
from prme.errors import InvalidRequestError
from prme.model.graph import (
    MAX_CHAIN_NODES,
    MAX_HOPS,
    MAX_NEIGHBORHOOD_NODES,
    MAX_OPERATION_LIMIT,
    SUPERSEDES_EDGE,
    ChainDirection,
    NeighborNode,
    NodeChain,
    NodeNeighborhood,
    NodeProvenance,
    OperationEntry,
    direct_store_record_id,
    history_position,
    is_history_position,
    referenced_node_ids,
)
from prme.model.records import JournalRecord, MemoryEdge, MemoryNode, OwnerKey


def _intact(record: JournalRecord, owner: OwnerKey, node_id: str) -> bool:
    """Whether the record passes its checksum, sits in this owner's journal and names this
    node (a record swapped in under the reference of another names other nodes): a failing
    one is still listed (the history says it is there), flagged instead of trusted."""
    placed = record.tenant_id == owner.tenant_id and record.owner_id == owner.owner_id
    return placed and record.verify() and node_id in referenced_node_ids(record)


def get_node_provenance(
    deps: EngineDeps,
    owner: OwnerKey,
    node_id: str,
    *,
    operation_cursor: str | None,
    operation_limit: int,
) -> NodeProvenance:
    if not 1 <= operation_limit <= MAX_OPERATION_LIMIT:
        raise InvalidRequestError(
            f"operation_limit must be 1 to {MAX_OPERATION_LIMIT}", field=("operation_limit",)
        )
    if operation_cursor is not None and not is_history_position(operation_cursor):
        raise InvalidRequestError(
            "operation_cursor is not a cursor this read returned", field=("operation_cursor",)
        )
    node = get_node(deps, owner, node_id)
    refs = tuple(dict.fromkeys(node.evidence_refs))
    events = deps.ledger.get_events(owner, refs)
    page = deps.ledger.list_node_history(
        owner, node.id, after=operation_cursor, limit=operation_limit
    )
    records, next_cursor = list(page.records), page.next_position
    created = _creation_record(deps, owner, node, refs)
    if (
        created is not None
        and operation_cursor is None
        and created.id not in {r.id for r in records}
    ):
        # The creation record has no history reference (see direct_store_record_id); it
        # is the oldest record of the node, so it opens the first page.
        records.insert(0, created)
        if len(records) > operation_limit:
            del records[operation_limit:]
            last = records[-1]
            next_cursor = history_position(last.created_at, last.id)
    return NodeProvenance(
        node=node,
        evidence=tuple(events[ref] for ref in refs if ref in events),
        missing_evidence=tuple(ref for ref in refs if ref not in events),
        operations=tuple(OperationEntry(r, _intact(r, owner, node.id)) for r in records),
        next_cursor=next_cursor,
    )


def _creation_record(
    deps: EngineDeps, owner: OwnerKey, node: MemoryNode, evidence: tuple[str, ...]
) -> JournalRecord | None:
    """The direct store record that saved this node, read by its derived id."""
    for event_id in evidence[:1]:
        record = deps.ledger.get_journal(owner, direct_store_record_id(event_id))
        snapshot = record.payload.get("node") if record is not None else None
        if isinstance(snapshot, dict) and snapshot.get("id") == node.id:
            return record
    return None


def get_node_neighborhood(
    deps: EngineDeps, owner: OwnerKey, node_id: str, *, max_hops: int
) -> NodeNeighborhood:
    """Breadth first over the owner's edges in both directions; each node once, at its least
    hop count, with the types of the edges that reached it at that count. The start node is
    not among the neighbors."""
    if not 1 <= max_hops <= MAX_HOPS:
        raise InvalidRequestError(f"max_hops must be 1 to {MAX_HOPS}", field=("max_hops",))
    start = get_node(deps, owner, node_id)
    hops: dict[str, int] = {start.id: 0}
    reached_by: dict[str, dict[str, None]] = {}
    frontier = [start.id]
    truncated = False
    for hop in range(1, max_hops + 1):
        # One ledger read per hop, for the whole frontier.
        inner = set(frontier)
        found: list[str] = []
        for edge in deps.ledger.list_edges_touching(owner, frontier):
            ends = (edge.source_node_id, edge.target_node_id)
            for here, other in (ends, ends[::-1]):
                if here not in inner or hops.get(other, hop) < hop:
                    continue  # not from this hop, or reached earlier by a shorter path
                if other not in hops:
                    if len(hops) - 1 >= MAX_NEIGHBORHOOD_NODES:
                        truncated = True
                        continue
                    hops[other] = hop
                    found.append(other)
                reached_by.setdefault(other, {})[edge.edge_type] = None
        frontier = found
        if not frontier:
            break
    ordered = [n for n in hops if n != start.id]
    nodes = deps.ledger.get_nodes(owner, ordered)
    neighbors = tuple(
        NeighborNode(nodes[n], hops[n], tuple(sorted(reached_by[n]))) for n in ordered if n in nodes
    )
    return NodeNeighborhood(start.id, max_hops, neighbors, truncated)


def _walk(
    deps: EngineDeps,
    owner: OwnerKey,
    start: str,
    step: Callable[[str, MemoryEdge], str | None],
    budget: int,
) -> tuple[list[str], bool]:
    """Follow `supersedes` edges from `start` (not included) one node at a time, taking the
    oldest matching edge at each node; stops at a node seen before (a cycle) or at `budget`
    nodes, which it reports as truncated."""
    seen = {start}
    path: list[str] = []
    current = start
    while True:
        following = None
        for edge in deps.ledger.list_edges_touching(owner, [current]):  # oldest first
            if edge.edge_type == SUPERSEDES_EDGE:
                following = step(current, edge)
                if following is not None:
                    break
        if following is None or following in seen:
            return path, False
        if len(path) >= budget:
            return path, True
        seen.add(following)
        path.append(following)
        current = following


def _newer(current: str, edge: MemoryEdge) -> str | None:
    # Edge source = the newer node, target = the node it superseded.
    return edge.source_node_id if edge.target_node_id == current else None


def _older(current: str, edge: MemoryEdge) -> str | None:
    return edge.target_node_id if edge.source_node_id == current else None


def get_node_chain(
    deps: EngineDeps, owner: OwnerKey, node_id: str, *, direction: ChainDirection
) -> NodeChain:
    """forward: this node, what superseded it, ... to the current one. backward: this node,
    what it superseded, ... to the oldest. both: oldest to newest, this node in between."""
    start = get_node(deps, owner, node_id)
    budget = MAX_CHAIN_NODES - 1
    older: list[str] = []
    newer: list[str] = []
    truncated = False
    if direction in ("backward", "both"):
        older, truncated = _walk(deps, owner, start.id, _older, budget)
        budget -= len(older)
    if direction in ("forward", "both"):
        newer, cut = _walk(deps, owner, start.id, _newer, budget)
        truncated = truncated or cut
    # A node the backward walk met again forward (a cycle through the start) appears once.
    newer = [n for n in newer if n not in older]
    if direction == "forward":
        order = [start.id, *newer]
    elif direction == "backward":
        order = [start.id, *older]
    else:
        order = [*reversed(older), start.id, *newer]
    found = deps.ledger.get_nodes(owner, order)
    found[start.id] = start
    nodes: tuple[MemoryNode, ...] = tuple(found[n] for n in order if n in found)
    return NodeChain(start.id, direction, nodes, truncated)

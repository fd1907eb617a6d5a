"""Session context: the exchange around the best results, packed right after them.

An answer is often spread over a few turns of one exchange ("Did you go?" / "Yes, with
my sister, to the lake"), and the turn that completes it may share no words with the
question. When the results fill the token budget, the records said just before and after
each of the first `anchors` results in its session (up to `radius` on each side) follow
those results, ahead of the rest. Records that were not candidates are read from the
ledger and pass the request's filters like any other; the receipt names the result that
pulled each one in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prme.engine.deadlines import share_of_deadline
from prme.engine.deps import EngineDeps
from prme.errors import IndexUnavailableError
from prme.model.records import MemoryNode, OwnerKey
from prme.model.search import IndexFilter
from prme.retrieval.caps import Selection


@dataclass(frozen=True)
class SessionContext:
    """The reordered selection and, for every record it added or moved up, its anchor."""

    selection: Selection
    anchor_of: dict[str, str] = field(default_factory=dict)
    # Records read from the ledger because they were not candidates, by id.
    fetched: dict[str, MemoryNode] = field(default_factory=dict)


def expand_session_context(
    deps: EngineDeps,
    owner: OwnerKey,
    flt: IndexFilter,
    selection: Selection,
    *,
    anchors: int,
    radius: int,
) -> SessionContext:
    """Put the session neighbours of the first `anchors` selected records right after them.

    A neighbour already among the first `anchors` stays where it is; one ranked lower
    moves up; one the selection excluded (a cap, the semantic floor) stays out. When the
    index cannot answer, the selection is returned unchanged: context is an improvement,
    never a reason to fail a retrieval."""
    head = selection.selected[:anchors]
    lookups = [(n.session_id, n.effective_time, n.id) for n in head if n.session_id]
    if anchors <= 0 or radius <= 0 or not lookups:
        return SessionContext(selection)
    try:
        # At most half of what is left: the neighbours' reads and the receipt come after.
        with share_of_deadline(0.5):
            found = deps.index.session_neighbours(owner, lookups, radius)
    except IndexUnavailableError:
        return SessionContext(selection)
    placed = {n.id for n in head}
    wanted: list[tuple[str, str]] = []
    for (_, _, anchor_id), neighbour_ids in zip(lookups, found, strict=True):
        for node_id in neighbour_ids:
            if node_id not in placed and node_id not in selection.excluded:
                placed.add(node_id)
                wanted.append((node_id, anchor_id))
    known = {n.id: n for n in selection.selected}
    missing = [node_id for node_id, _ in wanted if node_id not in known]
    fetched = {
        node_id: node
        for node_id, node in (deps.ledger.get_nodes(owner, missing) if missing else {}).items()
        if flt.matches(node)
    }
    nodes = {**fetched, **known}
    added = [(nodes[node_id], anchor) for node_id, anchor in wanted if node_id in nodes]
    moved = {node.id for node, _ in added}
    order = [
        *head,
        *(node for node, _ in added),
        *(n for n in selection.selected[anchors:] if n.id not in moved),
    ]
    return SessionContext(
        selection=Selection(selected=order, excluded=dict(selection.excluded)),
        anchor_of={node.id: anchor for node, anchor in added},
        fetched={node_id: fetched[node_id] for node_id in moved if node_id in fetched},
    )

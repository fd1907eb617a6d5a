"""Managing an owner's memory: list nodes and events a page at a time, delete one memory, count.

Listings walk the owner's records in id order (the order both ledgers keep on their primary
key); filters are applied to each page read, and a call reads at most `SCAN_BUDGET` records
(and, for a text search, folds at most `TEXT_SCAN_CHARS` characters of content), so a rare
filter may return a short (even empty) page with a cursor to continue from.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

from prme.engine.aliases import proposal_records_naming
from prme.engine.deps import EngineDeps
from prme.engine.extraction import extraction_record_ids
from prme.engine.journal import read_journal
from prme.errors import ConflictError, CorruptRecordError, InvalidRequestError, NotFoundError
from prme.model.aliases import ALIAS_PROPOSAL_PREFIX
from prme.model.enums import NodeType
from prme.model.listings import (
    EVIDENCE_UNLINK_OPERATION,
    EVIDENCE_UNLINK_PREFIX,
    MEMORY_DELETION_OPERATION,
    MEMORY_DELETION_PREFIX,
    EventDeletion,
    EventFilter,
    EventPage,
    MemoryDeletion,
    NodeFilter,
    NodePage,
    OwnerStats,
)
from prme.model.records import Event, JournalRecord, MemoryEdge, MemoryNode, NodeChange, OwnerKey

DEFAULT_PAGE = 100
MAX_PAGE = 1000
# Records read per listing call whatever the filters: the cost of one call stays bounded.
SCAN_BUDGET = 5000
# Records asked of the ledger in one read at least (one DynamoDB Query page holds about this).
READ_CHUNK = 100
# Characters of content a text search folds and searches per call: 5,000 records of 100,000
# non-ASCII characters would take seconds; this many take tens of milliseconds at most.
TEXT_SCAN_CHARS = 4_000_000

_Record = TypeVar("_Record", Event, MemoryNode)


def _walk(
    read: Callable[[str | None, int], tuple[list[_Record], str | None]],
    keep: Callable[[_Record], bool],
    *,
    limit: int,
    after_id: str | None,
    searched: bool = False,
) -> tuple[list[_Record], str | None]:
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidRequestError(f"limit must be between 1 and {MAX_PAGE}")
    items: list[_Record] = []
    cursor, scanned, searched_chars = after_id, 0, 0
    while True:
        # At least READ_CHUNK records a read whatever the page still needs: a small page with a
        # rare filter would otherwise cost one ledger round trip per record examined.
        want = min(max(limit - len(items), READ_CHUNK), SCAN_BUDGET - scanned)
        records, last = read(cursor, want)
        scanned += want
        for position, record in enumerate(records):
            if keep(record):
                items.append(record)
            if searched:
                searched_chars += len(record.content)
            if len(items) >= limit or searched_chars >= TEXT_SCAN_CHARS:
                # The page ends here (full, or the search spent its budget): the next one
                # starts after this record, unless it was the owner's last.
                more = last is not None or position < len(records) - 1
                return items, record.id if more else None
        if last is None:
            return items, None
        cursor = last
        if scanned >= SCAN_BUDGET:
            return items, cursor


def list_nodes(
    deps: EngineDeps,
    owner: OwnerKey,
    node_filter: NodeFilter,
    *,
    limit: int = DEFAULT_PAGE,
    after_id: str | None = None,
) -> NodePage:
    def read(cursor: str | None, want: int) -> tuple[list[MemoryNode], str | None]:
        return deps.ledger.list_nodes_page(owner, after_id=cursor, limit=want)

    items, next_after = _walk(
        read,
        node_filter.matches,
        limit=limit,
        after_id=after_id,
        searched=node_filter.text is not None,
    )
    return NodePage(items=items, next_after_id=next_after)


def list_events(
    deps: EngineDeps,
    owner: OwnerKey,
    event_filter: EventFilter,
    *,
    limit: int = DEFAULT_PAGE,
    after_id: str | None = None,
) -> EventPage:
    def read(cursor: str | None, want: int) -> tuple[list[Event], str | None]:
        return deps.ledger.list_events_page(owner, after_id=cursor, limit=want)

    items, next_after = _walk(
        read,
        event_filter.matches,
        limit=limit,
        after_id=after_id,
        searched=event_filter.text is not None,
    )
    return EventPage(items=items, next_after_id=next_after)


def _deletion_of(record: JournalRecord) -> MemoryDeletion:
    return MemoryDeletion.model_validate(
        {**record.payload, "journal_id": record.id, "deleted_at": record.created_at}
    )


def delete_memory(deps: EngineDeps, owner: OwnerKey, event_id: str) -> MemoryDeletion:
    """Delete one source event, the nodes derived from it (those whose first evidence is the
    event), their edges and index documents, and the event's work items, with a journal record
    of ids and counts.

    The nodes' index documents go first (when that fails the call fails and nothing is
    deleted), then the ledger, in one transaction with the journal record: from then on no read
    returns the memory, and retrieval drops index hits the ledger no longer has. The journal
    record's nodes are removed from the index once more; a retry, finding the journal record
    instead of the event, does that and answers with the same record. A deleted (or foreign,
    or unknown) event never found by that path is NotFoundError.
    """
    try:
        found = deps.ledger.get_event(owner, event_id) is not None
    except CorruptRecordError:
        found = True  # an unreadable source is still the owner's to delete
    earlier = _deletion_record_ids(deps, owner, event_id)
    if not found:
        return _finish_deletion(deps, owner, earlier[-1] if earlier else None)
    # An import of an older export brings a deleted event back under its id; deleting it again
    # takes a record of its own (the first one's id is taken, and the journal only appends).
    record_id = MEMORY_DELETION_PREFIX + event_id
    if earlier:
        record_id += f":{len(earlier) + 1:06d}"
    backed = deps.ledger.list_event_nodes(owner, event_id)
    # A node whose first evidence is another event (it was reinforced by, or merged with, this
    # one) stays with its own source and only stops naming this one.
    nodes = [node for node in backed if node.evidence_refs[:1] == (event_id,)]
    unlinked = [node.id for node in backed if node.evidence_refs[:1] != (event_id,)]
    edges: dict[str, MemoryEdge] = {}
    for node in nodes:
        edges.update((edge.id, edge) for edge in deps.ledger.list_node_edges(owner, node.id))
    work = deps.ledger.list_event_work(owner, event_id)
    entities = {node.id for node in nodes if node.node_type is NodeType.ENTITY}
    proposals = proposal_records_naming(deps, owner, entities) if entities else []
    journal = JournalRecord.build(
        record_id=record_id,
        owner=owner,
        operation=MEMORY_DELETION_OPERATION,
        subject_id=event_id,
        created_at=deps.clock.now(),
        payload={
            "event_id": event_id,
            "deleted_node_ids": [node.id for node in nodes],
            "edges_removed": len(edges),
            "work_items_removed": len(work),
            "unlinked_node_ids": unlinked,
            "alias_proposals_removed": sum(
                1 for record_id in proposals if record_id.startswith(ALIAS_PROPOSAL_PREFIX)
            ),
        },
    )
    # The index documents go first: a ledger delete too large for one DynamoDB transaction
    # may fail after removing some nodes, and a retry no longer finds those to name them.
    deps.index.delete(owner, [node.id for node in nodes])
    # A concurrent delete of the same event may win: its record then says what was removed.
    # It may have committed between our two reads above (the event still found, its record
    # already listed), so our record id is one past it: finish with the newest record there is.
    try:
        deps.ledger.delete_event(
            EventDeletion(
                owner=owner,
                event_id=event_id,
                nodes=nodes,
                edges=list(edges.values()),
                work=work,
                journal=journal,
                removed_journal_ids=[*proposals, *extraction_record_ids(deps, owner, work)],
            )
        )
    except NotFoundError:
        winners = _deletion_record_ids(deps, owner, event_id)
        return _finish_deletion(deps, owner, winners[-1] if winners else None)
    return _finish_deletion(deps, owner, record_id)


def _deletion_record_ids(deps: EngineDeps, owner: OwnerKey, event_id: str) -> list[str]:
    """The ids of the event's deletion records, oldest first (the first one has no suffix)."""
    first = MEMORY_DELETION_PREFIX + event_id
    ids: list[str] = []
    after: str | None = None
    while True:
        page = deps.ledger.list_journal(owner, first, after_id=after, limit=READ_CHUNK)
        ids += [r.id for r in page if r.id == first or r.id.startswith(first + ":")]
        if len(page) < READ_CHUNK:
            return ids
        after = page[-1].id


def _finish_deletion(deps: EngineDeps, owner: OwnerKey, record_id: str | None) -> MemoryDeletion:
    record = None if record_id is None else read_journal(deps, owner, record_id)
    if record is None or record.operation != MEMORY_DELETION_OPERATION:
        raise NotFoundError("Event not found")
    deletion = _deletion_of(record)
    deps.index.delete(owner, deletion.deleted_node_ids)
    # The unlink records of a later deletion of the same event carry its record's suffix.
    suffix = record.id.removeprefix(MEMORY_DELETION_PREFIX + deletion.event_id)
    for node_id in deletion.unlinked_node_ids:
        _unlink_source(deps, owner, deletion.event_id, node_id, suffix)
    return deletion


_UNLINK_ATTEMPTS = 3


def _unlink_source(
    deps: EngineDeps, owner: OwnerKey, event_id: str, node_id: str, suffix: str
) -> None:
    """Drop a deleted source from the evidence of a node that keeps its own; a retried delete
    finds nothing left to do. The confidence a reinforcement added stays."""
    for _ in range(_UNLINK_ATTEMPTS):
        node = deps.ledger.get_node(owner, node_id)
        if node is None or event_id not in node.evidence_refs:
            return
        now = deps.clock.now()
        unlinked = node.model_copy(
            update={
                "evidence_refs": tuple(ref for ref in node.evidence_refs if ref != event_id),
                "updated_at": now,
            }
        )
        change = NodeChange(
            updates=((node, unlinked),),
            journal=JournalRecord.build(
                record_id=f"{EVIDENCE_UNLINK_PREFIX}{event_id}:{node_id}{suffix}",
                owner=owner,
                operation=EVIDENCE_UNLINK_OPERATION,
                subject_id=node_id,
                created_at=now,
                payload={"node_id": node_id, "deleted_event_id": event_id},
            ),
        )
        # A concurrent change of the node (or an earlier attempt's record): read it again.
        with contextlib.suppress(ConflictError):
            deps.ledger.commit_node_change(change)
            return


def get_stats(deps: EngineDeps, owner: OwnerKey) -> OwnerStats:
    counts = deps.ledger.count_nodes(owner)
    by_state: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    for (state, node_type), count in counts.items():
        by_state[state] += count
        by_type[node_type] += count
    return OwnerStats.model_validate(
        {
            "events": deps.ledger.count_events(owner),
            "nodes": sum(counts.values()),
            "nodes_by_lifecycle_state": dict(by_state),
            "nodes_by_type": dict(by_type),
            "pending_materializations": deps.ledger.count_pending_work(owner),
            "pending_extractions": deps.ledger.count_pending_work(owner, family="extract"),
        }
    )

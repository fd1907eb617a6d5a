"""Moving an owner's memory: export it a page at a time, import export records into an owner.

An export page is bounded in bytes (it is one HTTP response, and Lambda answers at most 6 MB);
its cursor says which kind of record comes next and after which id. An import batch is checked
whole before anything is written, then committed in ledger transactions that fit DynamoDB's
(100 actions, 4 MB), and its nodes are indexed again with the current embedder: vectors are
never exported. Records are identified by their ids within the owner, so importing a file twice
writes nothing the second time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeVar

from prme.engine.deps import EngineDeps
from prme.engine.indexing import write_index_documents
from prme.engine.materialize import index_work_item, materialize_nodes
from prme.engine.metering import meter_write
from prme.errors import (
    ConflictError,
    EmbeddingUnavailableError,
    IndexUnavailableError,
    InvalidRequestError,
    ValueBindingError,
)
from prme.model.portability import (
    EXPORT_FORMAT_VERSION,
    EXPORT_PAGE_BYTES,
    EXPORT_PAGE_RECORDS,
    IMPORT_BATCH_BYTES,
    ExportCounts,
    ExportHeader,
    ExportPage,
    ImportBatch,
    ImportedRecord,
    ImportReport,
    RecordError,
    owned_record,
    record_bytes,
    record_of,
)
from prme.model.records import (
    VALUE_BINDINGS_METADATA_KEY,
    Event,
    IngestCommit,
    JournalRecord,
    MemoryEdge,
    MemoryNode,
    NodeChange,
    OwnerKey,
    WorkItem,
)
from prme.retrieval.value_bindings import bindings_from_metadata

IMPORT_OPERATION = "owner_import"
# The usage kind of the sources an import writes: the operation's name.
IMPORT_RECORDS_KIND = "import_records"
IMPORT_JOURNAL_PREFIX = "owner-import:"
_Kind = Literal["event", "node", "edge"]
_KINDS: tuple[_Kind, ...] = ("event", "node", "edge")
# Records asked of the ledger in one read while a page fills.
_READ_CHUNK = 200
# One ledger commit of an import: below DynamoDB's 100 actions and 4 MB per transaction.
_COMMIT_ACTIONS = 90
_COMMIT_BYTES = 3_000_000
# Neighbours on each side looked up at once to find the records said after an imported one,
# and how many lookups a batch makes at most (records said at one time can be many).
_SUCCESSOR_RADIUS = 8
_SUCCESSOR_ROUNDS = 20

_Record = TypeVar("_Record", Event, MemoryNode, MemoryEdge)
_Item = TypeVar("_Item", bound=ImportedRecord)


def _pages_of(deps: EngineDeps, kind: _Kind) -> Any:
    ledger = deps.ledger
    return {
        "event": ledger.list_events_page,
        "node": ledger.list_nodes_page,
        "edge": ledger.list_edges_page,
    }[kind]


def _parse_cursor(cursor: str | None) -> tuple[_Kind, str | None]:
    if cursor is None:
        return "event", None
    kind, separator, after = cursor.partition(":")
    if not separator or kind not in _KINDS or len(after) > 512:
        raise InvalidRequestError("cursor is not one an export page returned", field=("cursor",))
    return kind, after or None


def _count_edges(deps: EngineDeps, owner: OwnerKey) -> int:
    count, after = 0, None
    while True:
        edges, after = deps.ledger.list_edges_page(owner, after_id=after, limit=_READ_CHUNK)
        count += len(edges)
        if after is None:
            return count


def _header(deps: EngineDeps, owner: OwnerKey) -> ExportHeader:
    counts = ExportCounts(
        events=deps.ledger.count_events(owner),
        nodes=sum(deps.ledger.count_nodes(owner).values()),
        edges=_count_edges(deps, owner),
    )
    return ExportHeader(exported_at=deps.clock.now(), counts=counts)


def export_owner(deps: EngineDeps, owner: OwnerKey, cursor: str | None = None) -> ExportPage:
    """The next page of the owner's export: events, then nodes, then edges, each in id order.

    A page holds at most `EXPORT_PAGE_RECORDS` records and `EXPORT_PAGE_BYTES` bytes of them
    (at least one record whatever its size). Unreadable (quarantined) records are left out,
    as every listing leaves them out."""
    kind, after = _parse_cursor(cursor)
    header = _header(deps, owner) if cursor is None else None
    records: list[dict[str, Any]] = []
    size = 0
    while True:
        want = min(_READ_CHUNK, EXPORT_PAGE_RECORDS - len(records))
        read: Callable[..., tuple[Sequence[ImportedRecord], str | None]] = _pages_of(deps, kind)
        items, last = read(owner, after_id=after, limit=want)
        for position, item in enumerate(items):
            line = record_of(item)
            weight = record_bytes(line)
            if records and size + weight > EXPORT_PAGE_BYTES:
                return ExportPage(header=header, records=records, next_cursor=_cursor(kind, after))
            records.append(line)
            size += weight
            after = item.id
            if len(records) >= EXPORT_PAGE_RECORDS:
                more = last is not None or position < len(items) - 1
                next_kind = kind if more else _next_kind(kind)
                if next_kind is None:
                    return ExportPage(header=header, records=records, next_cursor=None)
                resume = _cursor(kind, after) if more else _cursor(next_kind, None)
                return ExportPage(header=header, records=records, next_cursor=resume)
        if last is not None:
            after = last
            continue
        following = _next_kind(kind)
        if following is None:
            return ExportPage(header=header, records=records, next_cursor=None)
        kind, after = following, None


def _cursor(kind: _Kind, after: str | None) -> str:
    return f"{kind}:{after or ''}"


def _next_kind(kind: _Kind) -> _Kind | None:
    position = _KINDS.index(kind)
    return _KINDS[position + 1] if position + 1 < len(_KINDS) else None


@dataclass
class _Checked:
    """A batch read and checked: what is new, and how many records the owner already had."""

    events: list[Event] = field(default_factory=list)
    nodes: list[MemoryNode] = field(default_factory=list)
    edges: list[MemoryEdge] = field(default_factory=list)
    skipped: int = 0


def _line_error(line: int, index: int, problem: str) -> InvalidRequestError:
    return InvalidRequestError(f"line {line}: {problem}", field=("records", index))


def _read_batch(batch: ImportBatch, owner: OwnerKey) -> list[tuple[int, int, ImportedRecord]]:
    """(line, index, record) of every record, or the first problem as a 422 naming its line."""
    if batch.version != EXPORT_FORMAT_VERSION:
        raise InvalidRequestError(
            f"export format version {batch.version} is not supported (this PRME reads version "
            f"{EXPORT_FORMAT_VERSION})",
            field=("version",),
        )
    read: list[tuple[int, int, ImportedRecord]] = []
    seen: dict[tuple[str, str], int] = {}
    size = 0
    for index, value in enumerate(batch.records):
        line = batch.first_line + index
        try:
            record = owned_record(value, owner)
        except RecordError as problem:
            raise _line_error(line, index, str(problem)) from None
        size += record_bytes(value)
        if size > IMPORT_BATCH_BYTES:
            raise _line_error(
                line, index, f"the batch passes {IMPORT_BATCH_BYTES} bytes; send fewer records"
            )
        kind = type(record).__name__
        earlier = seen.setdefault((kind, record.id), line)
        if earlier != line:
            raise _line_error(line, index, f"repeats the id of line {earlier}")
        if isinstance(record, MemoryNode):
            try:
                bindings = bindings_from_metadata(record.metadata.get(VALUE_BINDINGS_METADATA_KEY))
            except ValueBindingError as exc:
                raise _line_error(line, index, exc.detail) from None
            # As a store admits them: a bound value is one the memory's own text shows.
            for number, binding in enumerate(bindings):
                if binding.presentation not in record.content:
                    raise _line_error(
                        line,
                        index,
                        f"value binding {number} (reference {binding.reference!r}): presentation "
                        "does not occur verbatim in the node's content",
                    )
        read.append((line, index, record))
    return read


def _check_batch(deps: EngineDeps, owner: OwnerKey, batch: ImportBatch) -> _Checked:
    read = _read_batch(batch, owner)

    def of_type(kind: type[_Record]) -> list[tuple[int, int, _Record]]:
        return [(line, i, r) for line, i, r in read if isinstance(r, kind)]

    events, nodes, edges = of_type(Event), of_type(MemoryNode), of_type(MemoryEdge)
    checked = _Checked()
    batch_events = {e.id for _, _, e in events}
    # A node's source (its first evidence) must exist; a later reinforcing event may have
    # been deleted since, and the exporting owner keeps the node all the same.
    sources = {n.evidence_refs[0] for _, _, n in nodes if n.evidence_refs}
    stored_events = deps.ledger.get_events(owner, sorted(sources | batch_events))
    for line, _, event in events:
        stored = stored_events.get(event.id)
        if stored is not None and stored.content_sha256 != event.content_sha256:
            raise ConflictError(f"line {line}: the owner has event {event.id} with other content")
        _keep(checked, checked.events, event, new=stored is None)
    batch_nodes = {n.id for _, _, n in nodes}
    endpoints = {i for _, _, e in edges for i in (e.source_node_id, e.target_node_id)}
    stored_nodes = deps.ledger.get_nodes(owner, sorted(endpoints | batch_nodes))
    for line, index, node in nodes:
        source = node.evidence_refs[:1]
        if source and source[0] not in batch_events and source[0] not in stored_events:
            raise _line_error(line, index, f"names event {source[0]}, which is not imported")
        _keep(checked, checked.nodes, node, new=node.id not in stored_nodes)
    known_edges: dict[str, set[str]] = {}
    for line, index, edge in edges:
        for end in (edge.source_node_id, edge.target_node_id):
            if end not in batch_nodes and end not in stored_nodes:
                raise _line_error(line, index, f"names node {end}, which is not imported")
        source_id = edge.source_node_id
        if source_id in stored_nodes and source_id not in known_edges:
            # Only an edge from a node the owner already had can exist already.
            known_edges[source_id] = {e.id for e in deps.ledger.list_node_edges(owner, source_id)}
        _keep(checked, checked.edges, edge, new=edge.id not in known_edges.get(source_id, ()))
    return checked


def _keep(checked: _Checked, new_records: list[_Record], record: _Record, *, new: bool) -> None:
    if new:
        new_records.append(record)
    else:
        checked.skipped += 1


def _journal(deps: EngineDeps, owner: OwnerKey, payload: dict[str, Any]) -> JournalRecord:
    record_id = IMPORT_JOURNAL_PREFIX + deps.ids()
    return JournalRecord.build(
        record_id=record_id,
        owner=owner,
        operation=IMPORT_OPERATION,
        subject_id=record_id,
        created_at=deps.clock.now(),
        payload=payload,
    )


def _chunks(records: Sequence[_Item], cost: Callable[[_Item], int]) -> list[list[_Item]]:
    """Consecutive runs that each fit one ledger transaction (actions and bytes)."""
    runs: list[list[_Item]] = []
    actions = size = 0
    for record in records:
        weight = record_bytes(record_of(record)) + 1024
        if runs and actions + cost(record) <= _COMMIT_ACTIONS and size + weight <= _COMMIT_BYTES:
            runs[-1].append(record)
        else:
            runs.append([record])
            actions = size = 0
        actions += cost(record)
        size += weight
    return runs


def _node_actions(record: MemoryNode | MemoryEdge) -> int:
    if isinstance(record, MemoryEdge):
        return 1
    # The node, one link per source event, and its index work item.
    return 2 + len(set(record.evidence_refs))


def import_records(deps: EngineDeps, owner: OwnerKey, batch: ImportBatch) -> ImportReport:
    """Write a batch of export records under `owner`, then index its nodes.

    The whole batch is checked first (a bad record is a 422 naming its line, and nothing is
    written): each record must be valid, unique in the batch, and a node's events and an edge's
    nodes must be in the batch or already the owner's. Records whose id the owner already has
    are skipped. Events go first, then nodes with their index work and edges, in transactions
    of at most `_COMMIT_ACTIONS` items; a failure between two of them leaves the earlier ones
    written, and sending the batch again completes it."""
    checked = _check_batch(deps, owner, batch)
    for run in _chunks(checked.events, lambda _: 1):
        deps.ledger.commit_ingest(
            IngestCommit(
                events=tuple(run),
                work=(),
                journal=_journal(deps, owner, {"event_ids": [e.id for e in run]}),
            )
        )
        # Under the run's first event: sending the file again skips these events, and a run
        # cut short and sent again starts at another event, so no source is metered twice.
        meter_write(deps, IMPORT_RECORDS_KIND, owner, run[0].id, [e.content for e in run])
    work: list[tuple[WorkItem, MemoryNode]] = []
    linked: list[MemoryNode | MemoryEdge] = [*checked.nodes, *checked.edges]
    for group in _chunks(linked, _node_actions):
        nodes = [r for r in group if isinstance(r, MemoryNode)]
        edges = [r for r in group if isinstance(r, MemoryEdge)]
        items = [(index_work_item(deps, node), node) for node in nodes]
        payload = {"node_ids": [n.id for n in nodes], "edge_ids": [e.id for e in edges]}
        deps.ledger.commit_node_change(
            NodeChange(
                updates=(),
                journal=_journal(deps, owner, payload),
                edges=tuple(edges),
                work=tuple(item for item, _ in items),
                new_nodes=tuple(nodes),
            )
        )
        work += items
    # Oldest first, as a reindex goes: a record's session predecessor is then indexed first.
    work.sort(key=lambda pair: (pair[1].effective_time, pair[1].id))
    outcome = materialize_nodes(deps, work)
    if outcome.deferred == 0 and work:
        _refresh_successors(deps, owner, [node for _, node in work])
    return ImportReport(
        events=len(checked.events),
        nodes=len(checked.nodes),
        edges=len(checked.edges),
        skipped=checked.skipped,
        pending=outcome.deferred + outcome.failed,
    )


def _refresh_successors(deps: EngineDeps, owner: OwnerKey, nodes: Sequence[MemoryNode]) -> None:
    """Index again the records said just after the imported ones in their sessions.

    A record's vector mixes in the record said before it in its session. One indexed before its
    predecessor arrived (an earlier batch, since a file is in id order, not time order) was
    mixed with an older record or none; indexing it again now gives the vector the same records
    stored in time order get. Best effort: when the index or the embedder fails here, the
    imported records are searchable all the same, and `prme reindex` redoes the vectors."""
    if deps.config.vector_session_context <= 0:
        return
    imported = {n.id for n in nodes}
    try:
        later = _successors(deps, owner, [n for n in nodes if n.session_id is not None])
        ordered = sorted(
            (n for n in later.values() if n.id not in imported),
            key=lambda n: (n.effective_time, n.id),
        )
        write_index_documents(deps, ordered)
    except (EmbeddingUnavailableError, IndexUnavailableError):
        return


@dataclass
class _Walk:
    """The search for one record's successors: every record of its session at the first
    effective time after its own (each of them has it as predecessor, or a later import)."""

    session: str
    own_time: datetime
    cursor: tuple[datetime, str]
    first_time: datetime | None = None


def _successors(
    deps: EngineDeps, owner: OwnerKey, nodes: Sequence[MemoryNode]
) -> dict[str, MemoryNode]:
    walks = [_Walk(n.session_id or "", n.effective_time, (n.effective_time, n.id)) for n in nodes]
    found: dict[str, MemoryNode] = {}
    for _ in range(_SUCCESSOR_ROUNDS):
        if not walks:
            break
        anchors = [(w.session, w.cursor[0], w.cursor[1]) for w in walks]
        groups = deps.index.session_neighbours(owner, anchors, _SUCCESSOR_RADIUS)
        stored = deps.ledger.get_nodes(owner, sorted({i for g in groups for i in g}))
        going: list[_Walk] = []
        for walk, group in zip(walks, groups, strict=True):
            after = sorted(
                (
                    node
                    for i in group
                    if (node := stored.get(i)) is not None
                    and node.session_id == walk.session
                    and (node.effective_time, node.id) > walk.cursor
                ),
                key=lambda n: (n.effective_time, n.id),
            )
            if _step(walk, after, found) and len(after) >= _SUCCESSOR_RADIUS:
                walk.cursor = (after[-1].effective_time, after[-1].id)
                going.append(walk)
        walks = going
    return found


def _step(walk: _Walk, after: Sequence[MemoryNode], found: dict[str, MemoryNode]) -> bool:
    """Keep the successors among `after` (in order); whether more may follow them."""
    for node in after:
        if node.effective_time <= walk.own_time:
            continue  # said at the same time: not after it
        if walk.first_time is None:
            walk.first_time = node.effective_time
        if node.effective_time != walk.first_time:
            return False
        found[node.id] = node
    return True

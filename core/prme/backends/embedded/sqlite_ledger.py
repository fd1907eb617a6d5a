"""`SqliteLedger`: events, nodes, journal, work items and API keys in one SQLite file.

Every public write is a single transaction; records are stored as their JSON form beside
the columns that reads select by.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from prme.backends.commit_rule import applied_once
from prme.backends.embedded.sqlite import Synchronous, connect
from prme.backends.stored_records import (
    QUARANTINED_WORK_STATUS,
    load_journal_page,
    load_readable,
    load_record,
    log_quarantined,
    split_readable,
)
from prme.errors import (
    ConflictError,
    CorruptRecordError,
    NotFoundError,
    StorageUnavailableError,
)
from prme.model.enums import LifecycleState, NodeType, WorkFamily, WorkStatus
from prme.model.erasure import OwnerErasure, journal_count_field
from prme.model.graph import NodeHistoryPage, history_position, history_reference_ids
from prme.model.listings import EventDeletion
from prme.model.receipt_listing import ReceiptSummaryPage, RetrievalSummary, receipt_position
from prme.model.records import (
    Credential,
    Event,
    IdempotencyRecord,
    IngestCommit,
    JournalRecord,
    MemoryEdge,
    MemoryNode,
    NodeChange,
    OwnerKey,
    StoreCommit,
    WorkItem,
)
from prme.retrieval.receipt_summary import summarize_receipt
from prme.retrieval.receipts import RECEIPT_OPERATION

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (tenant, owner, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS nodes (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (tenant, owner, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS node_evidence (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, event_id TEXT NOT NULL, node_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant, owner, event_id, node_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, id TEXT NOT NULL, operation TEXT NOT NULL,
    subject_id TEXT NOT NULL, created_at TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (tenant, owner, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS work (
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, owner TEXT NOT NULL, event_id TEXT NOT NULL,
    status TEXT NOT NULL, created_at TEXT NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS work_by_status ON work (status, created_at, id);
CREATE INDEX IF NOT EXISTS work_by_owner_status ON work (tenant, owner, status, created_at, id);
CREATE INDEX IF NOT EXISTS work_by_event ON work (tenant, owner, event_id);
CREATE TABLE IF NOT EXISTS idempotency_keys (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, key TEXT NOT NULL, operation TEXT NOT NULL,
    body TEXT NOT NULL, PRIMARY KEY (tenant, owner, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS node_expiry (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, node_id TEXT NOT NULL, expires_at REAL NOT NULL,
    PRIMARY KEY (tenant, owner, node_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS node_expiry_by_time ON node_expiry (expires_at);
CREATE INDEX IF NOT EXISTS nodes_by_assertion ON nodes (
    tenant, owner,
    CASE WHEN json_valid(body)
    THEN json_extract(body, '$.metadata.prme_extraction_v1.assertion_key') END,
    CASE WHEN json_valid(body) THEN json_extract(body, '$.created_at') END);
CREATE TABLE IF NOT EXISTS edges (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, id TEXT NOT NULL, source TEXT NOT NULL,
    target TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (tenant, owner, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_by_source ON edges (tenant, owner, source);
CREATE INDEX IF NOT EXISTS edges_by_target ON edges (tenant, owner, target);
CREATE TABLE IF NOT EXISTS credentials (
    key_id TEXT PRIMARY KEY, key_hash TEXT NOT NULL UNIQUE, tenant TEXT NOT NULL,
    created_at TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS journal_nodes (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, node_id TEXT NOT NULL, position TEXT NOT NULL,
    journal_id TEXT NOT NULL,
    PRIMARY KEY (tenant, owner, node_id, position)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS journal_nodes_by_record ON journal_nodes (tenant, owner, journal_id);
CREATE INDEX IF NOT EXISTS receipts_by_time ON journal (tenant, owner, created_at, id)
    WHERE operation = 'retrieval_receipt';
CREATE INDEX IF NOT EXISTS journal_by_subject ON journal (tenant, owner, subject_id, id);
CREATE TABLE IF NOT EXISTS erasures (
    tenant TEXT NOT NULL, erasure_id TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (tenant, erasure_id)) WITHOUT ROWID;
"""


# The owner's tables an erasure empties, with the count each adds to, and each table's id
# column (the journal is emptied apart: its records are counted by operation).
_ERASED_TABLES = (
    ("events", "events"),
    ("nodes", "nodes"),
    ("node_evidence", "node_links"),
    ("node_expiry", "node_links"),
    ("edges", "edges"),
    ("work", "work_items"),
    ("idempotency_keys", "idempotency_records"),
    ("journal_nodes", "node_links"),
)
_ERASED_KEY = {
    "events": "id",
    "nodes": "id",
    "node_evidence": "event_id, node_id",
    "node_expiry": "node_id",
    "edges": "id",
    "work": "id",
    "idempotency_keys": "key",
    "journal_nodes": "node_id, position",
}


def _status_column(status: WorkStatus, family: WorkFamily) -> str:
    """The queried status: extraction work is kept apart so materialization never sees it."""
    return status.value if family == "materialize" else f"{status.value}:{family}"


_PARSED_NODE_CACHE = 10_000
# Sorts after every stored time: the open upper end of a receipt listing.
_HIGHEST_TEXT = "\U0010ffff"


def _stored_time(at: datetime) -> str:
    """A time as the journal's created_at column holds the engine clock's UTC times."""
    return at.astimezone(UTC).isoformat()


class SqliteLedger:
    """Implements the `Ledger` and `CredentialStore` ports."""

    def __init__(self, path: Path, *, synchronous: Synchronous = "normal") -> None:
        self._conn = connect(path, synchronous)
        self._lock = threading.RLock()
        # Stored node JSON -> the parsed (frozen) node. Retrieval reads the same few hundred
        # nodes again and again; equal bytes are the same node version, so a hit is exact.
        self._parsed_nodes: dict[str, MemoryNode] = {}
        with self._lock:
            had_history = self._has_table("journal_nodes")
            self._conn.executescript(_SCHEMA)
            self._migrate_idempotency()
            if not had_history:
                self._index_older_journal()

    def _has_table(self, name: str) -> bool:
        found = "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?"
        return bool(self._conn.execute(found, (name,)).fetchall())

    def _index_older_journal(self) -> None:
        """Save the per-node references of records written before they were kept, once, when
        a ledger of an older version first opens (an unreadable record names no node)."""
        with self._transaction() as tx:
            rows = tx.execute("SELECT body FROM journal WHERE operation != ?", (RECEIPT_OPERATION,))
            for (body,) in rows.fetchall():
                try:
                    record = JournalRecord.model_validate_json(body)
                except ValueError:
                    continue
                self._insert_history(tx, record)

    def _migrate_idempotency(self) -> None:
        """Move records of the older layout, where a key was unique per operation only.

        Where one key was used by two operations, the row of the operation that sorts first
        is kept: a retry of the other then answers 409 instead of writing a second copy.
        """
        legacy = "SELECT 1 FROM sqlite_master WHERE type='table' AND name='idempotency'"
        if not self._conn.execute(legacy).fetchall():
            return
        with self._transaction() as tx:
            if not tx.execute(legacy).fetchall():
                return  # another process opening the same directory moved them first
            tx.execute(
                "INSERT OR IGNORE INTO idempotency_keys (tenant, owner, key, operation, body) "
                "SELECT tenant, owner, key, operation, body FROM idempotency "
                "ORDER BY tenant, owner, key, operation"
            )
            tx.execute("DROP TABLE idempotency")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                yield self._conn
                self._conn.execute("COMMIT")
            except sqlite3.IntegrityError as exc:
                self._conn.execute("ROLLBACK")
                raise ConflictError("record already exists") from exc
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise StorageUnavailableError() from exc
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def _query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[str, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StorageUnavailableError() from exc

    # -- Ledger ------------------------------------------------------------------------

    def commit_store(self, commit: StoreCommit) -> None:
        with applied_once(self, commit.journal):
            e, n, j, w = commit.event, commit.node, commit.journal, commit.work
            with self._transaction() as tx:
                if commit.idempotency is not None:
                    self._insert_idempotency(tx, commit.idempotency)
                tx.execute(
                    "INSERT INTO events VALUES (?, ?, ?, ?)",
                    (e.tenant_id, e.owner_id, e.id, e.model_dump_json()),
                )
                self._insert_node(tx, n)
                self._insert_journal(tx, j)
                self._insert_work(tx, [w, *commit.extra_work])

    def commit_ingest(self, commit: IngestCommit) -> None:
        with applied_once(self, commit.journal), self._transaction() as tx:
            if commit.idempotency is not None:
                self._insert_idempotency(tx, commit.idempotency)
            tx.executemany(
                "INSERT INTO events VALUES (?, ?, ?, ?)",
                [(e.tenant_id, e.owner_id, e.id, e.model_dump_json()) for e in commit.events],
            )
            self._insert_work(tx, commit.work)
            self._insert_journal(tx, commit.journal)

    def commit_materialization(self, node: MemoryNode, work: WorkItem) -> None:
        with self._transaction() as tx:
            self._insert_node(tx, node)
            # No work row means its event was deleted while the node was built: the node
            # must not come back (the DynamoDB update has the same condition).
            if self._update_work(tx, work) == 0:
                raise ConflictError("work item no longer exists")

    def commit_node_change(self, change: NodeChange) -> None:
        with applied_once(self, change.journal), self._transaction() as tx:
            for previous, new in change.updates:
                changed = tx.execute(
                    "UPDATE nodes SET body=? WHERE tenant=? AND owner=? AND id=? AND body=?",
                    (
                        new.model_dump_json(),
                        new.tenant_id,
                        new.owner_id,
                        new.id,
                        previous.model_dump_json(),
                    ),
                ).rowcount
                if not changed:
                    raise sqlite3.IntegrityError("node changed since it was read")
                self._relink_evidence(tx, previous, new)
                if new.lifecycle_state is LifecycleState.ARCHIVED:
                    tx.execute(
                        "DELETE FROM node_expiry WHERE tenant=? AND owner=? AND node_id=?",
                        (new.tenant_id, new.owner_id, new.id),
                    )
            if change.idempotency is not None:
                self._insert_idempotency(tx, change.idempotency)
            tx.executemany(
                "INSERT INTO edges VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        e.tenant_id,
                        e.owner_id,
                        e.id,
                        e.source_node_id,
                        e.target_node_id,
                        e.model_dump_json(),
                    )
                    for e in change.edges
                ],
            )
            self._insert_journal(tx, change.journal)
            self._insert_work(tx, change.work)
            for node in change.new_nodes:
                self._insert_node(tx, node)
            for item in change.work_updates:
                # As for a materialization: work closed here must still exist.
                if self._update_work(tx, item) == 0:
                    raise ConflictError("work item no longer exists")

    @staticmethod
    def _relink_evidence(tx: sqlite3.Connection, previous: MemoryNode, new: MemoryNode) -> None:
        """Keep the node's evidence links equal to its evidence refs (a reinforcement adds one,
        a deleted source's unlinking removes one), so a source finds every node it backs."""
        owner = (new.tenant_id, new.owner_id)
        tx.executemany(
            "INSERT OR IGNORE INTO node_evidence VALUES (?, ?, ?, ?, ?)",
            [
                (*owner, ref, new.id, new.created_at.isoformat())
                for ref in dict.fromkeys(new.evidence_refs)
                if ref not in previous.evidence_refs
            ],
        )
        tx.executemany(
            "DELETE FROM node_evidence WHERE tenant=? AND owner=? AND event_id=? AND node_id=?",
            [
                (*owner, ref, new.id)
                for ref in dict.fromkeys(previous.evidence_refs)
                if ref not in new.evidence_refs
            ],
        )

    def list_expired_nodes(self, at: datetime, limit: int) -> list[MemoryNode]:
        while True:
            rows = self._query(
                "SELECT n.id, n.body, n.tenant, n.owner FROM node_expiry x JOIN nodes n "
                "ON n.tenant=x.tenant AND n.owner=x.owner AND n.id=x.node_id "
                "WHERE x.expires_at <= ? ORDER BY x.expires_at, x.node_id LIMIT ?",
                (at.timestamp(), limit),
            )
            nodes, unreadable = split_readable(MemoryNode, "node", rows)
            if not unreadable:
                return nodes
            # Off the expiry list, so it cannot hold up (by its age) the nodes behind it;
            # each round takes at least one off, so the batch fills with readable nodes.
            bad = set(unreadable)
            with self._transaction() as tx:
                tx.executemany(
                    "DELETE FROM node_expiry WHERE tenant=? AND owner=? AND node_id=?",
                    [
                        (tenant, owner, node_id)
                        for node_id, _, tenant, owner in rows
                        if node_id in bad
                    ],
                )

    def delete_expired_receipts(self, at: datetime, *, saved_before: datetime, limit: int) -> int:
        if limit <= 0:
            return 0
        # The expiry is read from the body: CASE guards json_extract from a damaged body (it
        # raises on malformed JSON), so one bad record cannot stop the sweep; julianday
        # compares instants whatever the offset notation.
        expiry = "julianday(CASE WHEN json_valid(body) THEN json_extract(body, '$.expires_at') END)"
        with self._transaction() as tx:
            rows = tx.execute(
                f"SELECT tenant, owner, id FROM journal WHERE operation = ? AND ("  # noqa: S608
                f"{expiry} <= julianday(?) "
                f"OR ({expiry} IS NULL AND julianday(created_at) <= julianday(?))) LIMIT ?",
                (RECEIPT_OPERATION, at.isoformat(), saved_before.isoformat(), limit),
            ).fetchall()
            tx.executemany("DELETE FROM journal WHERE tenant=? AND owner=? AND id=?", rows)
        return len(rows)

    def archive_node(self, node: MemoryNode, journal: JournalRecord, work: WorkItem) -> None:
        with self._transaction() as tx:
            # Leaving the expiry list is the guard: a node is archived by one pass only.
            gone = tx.execute(
                "DELETE FROM node_expiry WHERE tenant=? AND owner=? AND node_id=?",
                (node.tenant_id, node.owner_id, node.id),
            ).rowcount
            if not gone:
                raise sqlite3.IntegrityError("node already archived")
            tx.execute(
                "UPDATE nodes SET body=? WHERE tenant=? AND owner=? AND id=?",
                (node.model_dump_json(), node.tenant_id, node.owner_id, node.id),
            )
            self._insert_journal(tx, journal)
            self._insert_work(tx, [work])

    @staticmethod
    def _insert_node(tx: sqlite3.Connection, n: MemoryNode) -> None:
        if n.expires_at is not None:
            tx.execute(
                "INSERT INTO node_expiry VALUES (?, ?, ?, ?)",
                (n.tenant_id, n.owner_id, n.id, n.expires_at.timestamp()),
            )
        tx.execute(
            "INSERT INTO nodes VALUES (?, ?, ?, ?)",
            (n.tenant_id, n.owner_id, n.id, n.model_dump_json()),
        )
        tx.executemany(
            "INSERT INTO node_evidence VALUES (?, ?, ?, ?, ?)",
            [
                (n.tenant_id, n.owner_id, ev, n.id, n.created_at.isoformat())
                for ev in n.evidence_refs
            ],
        )

    @staticmethod
    def _insert_work(tx: sqlite3.Connection, items: Sequence[WorkItem]) -> None:
        tx.executemany(
            "INSERT INTO work VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    w.id,
                    w.tenant_id,
                    w.owner_id,
                    w.event_id,
                    _status_column(w.status, w.kind.family),
                    w.created_at.isoformat(),
                    w.model_dump_json(),
                )
                for w in items
            ],
        )

    @staticmethod
    def _update_work(tx: sqlite3.Connection, item: WorkItem) -> int:
        """How many rows changed: 0 when the work item is gone."""
        cursor = tx.execute(
            "UPDATE work SET status=?, body=? WHERE id=? AND tenant=? AND owner=?",
            (
                _status_column(item.status, item.kind.family),
                item.model_dump_json(),
                item.id,
                item.tenant_id,
                item.owner_id,
            ),
        )
        return cursor.rowcount

    @staticmethod
    def _insert_idempotency(tx: sqlite3.Connection, i: IdempotencyRecord) -> None:
        tx.execute(
            "INSERT INTO idempotency_keys VALUES (?, ?, ?, ?, ?)",
            (i.tenant_id, i.owner_id, i.key, i.operation, i.model_dump_json()),
        )

    @classmethod
    def _insert_journal(cls, tx: sqlite3.Connection, j: JournalRecord) -> None:
        tx.execute(
            "INSERT INTO journal VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                j.tenant_id,
                j.owner_id,
                j.id,
                j.operation,
                j.subject_id,
                j.created_at.isoformat(),
                j.model_dump_json(),
            ),
        )
        cls._insert_history(tx, j)

    @staticmethod
    def _insert_history(tx: sqlite3.Connection, j: JournalRecord) -> None:
        """The record's per-node references, in the transaction that writes the record."""
        position = history_position(j.created_at, j.id)
        tx.executemany(
            "INSERT OR IGNORE INTO journal_nodes VALUES (?, ?, ?, ?, ?)",
            [
                (j.tenant_id, j.owner_id, node_id, position, j.id)
                for node_id in history_reference_ids(j)
            ],
        )

    def list_node_history(
        self, owner: OwnerKey, node_id: str, *, after: str | None, limit: int
    ) -> NodeHistoryPage:
        # One more reference than asked says whether more follow; a reference whose record
        # is gone (LEFT JOIN finds no body) is read past.
        rows = self._query(
            "SELECT r.position, r.journal_id, j.body FROM journal_nodes r LEFT JOIN journal j "
            "ON j.tenant=r.tenant AND j.owner=r.owner AND j.id=r.journal_id "
            "WHERE r.tenant=? AND r.owner=? AND r.node_id=? AND r.position > ? "
            "ORDER BY r.position LIMIT ?",
            (owner.tenant_id, owner.owner_id, node_id, after or "", limit + 1),
        )
        page = rows[:limit]
        found = [(record_id, body) for _, record_id, body in page if body is not None]
        records = load_journal_page(owner, found)
        more = len(rows) > limit
        return NodeHistoryPage(tuple(records), page[-1][0] if more else None)

    def get_event(self, owner: OwnerKey, event_id: str) -> Event | None:
        rows = self._query(
            "SELECT body FROM events WHERE tenant=? AND owner=? AND id=?",
            (owner.tenant_id, owner.owner_id, event_id),
        )
        return load_record(Event, "event", event_id, rows[0][0]) if rows else None

    def get_events(self, owner: OwnerKey, event_ids: Sequence[str]) -> dict[str, Event]:
        events = load_readable(Event, "event", self._bodies("events", owner, event_ids))
        return {event.id: event for event in events}

    def _bodies(
        self, table: Literal["events", "nodes"], owner: OwnerKey, ids: Sequence[str]
    ) -> list[tuple[str, str]]:
        """`(id, body)` of the stored records among `ids` of one owner, read in chunks under
        SQLite's bound limit."""
        unique = list(dict.fromkeys(ids))
        bodies: list[tuple[str, str]] = []
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._query(
                # Only the table name (one of two literals) and placeholders are interpolated.
                f"SELECT id, body FROM {table} WHERE tenant=? AND owner=? AND id IN ({marks})",  # noqa: S608
                (owner.tenant_id, owner.owner_id, *chunk),
            )
            bodies.extend((record_id, body) for (record_id, body) in rows)
        return bodies

    def get_idempotency(
        self, owner: OwnerKey, operation: str, key: str
    ) -> IdempotencyRecord | None:
        del operation  # records of the older layout were moved when the ledger opened
        rows = self._query(
            "SELECT body FROM idempotency_keys WHERE tenant=? AND owner=? AND key=?",
            (owner.tenant_id, owner.owner_id, key),
        )
        return load_record(IdempotencyRecord, "idempotency", key, rows[0][0]) if rows else None

    def get_node(self, owner: OwnerKey, node_id: str) -> MemoryNode | None:
        found = self._bodies("nodes", owner, [node_id])
        return self._parse_node(*found[0]) if found else None

    def get_nodes(
        self, owner: OwnerKey, node_ids: Sequence[str], *, consistent: bool = True
    ) -> dict[str, MemoryNode]:
        # One local database: every read already sees every committed write.
        del consistent
        nodes: dict[str, MemoryNode] = {}
        for node_id, body in self._bodies("nodes", owner, node_ids):
            try:
                nodes[node_id] = self._parse_node(node_id, body)
            except CorruptRecordError as exc:
                log_quarantined(exc)
        return nodes

    def _parse_node(self, node_id: str, body: str) -> MemoryNode:
        node = self._parsed_nodes.get(body)
        if node is None:
            node = load_record(MemoryNode, "node", node_id, body)
            if len(self._parsed_nodes) >= _PARSED_NODE_CACHE:
                self._parsed_nodes.clear()  # bounded; refills with what is read next
            self._parsed_nodes[body] = node
        return node

    def list_assertion_nodes(
        self, owner: OwnerKey, assertion_key: str, limit: int
    ) -> list[MemoryNode]:
        # The expression index `nodes_by_assertion` answers this without reading other nodes.
        # Its expressions (repeated here word for word, or SQLite would not use it) guard
        # json_extract with json_valid: json_extract raises on a damaged body, and an index
        # over it would refuse every write of one, so no record could be quarantined.
        rows = self._query(
            "SELECT id, body FROM nodes WHERE tenant=? AND owner=? AND "
            "CASE WHEN json_valid(body) "
            "THEN json_extract(body, '$.metadata.prme_extraction_v1.assertion_key') END=? "
            "ORDER BY CASE WHEN json_valid(body) THEN json_extract(body, '$.created_at') END "
            "DESC, id DESC LIMIT ?",
            (owner.tenant_id, owner.owner_id, assertion_key, max(limit, 0)),
        )
        return load_readable(MemoryNode, "node", rows)

    def list_event_nodes(self, owner: OwnerKey, event_id: str) -> list[MemoryNode]:
        rows = self._query(
            "SELECT n.id, n.body FROM node_evidence e JOIN nodes n "
            "ON n.tenant=e.tenant AND n.owner=e.owner AND n.id=e.node_id "
            "WHERE e.tenant=? AND e.owner=? AND e.event_id=? ORDER BY e.created_at, e.node_id",
            (owner.tenant_id, owner.owner_id, event_id),
        )
        return load_readable(MemoryNode, "node", rows)

    def list_event_work(self, owner: OwnerKey, event_id: str) -> list[WorkItem]:
        rows = self._query(
            "SELECT id, body FROM work WHERE tenant=? AND owner=? AND event_id=? "
            "ORDER BY created_at, id",
            (owner.tenant_id, owner.owner_id, event_id),
        )
        return load_readable(WorkItem, "work", rows)

    def list_pending_work(
        self, owner: OwnerKey | None, limit: int, *, family: WorkFamily = "materialize"
    ) -> list[WorkItem]:
        status = _status_column(WorkStatus.PENDING, family)
        if owner is None:
            sql = "SELECT id, body FROM work WHERE status=? ORDER BY created_at, id LIMIT ?"
            params: tuple[object, ...] = (status, limit)
        else:
            sql = (
                "SELECT id, body FROM work WHERE tenant=? AND owner=? AND status=? "
                "ORDER BY created_at, id LIMIT ?"
            )
            params = (owner.tenant_id, owner.owner_id, status, limit)
        while True:
            work, unreadable = split_readable(WorkItem, "work", self._query(sql, params))
            if not unreadable:
                return work
            # Out of the pending set, so it cannot hold up (by its age) the work behind it;
            # each round takes at least one out, so the batch fills with readable items.
            with self._transaction() as tx:
                tx.executemany(
                    "UPDATE work SET status=? WHERE id=?",
                    [(QUARANTINED_WORK_STATUS, work_id) for work_id in unreadable],
                )

    def count_pending_work(
        self, owner: OwnerKey | None, *, family: WorkFamily = "materialize"
    ) -> int:
        status = _status_column(WorkStatus.PENDING, family)
        if owner is None:
            rows = self._query("SELECT count(*) FROM work WHERE status=?", (status,))
        else:
            rows = self._query(
                "SELECT count(*) FROM work WHERE tenant=? AND owner=? AND status=?",
                (owner.tenant_id, owner.owner_id, status),
            )
        return int(rows[0][0])

    def save_work(self, item: WorkItem) -> None:
        with self._transaction() as tx:
            self._update_work(tx, item)

    def append_journal(self, record: JournalRecord) -> None:
        with self._transaction() as tx:
            self._insert_journal(tx, record)

    def get_journal(
        self,
        owner: OwnerKey,
        record_id: str,
        *,
        receipt: bool = False,  # noqa: ARG002 (receipts share the journal table here)
    ) -> JournalRecord | None:
        rows = self._query(
            "SELECT body FROM journal WHERE tenant=? AND owner=? AND id=?",
            (owner.tenant_id, owner.owner_id, record_id),
        )
        return load_record(JournalRecord, "journal", record_id, rows[0][0]) if rows else None

    def list_journal(
        self, owner: OwnerKey, id_prefix: str, *, after_id: str | None = None, limit: int = 100
    ) -> list[JournalRecord]:
        # A range over the primary key: ids from the prefix on, then the prefix check.
        rows = self._query(
            "SELECT id, body FROM journal WHERE tenant=? AND owner=? AND id >= ? AND id > ? "
            "AND substr(id, 1, ?) = ? ORDER BY id LIMIT ?",
            (
                owner.tenant_id,
                owner.owner_id,
                id_prefix,
                after_id or "",
                len(id_prefix),
                id_prefix,
                limit,
            ),
        )
        return load_journal_page(owner, rows)

    def list_journal_of_subject(
        self,
        owner: OwnerKey,
        id_prefix: str,
        subject_id: str,
        *,
        after_id: str | None,
        limit: int,
        scan_limit: int,
    ) -> tuple[list[JournalRecord], str | None]:
        del scan_limit  # the index `journal_by_subject` reads only this subject's records
        if limit <= 0:
            return [], None
        rows = self._query(
            # Named: without statistics the planner prefers the primary key's id range, which
            # reads every record of the prefix (every judgment of the owner).
            "SELECT id, body FROM journal INDEXED BY journal_by_subject "
            "WHERE tenant=? AND owner=? AND subject_id=? "
            "AND id >= ? AND id > ? AND substr(id, 1, ?) = ? ORDER BY id LIMIT ?",
            (
                owner.tenant_id,
                owner.owner_id,
                subject_id,
                id_prefix,
                after_id or "",
                len(id_prefix),
                id_prefix,
                limit + 1,  # one more than the page: the cursor is null when none follows
            ),
        )
        page = load_journal_page(owner, rows[:limit])
        return page, (page[-1].id if len(rows) > limit else None)

    def list_nodes(self, owner: OwnerKey, *, node_type: NodeType | None = None) -> list[MemoryNode]:
        rows = self._query(
            "SELECT id, body FROM nodes WHERE tenant=? AND owner=? ORDER BY id",
            (owner.tenant_id, owner.owner_id),
        )
        nodes = load_readable(MemoryNode, "node", rows)
        return [n for n in nodes if node_type is None or n.node_type is node_type]

    def list_owners(self, tenant_id: str) -> list[str]:
        # The events' primary key starts with (tenant, owner): a range scan, no table scan.
        rows = self._query("SELECT DISTINCT owner FROM events WHERE tenant=?", (tenant_id,))
        return sorted(row[0] for row in rows)

    def list_node_edges(self, owner: OwnerKey, node_id: str) -> list[MemoryEdge]:
        rows = self._query(
            "SELECT id, body FROM edges WHERE tenant=? AND owner=? AND source=? "
            "UNION SELECT id, body FROM edges WHERE tenant=? AND owner=? AND target=?",
            (owner.tenant_id, owner.owner_id, node_id) * 2,
        )
        edges = load_readable(MemoryEdge, "edge", rows)
        return sorted(edges, key=lambda e: (e.created_at, e.id))

    def list_edges_touching(self, owner: OwnerKey, node_ids: Sequence[str]) -> list[MemoryEdge]:
        unique = list(dict.fromkeys(node_ids))
        rows: list[tuple[str, str]] = []
        for start in range(0, len(unique), 400):
            chunk = unique[start : start + 400]
            marks = ",".join("?" * len(chunk))
            found = self._query(
                # Only placeholders are interpolated; both columns are indexed.
                f"SELECT id, body FROM edges WHERE tenant=? AND owner=? AND source IN ({marks}) "  # noqa: S608
                f"UNION SELECT id, body FROM edges WHERE tenant=? AND owner=? AND target IN ({marks})",
                (owner.tenant_id, owner.owner_id, *chunk) * 2,
            )
            rows += [(edge_id, body) for edge_id, body in found]
        edges = {e.id: e for e in load_readable(MemoryEdge, "edge", rows)}
        return sorted(edges.values(), key=lambda e: (e.created_at, e.id))

    def list_receipt_summaries(
        self,
        owner: OwnerKey,
        *,
        before: str | None,
        since: datetime | None,
        until: datetime | None,
        limit: int,
    ) -> ReceiptSummaryPage:
        if limit <= 0:
            return ReceiptSummaryPage((), None)
        # Receipts keep the engine clock's UTC times, whose ISO text sorts as time does (a
        # whole second's "+00:00" before any fraction's "."): a descending walk of the partial
        # index receipts_by_time. The operation is written out so the planner can use it.
        high = (_HIGHEST_TEXT, "")
        if until is not None:
            high = min(high, (_stored_time(until), ""))
        if before is not None:
            moment, _, request_id = before.partition("|")
            at = datetime.strptime(moment, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
            high = min(high, (_stored_time(at), request_id))
        rows = self._query(
            "SELECT id, body, created_at FROM journal WHERE tenant=? AND owner=? "
            "AND operation='retrieval_receipt' AND created_at >= ? AND (created_at, id) < (?, ?) "
            "ORDER BY created_at DESC, id DESC LIMIT ?",
            (
                owner.tenant_id,
                owner.owner_id,
                "" if since is None else _stored_time(since),
                *high,
                limit + 1,
            ),
        )
        read = rows[:limit]
        summaries: list[RetrievalSummary] = []
        for record_id, body, _ in read:
            try:
                summaries.append(
                    summarize_receipt(load_record(JournalRecord, "journal", record_id, body))
                )
            except CorruptRecordError as exc:
                log_quarantined(exc)
        if len(rows) <= limit:
            return ReceiptSummaryPage(tuple(summaries), None)
        last_id, _, last_at = read[-1]
        position = receipt_position(datetime.fromisoformat(last_at), last_id)
        return ReceiptSummaryPage(tuple(summaries), position)

    def get_receipt_records(
        self, owner: OwnerKey, request_ids: Sequence[str]
    ) -> dict[str, JournalRecord]:
        unique = list(dict.fromkeys(request_ids))
        rows: list[tuple[str, ...]] = []
        for start in range(0, len(unique), 400):
            chunk = unique[start : start + 400]
            marks = ",".join("?" * len(chunk))
            rows += self._query(
                # Only placeholders are interpolated.
                f"SELECT id, body FROM journal WHERE tenant=? AND owner=? AND id IN ({marks}) "  # noqa: S608
                f"AND operation=?",
                (owner.tenant_id, owner.owner_id, *chunk, RECEIPT_OPERATION),
            )
        return {j.id: j for j in load_readable(JournalRecord, "journal", rows)}

    def list_nodes_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[MemoryNode], str | None]:
        rows = self._page_rows("nodes", owner, after_id, limit)
        return load_readable(MemoryNode, "node", rows[:limit]), _next_after(rows, limit)

    def list_events_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[Event], str | None]:
        rows = self._page_rows("events", owner, after_id, limit)
        return load_readable(Event, "event", rows[:limit]), _next_after(rows, limit)

    def list_edges_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[MemoryEdge], str | None]:
        rows = self._page_rows("edges", owner, after_id, limit)
        return load_readable(MemoryEdge, "edge", rows[:limit]), _next_after(rows, limit)

    def _page_rows(
        self,
        table: Literal["events", "nodes", "edges"],
        owner: OwnerKey,
        after_id: str | None,
        limit: int,
    ) -> list[tuple[str, str]]:
        # A range over the primary key; one row more than asked says whether more follow.
        rows = self._query(
            f"SELECT id, body FROM {table} WHERE tenant=? AND owner=? AND id > ? "  # noqa: S608
            "ORDER BY id LIMIT ?",
            (owner.tenant_id, owner.owner_id, after_id or "", limit + 1),
        )
        return [(record_id, body) for (record_id, body) in rows]

    def delete_event(self, deletion: EventDeletion) -> None:
        owner = (deletion.owner.tenant_id, deletion.owner.owner_id)
        node_ids = [(*owner, n.id) for n in deletion.nodes]
        with self._transaction() as tx:
            removed = tx.execute(
                "DELETE FROM events WHERE tenant=? AND owner=? AND id=?",
                (*owner, deletion.event_id),
            )
            if removed.rowcount == 0:
                raise NotFoundError("Event not found")
            tx.executemany("DELETE FROM nodes WHERE tenant=? AND owner=? AND id=?", node_ids)
            tx.executemany(
                "DELETE FROM node_evidence WHERE tenant=? AND owner=? AND node_id=?", node_ids
            )
            tx.executemany(
                "DELETE FROM node_expiry WHERE tenant=? AND owner=? AND node_id=?", node_ids
            )
            tx.executemany(
                "DELETE FROM edges WHERE tenant=? AND owner=? AND id=?",
                [(*owner, e.id) for e in deletion.edges],
            )
            tx.executemany(
                "DELETE FROM work WHERE tenant=? AND owner=? AND id=?",
                [(*owner, w.id) for w in deletion.work],
            )
            tx.executemany(
                "DELETE FROM journal WHERE tenant=? AND owner=? AND id=?",
                [(*owner, record_id) for record_id in deletion.removed_journal_ids],
            )
            tx.executemany(
                "DELETE FROM journal_nodes WHERE tenant=? AND owner=? AND journal_id=?",
                [(*owner, record_id) for record_id in deletion.removed_journal_ids],
            )
            tx.executemany(
                "DELETE FROM journal_nodes WHERE tenant=? AND owner=? AND node_id=?", node_ids
            )
            self._insert_journal(tx, deletion.journal)

    def count_events(self, owner: OwnerKey) -> int:
        rows = self._query(
            "SELECT count(*) FROM events WHERE tenant=? AND owner=?",
            (owner.tenant_id, owner.owner_id),
        )
        return int(rows[0][0])

    def count_nodes(self, owner: OwnerKey) -> dict[tuple[LifecycleState, NodeType], int]:
        # Grouped inside SQLite: one pass over the owner's key range, no body parsed in Python.
        rows = self._query(
            "SELECT json_extract(body, '$.lifecycle_state'), json_extract(body, '$.node_type'), "
            "count(*) FROM nodes WHERE tenant=? AND owner=? GROUP BY 1, 2",
            (owner.tenant_id, owner.owner_id),
        )
        counts: dict[tuple[LifecycleState, NodeType], int] = {}
        states, types = set(LifecycleState), set(NodeType)
        for state, node_type, count in rows:
            if state in states and node_type in types:
                counts[(LifecycleState(state), NodeType(node_type))] = int(count)
        return counts

    # -- erasure -----------------------------------------------------------------------

    def erase_owner_keys(self, owner: OwnerKey) -> int:
        with self._transaction() as tx:
            removed = tx.execute(
                "DELETE FROM credentials WHERE tenant=? AND json_extract(body, '$.owner_id')=?",
                (owner.tenant_id, owner.owner_id),
            )
            return removed.rowcount

    def erase_owner_step(self, owner: OwnerKey, erasure: OwnerErasure, limit: int) -> OwnerErasure:
        mine = (owner.tenant_id, owner.owner_id)
        removed: Counter[str] = Counter()
        with self._transaction() as tx:
            self._expect_erasure(tx, owner.tenant_id, erasure.erasure_id, erasure)
            for table, field in _ERASED_TABLES:
                left = limit - sum(removed.values())
                if left <= 0:
                    break
                key = _ERASED_KEY[table]
                found = tx.execute(
                    f"DELETE FROM {table} WHERE (tenant, owner, {key}) IN ("  # noqa: S608
                    f"SELECT tenant, owner, {key} FROM {table} WHERE tenant=? AND owner=? LIMIT ?)",
                    (*mine, left),
                )
                removed[field] += found.rowcount
            left = limit - sum(removed.values())
            if left > 0:
                rows = tx.execute(
                    "SELECT id, operation FROM journal WHERE tenant=? AND owner=? LIMIT ?",
                    (*mine, left),
                ).fetchall()
                tx.executemany(
                    "DELETE FROM journal WHERE tenant=? AND owner=? AND id=?",
                    [(*mine, record_id) for record_id, _ in rows],
                )
                removed.update(journal_count_field(operation) for _, operation in rows)
            saved = erasure.model_copy(update={"removed": erasure.removed.plus(removed)})
            self._write_erasure(tx, saved, owner.tenant_id)
            # Parsed copies of erased nodes may not outlive them in this process either.
            self._parsed_nodes.clear()
        return saved

    @staticmethod
    def _write_erasure(tx: sqlite3.Connection, erasure: OwnerErasure, tenant_id: str) -> None:
        tx.execute(
            "INSERT INTO erasures VALUES (?, ?, ?) ON CONFLICT (tenant, erasure_id) "
            "DO UPDATE SET body=excluded.body",
            (tenant_id, erasure.erasure_id, erasure.model_dump_json()),
        )

    def get_erasure(self, tenant_id: str, erasure_id: str) -> OwnerErasure | None:
        rows = self._query(
            "SELECT erasure_id, body FROM erasures WHERE tenant=? AND erasure_id=?",
            (tenant_id, erasure_id),
        )
        return load_record(OwnerErasure, "erasure", *rows[0]) if rows else None

    def save_erasure(
        self, erasure: OwnerErasure, tenant_id: str, *, replacing: OwnerErasure | None
    ) -> None:
        with self._transaction() as tx:
            self._expect_erasure(tx, tenant_id, erasure.erasure_id, replacing)
            self._write_erasure(tx, erasure, tenant_id)

    @staticmethod
    def _expect_erasure(
        tx: sqlite3.Connection, tenant_id: str, erasure_id: str, expected: OwnerErasure | None
    ) -> None:
        row = tx.execute(
            "SELECT body FROM erasures WHERE tenant=? AND erasure_id=?", (tenant_id, erasure_id)
        ).fetchone()
        stored = row[0] if row else None
        if stored != (expected.model_dump_json() if expected is not None else None):
            raise ConflictError("the erasure record changed")

    # -- CredentialStore ---------------------------------------------------------------

    def put_credential(self, credential: Credential) -> None:
        with self._transaction() as tx:
            tx.execute(
                "INSERT INTO credentials VALUES (?, ?, ?, ?, ?)",
                (
                    credential.key_id,
                    credential.key_hash,
                    credential.tenant_id,
                    credential.created_at.isoformat(),
                    credential.model_dump_json(),
                ),
            )

    def find_credential(self, key_hash: str) -> Credential | None:
        rows = self._query("SELECT key_id, body FROM credentials WHERE key_hash=?", (key_hash,))
        return load_record(Credential, "credential", *rows[0]) if rows else None

    def list_credentials(self, tenant_id: str | None) -> list[Credential]:
        if tenant_id is None:
            rows = self._query("SELECT key_id, body FROM credentials ORDER BY created_at, key_id")
        else:
            rows = self._query(
                "SELECT key_id, body FROM credentials WHERE tenant=? ORDER BY created_at, key_id",
                (tenant_id,),
            )
        # One damaged key row must not stop `prme keys`, startup or every other key.
        return load_readable(Credential, "credential", rows)

    def count_credentials(self) -> int:
        rows = self._query("SELECT COUNT(*) FROM credentials")
        return int(rows[0][0])

    def revoke_credential(self, key_id: str, at: datetime) -> Credential | None:
        with self._transaction() as tx:
            row = tx.execute("SELECT body FROM credentials WHERE key_id=?", (key_id,)).fetchone()
            if row is None:
                return None
            credential = load_record(Credential, "credential", key_id, row[0])
            if credential.revoked_at is None:
                credential = credential.model_copy(update={"revoked_at": at})
                tx.execute(
                    "UPDATE credentials SET body=? WHERE key_id=?",
                    (credential.model_dump_json(), key_id),
                )
            return credential


def _next_after(rows: Sequence[tuple[str, str]], limit: int) -> str | None:
    """The last id of a page read with one extra row, when that row shows more follow."""
    return rows[limit - 1][0] if len(rows) > limit else None

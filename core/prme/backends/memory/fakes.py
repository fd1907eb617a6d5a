"""Dictionary-backed fakes of the ports; they honour the same contract as the real adapters."""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TypeVar

import numpy as np

from prme.backends.commit_rule import applied_once
from prme.backends.session_order import alternate
from prme.errors import (
    ConflictError,
    CorruptRecordError,
    IndexUnavailableError,
    NotFoundError,
    StorageUnavailableError,
)
from prme.model.enums import LifecycleState, NodeType, WorkFamily, WorkStatus
from prme.model.erasure import OwnerErasure, journal_count_field
from prme.model.extraction import stored_assertion_key
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
from prme.model.search import IndexDocument, IndexHits, IndexQuery
from prme.retrieval.receipt_summary import summarize_receipt
from prme.retrieval.receipts import RECEIPT_OPERATION

_Record = TypeVar("_Record", Event, MemoryNode, MemoryEdge)
_WORD = re.compile(r"\w+", re.UNICODE)


def _key(owner: OwnerKey | None, tenant_id: str, owner_id: str) -> bool:
    return owner is None or (owner.tenant_id, owner.owner_id) == (tenant_id, owner_id)


def _pop_owner(
    table: dict[tuple[str, str, str], object], owner: tuple[str, str], limit: int
) -> int:
    """Remove up to `limit` records of `owner` from a table keyed (tenant, owner, id)."""
    keys = [key for key in table if key[:2] == owner][: max(limit, 0)]
    for key in keys:
        del table[key]
    return len(keys)


class InMemoryLedger:
    def __init__(self, credentials: InMemoryCredentialStore | None = None) -> None:
        """`credentials`: the key store an owner's erasure removes keys from, as the real
        ledgers, which keep the keys themselves, do."""
        self._lock = threading.RLock()
        self.credentials = credentials
        self.erasures: dict[tuple[str, str], OwnerErasure] = {}
        self.events: dict[tuple[str, str, str], Event] = {}
        self.nodes: dict[tuple[str, str, str], MemoryNode] = {}
        self.journal: dict[tuple[str, str, str], JournalRecord] = {}
        self.work: dict[str, WorkItem] = {}
        self.idempotency: dict[tuple[str, str, str], IdempotencyRecord] = {}
        self.edges: dict[tuple[str, str, str], MemoryEdge] = {}
        self.fail_journal = False
        # The `consistent` flag of every `get_nodes` call, oldest first: which reads may lag.
        self.node_reads_consistent: list[bool] = []
        # (tenant, owner, node id) -> {history position: journal record id}: the per-node
        # references the real ledgers save with each journal record.
        self.node_history: dict[tuple[str, str, str], dict[str, str]] = {}

    def _put_journal(self, record: JournalRecord) -> None:
        self.journal[(record.tenant_id, record.owner_id, record.id)] = record
        position = history_position(record.created_at, record.id)
        for node_id in history_reference_ids(record):
            refs = self.node_history.setdefault((record.tenant_id, record.owner_id, node_id), {})
            refs[position] = record.id

    def list_node_history(
        self, owner: OwnerKey, node_id: str, *, after: str | None, limit: int
    ) -> NodeHistoryPage:
        with self._lock:
            refs = self.node_history.get((owner.tenant_id, owner.owner_id, node_id), {})
            positions = sorted(p for p in refs if after is None or p > after)
            records: list[JournalRecord] = []
            last: str | None = None
            for position in positions:
                if len(records) == limit:
                    return NodeHistoryPage(tuple(records), last)
                record = self.journal.get((owner.tenant_id, owner.owner_id, refs[position]))
                last = position
                if record is not None:
                    records.append(record)
            return NodeHistoryPage(tuple(records), None)

    def commit_store(self, commit: StoreCommit) -> None:
        with applied_once(self, commit.journal):
            e, n, idem = commit.event, commit.node, commit.idempotency
            with self._lock:
                if (e.tenant_id, e.owner_id, e.id) in self.events:
                    raise ConflictError("event already exists")
                if idem is not None:
                    idem_key = (idem.tenant_id, idem.owner_id, idem.key)
                    if idem_key in self.idempotency:
                        raise ConflictError("idempotency key already used")
                    self.idempotency[idem_key] = idem
                self.events[(e.tenant_id, e.owner_id, e.id)] = e
                self.nodes[(n.tenant_id, n.owner_id, n.id)] = n
                j = commit.journal
                self._put_journal(j)
                self.work[commit.work.id] = commit.work
                self.work.update((w.id, w) for w in commit.extra_work)

    def commit_ingest(self, commit: IngestCommit) -> None:
        with applied_once(self, commit.journal), self._lock:
            keys = [(e.tenant_id, e.owner_id, e.id) for e in commit.events]
            if any(key in self.events for key in keys):
                raise ConflictError("event already exists")
            idem = commit.idempotency
            if idem is not None:
                idem_key = (idem.tenant_id, idem.owner_id, idem.key)
                if idem_key in self.idempotency:
                    raise ConflictError("idempotency key already used")
                self.idempotency[idem_key] = idem
            self.events.update(zip(keys, commit.events, strict=True))
            self.work.update((w.id, w) for w in commit.work)
            j = commit.journal
            self._put_journal(j)

    def commit_materialization(self, node: MemoryNode, work: WorkItem) -> None:
        with self._lock:
            key = (node.tenant_id, node.owner_id, node.id)
            if key in self.nodes:
                raise ConflictError("node already exists")
            if work.id not in self.work:
                raise ConflictError("work item no longer exists")
            self.nodes[key] = node
            self.work[work.id] = work

    def _refuse_conflicting_additions(self, change: NodeChange) -> None:
        for node in change.new_nodes:
            if (node.tenant_id, node.owner_id, node.id) in self.nodes:
                raise ConflictError("node already exists")
        for edge in change.edges:
            if (edge.tenant_id, edge.owner_id, edge.id) in self.edges:
                raise ConflictError("edge already exists")
        if any(w.id not in self.work for w in change.work_updates):
            raise ConflictError("work item no longer exists")

    def commit_node_change(self, change: NodeChange) -> None:
        with applied_once(self, change.journal):
            j, idem = change.journal, change.idempotency
            with self._lock:
                # Every check before any write: a conflict leaves nothing behind.
                for previous, _ in change.updates:
                    if (
                        self.nodes.get((previous.tenant_id, previous.owner_id, previous.id))
                        != previous
                    ):
                        raise ConflictError("node changed")
                if (j.tenant_id, j.owner_id, j.id) in self.journal:
                    raise ConflictError("journal record already exists")
                if (
                    idem is not None
                    and (idem.tenant_id, idem.owner_id, idem.key) in self.idempotency
                ):
                    raise ConflictError("idempotency key already used")
                self._refuse_conflicting_additions(change)
                if idem is not None:
                    self.idempotency[(idem.tenant_id, idem.owner_id, idem.key)] = idem
                for _, new in change.updates:
                    self.nodes[(new.tenant_id, new.owner_id, new.id)] = new
                for node in change.new_nodes:
                    self.nodes[(node.tenant_id, node.owner_id, node.id)] = node
                self.work.update((w.id, w) for w in change.work_updates)
                for edge in change.edges:
                    self.edges[(edge.tenant_id, edge.owner_id, edge.id)] = edge
                self._put_journal(j)
                self.work.update((w.id, w) for w in change.work)

    def list_expired_nodes(self, at: datetime, limit: int) -> list[MemoryNode]:
        expired = [
            n
            for n in self.nodes.values()
            if n.is_expired(at) and n.lifecycle_state is not LifecycleState.ARCHIVED
        ]
        return sorted(expired, key=lambda n: (n.expires_at or at, n.id))[:limit]

    def delete_expired_receipts(self, at: datetime, *, saved_before: datetime, limit: int) -> int:
        with self._lock:
            expired = [
                key
                for key, record in self.journal.items()
                if record.operation == RECEIPT_OPERATION
                and (
                    record.expires_at <= at
                    if record.expires_at is not None
                    else record.created_at <= saved_before
                )
            ][: max(0, limit)]
            for key in expired:
                del self.journal[key]
        return len(expired)

    def archive_node(self, node: MemoryNode, journal: JournalRecord, work: WorkItem) -> None:
        with self._lock:
            key = (node.tenant_id, node.owner_id, node.id)
            current = self.nodes.get(key)
            if current is None or current.lifecycle_state is LifecycleState.ARCHIVED:
                raise ConflictError("node changed")
            self.nodes[key] = node
            self._put_journal(journal)
            self.work[work.id] = work

    def get_event(self, owner: OwnerKey, event_id: str) -> Event | None:
        return self.events.get((owner.tenant_id, owner.owner_id, event_id))

    def get_events(self, owner: OwnerKey, event_ids: Sequence[str]) -> dict[str, Event]:
        found = (self.get_event(owner, event_id) for event_id in dict.fromkeys(event_ids))
        return {event.id: event for event in found if event is not None}

    def get_idempotency(
        self, owner: OwnerKey, operation: str, key: str
    ) -> IdempotencyRecord | None:
        del operation  # a key is unique per owner; this fake never held another layout
        return self.idempotency.get((owner.tenant_id, owner.owner_id, key))

    def get_node(self, owner: OwnerKey, node_id: str) -> MemoryNode | None:
        return self.nodes.get((owner.tenant_id, owner.owner_id, node_id))

    def get_nodes(
        self, owner: OwnerKey, node_ids: Sequence[str], *, consistent: bool = True
    ) -> dict[str, MemoryNode]:
        self.node_reads_consistent.append(consistent)
        found = {nid: self.get_node(owner, nid) for nid in node_ids}
        return {nid: node for nid, node in found.items() if node is not None}

    def list_assertion_nodes(
        self, owner: OwnerKey, assertion_key: str, limit: int
    ) -> list[MemoryNode]:
        found = [
            n
            for n in self.nodes.values()
            if _key(owner, n.tenant_id, n.owner_id)
            and stored_assertion_key(n.metadata) == assertion_key
        ]
        return sorted(found, key=lambda n: (n.created_at, n.id), reverse=True)[: max(limit, 0)]

    def list_event_nodes(self, owner: OwnerKey, event_id: str) -> list[MemoryNode]:
        return sorted(
            (
                n
                for n in self.nodes.values()
                if _key(owner, n.tenant_id, n.owner_id) and event_id in n.evidence_refs
            ),
            key=lambda n: (n.created_at, n.id),
        )

    def list_event_work(self, owner: OwnerKey, event_id: str) -> list[WorkItem]:
        return [
            w
            for w in self.work.values()
            if _key(owner, w.tenant_id, w.owner_id) and w.event_id == event_id
        ]

    def list_pending_work(
        self, owner: OwnerKey | None, limit: int, *, family: WorkFamily = "materialize"
    ) -> list[WorkItem]:
        pending = [
            w
            for w in self.work.values()
            if _key(owner, w.tenant_id, w.owner_id)
            and w.status is WorkStatus.PENDING
            and w.kind.family == family
        ]
        return sorted(pending, key=lambda w: (w.created_at, w.id))[:limit]

    def count_pending_work(
        self, owner: OwnerKey | None, *, family: WorkFamily = "materialize"
    ) -> int:
        return len(self.list_pending_work(owner, len(self.work) + 1, family=family))

    def save_work(self, item: WorkItem) -> None:
        with self._lock:
            self.work[item.id] = item

    def append_journal(self, record: JournalRecord) -> None:
        if self.fail_journal:
            raise StorageUnavailableError()
        key = (record.tenant_id, record.owner_id, record.id)
        with self._lock:
            if key in self.journal:
                raise ConflictError("journal record already exists")
            self._put_journal(record)

    def get_journal(
        self,
        owner: OwnerKey,
        record_id: str,
        *,
        receipt: bool = False,  # noqa: ARG002 (one dictionary holds every record)
    ) -> JournalRecord | None:
        return self.journal.get((owner.tenant_id, owner.owner_id, record_id))

    def list_journal(
        self, owner: OwnerKey, id_prefix: str, *, after_id: str | None = None, limit: int = 100
    ) -> list[JournalRecord]:
        with self._lock:
            found = sorted(
                (
                    j
                    for (tenant, owner_id, record_id), j in self.journal.items()
                    if _key(owner, tenant, owner_id)
                    and record_id.startswith(id_prefix)
                    and (after_id is None or record_id > after_id)
                ),
                key=lambda j: j.id,
            )
        return found[:limit]

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
        del scan_limit  # every record is at hand: the page is exact
        records = self.list_journal(owner, id_prefix, after_id=after_id, limit=len(self.journal))
        found = [r for r in records if r.subject_id == subject_id]
        page = found[:limit]
        return page, (page[-1].id if len(found) > limit else None)

    def list_nodes(self, owner: OwnerKey, *, node_type: NodeType | None = None) -> list[MemoryNode]:
        with self._lock:
            return sorted(
                (
                    n
                    for n in self.nodes.values()
                    if _key(owner, n.tenant_id, n.owner_id)
                    and (node_type is None or n.node_type is node_type)
                ),
                key=lambda n: n.id,
            )

    def list_owners(self, tenant_id: str) -> list[str]:
        with self._lock:
            return sorted({owner for tenant, owner, _ in self.events if tenant == tenant_id})

    def list_node_edges(self, owner: OwnerKey, node_id: str) -> list[MemoryEdge]:
        with self._lock:
            return sorted(
                (
                    e
                    for e in self.edges.values()
                    if _key(owner, e.tenant_id, e.owner_id)
                    and node_id in (e.source_node_id, e.target_node_id)
                ),
                key=lambda e: (e.created_at, e.id),
            )

    def list_edges_touching(self, owner: OwnerKey, node_ids: Sequence[str]) -> list[MemoryEdge]:
        wanted = set(node_ids)
        with self._lock:
            return sorted(
                (
                    e
                    for e in self.edges.values()
                    if _key(owner, e.tenant_id, e.owner_id)
                    and wanted & {e.source_node_id, e.target_node_id}
                ),
                key=lambda e: (e.created_at, e.id),
            )

    def list_receipt_summaries(
        self,
        owner: OwnerKey,
        *,
        before: str | None,
        since: datetime | None,
        until: datetime | None,
        limit: int,
    ) -> ReceiptSummaryPage:
        with self._lock:
            placed = sorted(
                (
                    (receipt_position(j.created_at, j.id), j)
                    for (tenant, owner_id, _), j in self.journal.items()
                    if _key(owner, tenant, owner_id) and j.operation == RECEIPT_OPERATION
                ),
                key=lambda pair: pair[0],
                reverse=True,
            )
        in_range = [
            (position, j)
            for position, j in placed
            if (before is None or position < before)
            and (since is None or j.created_at >= since)
            and (until is None or j.created_at < until)
        ]
        read = in_range[: max(limit, 0)]
        summaries: list[RetrievalSummary] = []
        for _, record in read:
            try:
                summaries.append(summarize_receipt(record))
            except CorruptRecordError:
                continue
        more = len(in_range) > len(read) and bool(read)
        return ReceiptSummaryPage(tuple(summaries), read[-1][0] if more else None)

    def get_receipt_records(
        self, owner: OwnerKey, request_ids: Sequence[str]
    ) -> dict[str, JournalRecord]:
        with self._lock:
            found = {
                i: self.journal.get((owner.tenant_id, owner.owner_id, i))
                for i in dict.fromkeys(request_ids)
            }
        return {
            i: j for i, j in found.items() if j is not None and j.operation == RECEIPT_OPERATION
        }

    def list_nodes_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[MemoryNode], str | None]:
        with self._lock:
            return _page(self.nodes, owner, after_id, limit)

    def list_events_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[Event], str | None]:
        with self._lock:
            return _page(self.events, owner, after_id, limit)

    def list_edges_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[MemoryEdge], str | None]:
        with self._lock:
            return _page(self.edges, owner, after_id, limit)

    def delete_event(self, deletion: EventDeletion) -> None:
        journal = deletion.journal
        key = (deletion.owner.tenant_id, deletion.owner.owner_id, deletion.event_id)
        with self._lock:
            if key not in self.events:
                raise NotFoundError("Event not found")
            if (journal.tenant_id, journal.owner_id, journal.id) in self.journal:
                raise ConflictError("journal record already exists")
            for node in deletion.nodes:
                self.nodes.pop((node.tenant_id, node.owner_id, node.id), None)
            for edge in deletion.edges:
                self.edges.pop((edge.tenant_id, edge.owner_id, edge.id), None)
            for item in deletion.work:
                self.work.pop(item.id, None)
            for record_id in deletion.removed_journal_ids:
                self.journal.pop((*key[:2], record_id), None)
            removed_ids = set(deletion.removed_journal_ids)
            for node in deletion.nodes:
                self.node_history.pop((node.tenant_id, node.owner_id, node.id), None)
            for (tenant, owner_id, _), refs in self.node_history.items():
                if (tenant, owner_id) == key[:2]:
                    for position in [p for p, r in refs.items() if r in removed_ids]:
                        del refs[position]
            del self.events[key]
            self._put_journal(journal)

    def count_events(self, owner: OwnerKey) -> int:
        with self._lock:
            return len([1 for tenant, owner_id, _ in self.events if _key(owner, tenant, owner_id)])

    def count_nodes(self, owner: OwnerKey) -> dict[tuple[LifecycleState, NodeType], int]:
        with self._lock:
            return dict(
                Counter(
                    (n.lifecycle_state, n.node_type)
                    for n in self.nodes.values()
                    if _key(owner, n.tenant_id, n.owner_id)
                )
            )

    def erase_owner_keys(self, owner: OwnerKey) -> int:
        if self.credentials is None:
            return 0
        with self._lock:
            return self.credentials.remove_owner(owner.tenant_id, owner.owner_id)

    def erase_owner_step(self, owner: OwnerKey, erasure: OwnerErasure, limit: int) -> OwnerErasure:
        mine = (owner.tenant_id, owner.owner_id)
        removed: Counter[str] = Counter()
        with self._lock:
            if self.erasures.get((owner.tenant_id, erasure.erasure_id)) != erasure:
                raise ConflictError("the erasure record changed")
            left = limit
            for field, table in (
                ("events", self.events),
                ("nodes", self.nodes),
                ("edges", self.edges),
                ("idempotency_records", self.idempotency),
            ):
                removed[field] = _pop_owner(table, mine, left)  # type: ignore[arg-type]
                left -= removed[field]
            for key in [k for k in self.journal if k[:2] == mine][: max(left, 0)]:
                removed[journal_count_field(self.journal.pop(key).operation)] += 1
                left -= 1
            for work_id in [i for i, w in self.work.items() if w.owner == owner][: max(left, 0)]:
                del self.work[work_id]
                removed["work_items"] += 1
                left -= 1
            for ref_key in [k for k in self.node_history if k[:2] == mine]:
                refs = self.node_history[ref_key]
                for position in list(refs)[: max(left, 0)]:
                    del refs[position]
                    removed["node_links"] += 1
                    left -= 1
                if not refs:
                    del self.node_history[ref_key]
            saved = erasure.model_copy(update={"removed": erasure.removed.plus(removed)})
            self.erasures[(owner.tenant_id, saved.erasure_id)] = saved
            return saved

    def get_erasure(self, tenant_id: str, erasure_id: str) -> OwnerErasure | None:
        return self.erasures.get((tenant_id, erasure_id))

    def save_erasure(
        self, erasure: OwnerErasure, tenant_id: str, *, replacing: OwnerErasure | None
    ) -> None:
        with self._lock:
            if self.erasures.get((tenant_id, erasure.erasure_id)) != replacing:
                raise ConflictError("the erasure record changed")
            self.erasures[(tenant_id, erasure.erasure_id)] = erasure


class InMemoryCredentialStore:
    def __init__(self) -> None:
        self._by_id: dict[str, Credential] = {}

    def put_credential(self, credential: Credential) -> None:
        if credential.key_id in self._by_id:
            raise ConflictError("key id already exists")
        self._by_id[credential.key_id] = credential

    def find_credential(self, key_hash: str) -> Credential | None:
        return next((c for c in self._by_id.values() if c.key_hash == key_hash), None)

    def list_credentials(self, tenant_id: str | None) -> list[Credential]:
        return sorted(
            (c for c in self._by_id.values() if tenant_id is None or c.tenant_id == tenant_id),
            key=lambda c: (c.created_at, c.key_id),
        )

    def count_credentials(self) -> int:
        return len(self._by_id)

    def revoke_credential(self, key_id: str, at: datetime) -> Credential | None:
        credential = self._by_id.get(key_id)
        if credential is None:
            return None
        if credential.revoked_at is None:
            credential = credential.model_copy(update={"revoked_at": at})
            self._by_id[key_id] = credential
        return credential

    def remove_owner(self, tenant_id: str, owner_id: str) -> int:
        """Remove the owner's keys; how many there were."""
        mine = [
            key_id
            for key_id, c in self._by_id.items()
            if (c.tenant_id, c.owner_id) == (tenant_id, owner_id)
        ]
        for key_id in mine:
            del self._by_id[key_id]
        return len(mine)


def _page(
    records: dict[tuple[str, str, str], _Record],
    owner: OwnerKey,
    after_id: str | None,
    limit: int,
) -> tuple[list[_Record], str | None]:
    ids = sorted(
        record_id
        for tenant, owner_id, record_id in records
        if _key(owner, tenant, owner_id) and (after_id is None or record_id > after_id)
    )
    chosen = ids[:limit]
    page = [records[(owner.tenant_id, owner.owner_id, record_id)] for record_id in chosen]
    return page, chosen[-1] if len(ids) > limit else None


class InMemoryIndex:
    """Exact cosine over stored vectors and a plain BM25 over word tokens."""

    def __init__(self) -> None:
        self.documents: dict[tuple[str, str, str], IndexDocument] = {}
        self.available = True

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        if not self.available:
            raise IndexUnavailableError()
        for doc in documents:
            self.documents[(doc.tenant_id, doc.owner_id, doc.node_id)] = doc

    def delete(self, owner: OwnerKey, node_ids: Sequence[str]) -> None:
        if not self.available:
            raise IndexUnavailableError()
        for node_id in node_ids:
            self.documents.pop((owner.tenant_id, owner.owner_id, node_id), None)

    def delete_owner(self, owner: OwnerKey) -> int:
        if not self.available:
            raise IndexUnavailableError()
        mine = [key for key in self.documents if key[:2] == (owner.tenant_id, owner.owner_id)]
        # Counted once when two erase calls race: only the call that took a document counts it.
        return sum(self.documents.pop(key, None) is not None for key in mine)

    def search(self, owner: OwnerKey, query: IndexQuery) -> IndexHits:
        if not self.available:
            raise IndexUnavailableError()
        docs = [
            d
            for (tenant, owner_id, _), d in self.documents.items()
            if (tenant, owner_id) == (owner.tenant_id, owner.owner_id) and query.filters.matches(d)
        ]
        lexical = _bm25(query.text, docs)[: query.lexical_k]
        failure: str | None = None
        semantic: dict[str, float] = {}
        vector: list[tuple[str, float]] = []
        if query.vector is None:
            failure = "no_query_vector"
        elif any(d.embedding_model != query.embedding_model for d in docs):
            failure = "embedding_model_mismatch"
        else:
            q = np.asarray(query.vector, dtype=np.float32)
            for d in docs:
                assert d.vector is not None  # noqa: S101 - indexed documents always carry vectors
                semantic[d.node_id] = float(np.dot(np.asarray(d.vector, dtype=np.float32), q))
            vector = sorted(semantic.items(), key=lambda kv: (-kv[1], kv[0]))[: query.vector_k]
        kept = {nid for nid, _ in vector} | {nid for nid, _ in lexical}
        return IndexHits(
            vector=tuple(vector),
            lexical=tuple(lexical),
            semantic={nid: s for nid, s in semantic.items() if nid in kept},
            vector_failure=failure,
        )

    def _session_predecessor(
        self, owner: OwnerKey, session_id: str, before: datetime, embedding_model: str
    ) -> tuple[str, tuple[float, ...]] | None:
        if not self.available:
            raise IndexUnavailableError()
        earlier = [
            d
            for (tenant, owner_id, _), d in self.documents.items()
            if (tenant, owner_id) == (owner.tenant_id, owner.owner_id)
            and d.session_id == session_id
            and d.effective_time < before
        ]
        if not earlier:
            return None
        last = max(earlier, key=lambda d: (d.effective_time, d.node_id))
        vector = last.content_vector if last.content_vector is not None else last.vector
        if last.embedding_model != embedding_model or vector is None:
            return None
        return last.node_id, vector

    def session_predecessors(
        self,
        owner: OwnerKey,
        lookups: Sequence[tuple[str, datetime]],
        embedding_model: str,
    ) -> list[tuple[str, tuple[float, ...]] | None]:
        return [self._session_predecessor(owner, s, t, embedding_model) for s, t in lookups]

    def session_neighbours(
        self, owner: OwnerKey, anchors: Sequence[tuple[str, datetime, str]], radius: int
    ) -> list[list[str]]:
        if not self.available:
            raise IndexUnavailableError()
        found: list[list[str]] = []
        for session_id, when, node_id in anchors:
            keyed = sorted(
                (
                    (d.effective_time, d.node_id)
                    for (t, o, _), d in self.documents.items()
                    if (t, o) == (owner.tenant_id, owner.owner_id) and d.session_id == session_id
                ),
            )
            here = (when, node_id)
            before = [n for k, n in reversed(keyed) if (k, n) < here][:radius]
            after = [n for k, n in keyed if (k, n) > here][:radius]
            found.append(alternate(before, after))
        return found


def _bm25(text: str, docs: Sequence[IndexDocument]) -> list[tuple[str, float]]:
    terms = set(_WORD.findall(text.lower()))
    if not terms or not docs:
        return []
    tokenized = [(d.node_id, _WORD.findall(d.text.lower())) for d in docs]
    avg = sum(len(t) for _, t in tokenized) / len(tokenized)
    df = Counter(term for _, toks in tokenized for term in set(toks) if term in terms)
    scored: list[tuple[str, float]] = []
    for node_id, toks in tokenized:
        tf = Counter(t for t in toks if t in terms)
        if not tf:
            continue
        score = 0.0
        for term, freq in tf.items():
            idf = math.log(1 + (len(docs) - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * freq * 2.2 / (freq + 1.2 * (0.25 + 0.75 * len(toks) / avg))
        scored.append((node_id, score))
    return sorted(scored, key=lambda kv: (-kv[1], kv[0]))


class RecordingWorkQueue:
    """Remembers what was enqueued; `fail` makes the next sends fail as a lost message would."""

    def __init__(self) -> None:
        self.sent: list[WorkItem] = []
        self.fail = False

    def enqueue(self, items: Sequence[WorkItem]) -> None:
        if self.fail:
            raise StorageUnavailableError("queue unavailable")
        self.sent.extend(items)

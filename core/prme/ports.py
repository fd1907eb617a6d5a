"""The ports of the engine: one Protocol per dependency, each with a fake, an embedded and an AWS adapter.

Every call names the tenant and owner explicitly (`OwnerKey`). `None` from a read means
"not found"; failures raise `prme.errors` classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from prme.model.enums import LifecycleState, NodeType, WorkFamily
from prme.model.erasure import OwnerErasure
from prme.model.extraction import Extraction
from prme.model.graph import NodeHistoryPage
from prme.model.imports import ImportChunkMessage, ImportJob
from prme.model.learning import RankingProfile, RankingProfileState
from prme.model.limits import CounterKey, TenantLimits
from prme.model.listings import EventDeletion
from prme.model.receipt_listing import ReceiptSummaryPage
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
from prme.model.search import EmbeddingModelInfo, IndexDocument, IndexHits, IndexQuery
from prme.model.uploads import UploadTarget
from prme.model.usage import UsageEntry, UsageQuery, UsageTotal


@runtime_checkable
class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


class Embedder(Protocol):
    @property
    def model(self) -> EmbeddingModelInfo:
        """The vector space this embedder writes; recorded with every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """L2-normalised vectors, shape (len(texts), dimension). Raises EmbeddingUnavailableError."""
        ...

    def embed_segmented(self, groups: Sequence[Sequence[str]]) -> NDArray[np.float32]:
        """One vector per group of segments (each group non-empty): the L2-normalised mean of
        the vectors `embed` gives its segments. Raises EmbeddingUnavailableError."""
        ...


class Extractor(Protocol):
    """Derives grounded artifacts from one source text. Raises ExtractionUnavailableError."""

    @property
    def name(self) -> str: ...

    def extract(self, text: str, *, reference_time: datetime) -> Extraction:
        """`reference_time` anchors relative dates: the source's event time, else ingestion."""
        ...


class Ledger(Protocol):
    """The source of truth: events, nodes, journal, work items. Each method is one transaction.

    A stored event, node, edge or work item that cannot be loaded is quarantined: a read of
    that one record raises CorruptRecordError, a read of many leaves it out (and logs its
    id), so one bad record never fails the reads of everything around it.

    Every commit carries a journal record with an id unique to that write. Committing the
    very same commit again (its journal record already stored exactly as sent) is a no-op,
    never a conflict: that is what a retry after a lost answer looks like."""

    def commit_store(self, commit: StoreCommit) -> None:
        """All records or none; ConflictError when the event or the idempotency key exists."""
        ...

    def commit_ingest(self, commit: IngestCommit) -> None:
        """All events and work or none; ConflictError when an event or the key exists."""
        ...

    def commit_materialization(self, node: MemoryNode, work: WorkItem) -> None:
        """Save a node built from its event and its finished work item together.

        ConflictError when the node already exists (another pass built it)."""
        ...

    def list_expired_nodes(self, at: datetime, limit: int) -> list[MemoryNode]:
        """Nodes of every owner whose TTL ran out by `at` and that are not archived yet."""
        ...

    def delete_expired_receipts(self, at: datetime, *, saved_before: datetime, limit: int) -> int:
        """Delete up to `limit` retrieval receipts of every owner that expired by `at` (or, saved
        without an expiry, by `saved_before`); returns how many. A ledger whose store
        deletes them itself (DynamoDB's TTL) deletes none here."""
        ...

    def archive_node(self, node: MemoryNode, journal: JournalRecord, work: WorkItem) -> None:
        """Replace a node with its archived state, with its journal record and index work.

        ConflictError when the stored node changed since it was read."""
        ...

    def commit_node_change(self, change: NodeChange) -> None:
        """Updates, edges, journal, work and key in one transaction.

        ConflictError when a node changed since it was read or the key is already used."""
        ...

    def get_idempotency(
        self, owner: OwnerKey, operation: str, key: str
    ) -> IdempotencyRecord | None:
        """The owner's record of `key`, whichever operation made it (a key is unique per
        owner). `operation` only finds a record written when keys were unique per operation."""
        ...

    def get_event(self, owner: OwnerKey, event_id: str) -> Event | None: ...

    def get_events(self, owner: OwnerKey, event_ids: Sequence[str]) -> dict[str, Event]:
        """The found events among `event_ids`, by id, in as few reads as the store allows."""
        ...

    def get_node(self, owner: OwnerKey, node_id: str) -> MemoryNode | None: ...

    def get_nodes(
        self, owner: OwnerKey, node_ids: Sequence[str], *, consistent: bool = True
    ) -> dict[str, MemoryNode]:
        """The found nodes among `node_ids`, by id.

        `consistent=False` allows a read that may miss the last second of writes (half the
        cost on DynamoDB); only a reader that re-checks what it gets may ask for it."""
        ...

    def list_event_nodes(self, owner: OwnerKey, event_id: str) -> list[MemoryNode]: ...

    def list_assertion_nodes(
        self, owner: OwnerKey, assertion_key: str, limit: int
    ) -> list[MemoryNode]:
        """Up to `limit` of the owner's nodes whose extraction metadata carries `assertion_key`,
        newest first; a bounded read, never a scan of the owner's nodes."""
        ...

    def list_event_work(self, owner: OwnerKey, event_id: str) -> list[WorkItem]: ...

    def list_pending_work(
        self, owner: OwnerKey | None, limit: int, *, family: WorkFamily = "materialize"
    ) -> list[WorkItem]:
        """Pending work of one family, oldest first; `owner=None` spans every owner."""
        ...

    def count_pending_work(
        self, owner: OwnerKey | None, *, family: WorkFamily = "materialize"
    ) -> int: ...

    def save_work(self, item: WorkItem) -> None:
        """Replace the stored state of an existing work item."""
        ...

    def append_journal(self, record: JournalRecord) -> None:
        """Append a record; its id is unique within the owner (ConflictError otherwise)."""
        ...

    def get_journal(
        self, owner: OwnerKey, record_id: str, *, receipt: bool = False
    ) -> JournalRecord | None:
        """`receipt`: the record asked for is likely a retrieval receipt, which a ledger may
        keep apart from the owner's other records (it looks there first; both are found)."""
        ...

    def list_journal(
        self, owner: OwnerKey, id_prefix: str, *, after_id: str | None = None, limit: int = 100
    ) -> list[JournalRecord]:
        """Records whose id starts with `id_prefix`, in id order, after the full id `after_id`."""
        ...

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
        """Up to `limit` records whose id starts with `id_prefix` and whose subject is
        `subject_id`, in id order after the full id `after_id`, and the full id to go on after:
        None when no such record follows, else one may. A ledger that cannot look records up by subject
        reads at most `scan_limit` records a call, so its page may be short, even empty,
        while more follow. A record that cannot be loaded names no subject: it is skipped."""
        ...

    def list_nodes(self, owner: OwnerKey, *, node_type: NodeType | None = None) -> list[MemoryNode]:
        """Every node of one owner (a complete scan over all pages), optionally of one type."""
        ...

    def list_node_edges(self, owner: OwnerKey, node_id: str) -> list[MemoryEdge]:
        """Edges that start or end at a node, oldest first."""
        ...

    def list_nodes_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[MemoryNode], str | None]:
        """The next `limit` stored nodes of one owner in id order after `after_id` (the
        readable ones), and the id of the last one read when more follow (None at the end)."""
        ...

    def list_events_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[Event], str | None]:
        """As `list_nodes_page`, for the owner's source events."""
        ...

    def list_edges_page(
        self, owner: OwnerKey, *, after_id: str | None, limit: int
    ) -> tuple[list[MemoryEdge], str | None]:
        """As `list_nodes_page`, for the owner's edges (an export reads them all this way)."""
        ...

    def delete_event(self, deletion: EventDeletion) -> None:
        """Remove the event, the listed nodes (with their evidence links and expiry entries),
        edges and work items, and append the journal record: the event and the record in
        one transaction, and no later than everything else, so a retry after a failure
        finds the event and completes. NotFoundError when the event is already gone."""
        ...

    def count_events(self, owner: OwnerKey) -> int: ...

    def count_nodes(self, owner: OwnerKey) -> dict[tuple[LifecycleState, NodeType], int]:
        """The owner's readable nodes per (lifecycle state, node type)."""
        ...

    def list_owners(self, tenant_id: str) -> list[str]:
        """The owner ids of one tenant that have at least one stored event, in code point
        order. An operator listing (it may read the whole store): never on a request path."""
        ...

    def erase_owner_keys(self, owner: OwnerKey) -> int:
        """Remove the owner's API keys, revoked or not, where this store keeps them (both
        real ledgers keep the keys); how many were removed."""
        ...

    def erase_owner_step(self, owner: OwnerKey, erasure: OwnerErasure, limit: int) -> OwnerErasure:
        """Remove up to `limit` (at least 1; an adapter may take fewer) of the owner's stored
        records, whatever their kind (events, nodes and their links, edges, journal, work
        items, idempotency records), and replace the tenant's stored erasure record, which
        must be `erasure` exactly, by `erasure` with them counted, in one transaction. Returns
        the saved record; nothing removed means nothing of the owner was left. Unreadable
        records are removed too. ConflictError, with nothing removed, when the stored record
        is another (a concurrent erase call of the owner moved it on)."""
        ...

    def get_erasure(self, tenant_id: str, erasure_id: str) -> OwnerErasure | None:
        """The tenant's erasure record of this id (see `prme.model.erasure.owner_reference`)."""
        ...

    def save_erasure(
        self, erasure: OwnerErasure, tenant_id: str, *, replacing: OwnerErasure | None
    ) -> None:
        """Store the tenant's erasure record of `erasure.erasure_id` in place of `replacing`
        (None: there is none yet). ConflictError when the stored record is not `replacing`."""
        ...

    def list_node_history(
        self, owner: OwnerKey, node_id: str, *, after: str | None, limit: int
    ) -> NodeHistoryPage:
        """The owner's journal records that name `node_id` (`prme.model.graph.
        referenced_node_ids`), oldest first, after the history position `after`: read through
        the per-node references each journal write saves with its record, never by reading
        the owner's whole journal. A reference whose record is gone is skipped."""
        ...

    def list_edges_touching(self, owner: OwnerKey, node_ids: Sequence[str]) -> list[MemoryEdge]:
        """Edges that start or end at any of `node_ids`, oldest first: one hop of a graph
        walk in one read where the store allows (DynamoDB reads the owner's edges once)."""
        ...

    def list_receipt_summaries(
        self,
        owner: OwnerKey,
        *,
        before: str | None,
        since: datetime | None,
        until: datetime | None,
        limit: int,
    ) -> ReceiptSummaryPage:
        """Summaries of the owner's retrieval receipts, newest first: those whose position
        (`prme.model.receipt_listing.receipt_position`) is before `before`, saved at or after
        `since` and before `until`; at most `limit` are read (unreadable ones are left out,
        expired ones are not: the engine drops them). Read through an order kept by time,
        never by reading the owner's whole journal; receipts only, no other record."""
        ...

    def get_receipt_records(
        self, owner: OwnerKey, request_ids: Sequence[str]
    ) -> dict[str, JournalRecord]:
        """The owner's stored receipt records among `request_ids`, by id, in as few reads as
        the store allows; missing and unreadable ones are left out."""
        ...


class CredentialStore(Protocol):
    """Hashed API keys. Lookups by hash span tenants: the key itself says whose it is."""

    def put_credential(self, credential: Credential) -> None: ...

    def find_credential(self, key_hash: str) -> Credential | None: ...

    def list_credentials(self, tenant_id: str | None) -> list[Credential]: ...

    def count_credentials(self) -> int:
        """Every stored key record of every tenant, readable or not (listings skip the
        unreadable ones; a decision that must fail closed counts them here)."""
        ...

    def revoke_credential(self, key_id: str, at: datetime) -> Credential | None: ...


class SearchIndex(Protocol):
    """Derived, rebuildable index of nodes for vector and lexical (BM25) search."""

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        """Insert or replace documents by node id. Raises IndexUnavailableError."""
        ...

    def search(self, owner: OwnerKey, query: IndexQuery) -> IndexHits:
        """Both channels for one owner. A vector failure is reported in the hits, not raised."""
        ...

    def session_predecessors(
        self,
        owner: OwnerKey,
        lookups: Sequence[tuple[str, datetime]],
        embedding_model: str,
    ) -> list[tuple[str, tuple[float, ...]] | None]:
        """For each `(session_id, before)`, in order: the record said just before `before` in
        that session of the owner, and its own vector. Among the owner's documents of the
        session (any lifecycle state), the one with the greatest effective time (event
        time, else creation) strictly before `before`, ties broken by the greatest node id:
        `(node_id, content_vector)`, or its `vector` when it was written without a content
        vector. None when there is none or when that document's embedding model is not
        `embedding_model`. One round trip where the backend allows it, so indexing a batch
        does not cost a query per record. Raises IndexUnavailableError."""
        ...

    def session_neighbours(
        self, owner: OwnerKey, anchors: Sequence[tuple[str, datetime, str]], radius: int
    ) -> list[list[str]]:
        """For each anchor `(session_id, effective_time, node_id)`: the node ids of up to
        `radius` documents said just before it and `radius` just after it in that session
        of the owner (any lifecycle state: the engine re-filters), nearest first and
        alternating, before then after. Order is (effective time, node id); the anchor
        itself is never included. One round trip where the backend allows it. Raises
        IndexUnavailableError."""
        ...

    def delete(self, owner: OwnerKey, node_ids: Sequence[str]) -> None:
        """Remove the owner's documents of these nodes; ids not indexed are skipped.
        Raises IndexUnavailableError."""
        ...

    def delete_owner(self, owner: OwnerKey) -> int:
        """Remove every document of the owner; how many were removed. Raises
        IndexUnavailableError."""
        ...


class WorkQueue(Protocol):
    """Where pending work is announced after commit; losing a message loses nothing."""

    def enqueue(self, items: Sequence[WorkItem]) -> None: ...


class UsageCounters(Protocol):
    """Per-tenant usage counters shared by every process of a deployment (request windows,
    retrievals per day, stored records and bytes). Each call is one atomic step."""

    def add_within(
        self,
        key: CounterKey,
        amounts: Mapping[str, int],
        caps: Mapping[str, int],
        *,
        expires_at: datetime | None,
    ) -> dict[str, int] | None:
        """Add each of `amounts` (negative to take away) to the field of that name of one
        counter (fields start at 0), unless a field named in `caps` would pass its cap. The
        new values of the added fields, or None when refused, in which case nothing changed.
        `expires_at` lets the backend drop the counter after that time (a window's); a key is
        never reused after its expiry."""
        ...

    def read_counters(self, keys: Sequence[CounterKey]) -> dict[CounterKey, dict[str, int]]:
        """The fields of each counter that exists (absent ones are left out)."""
        ...


class TenantLimitsStore(Protocol):
    """The limits a service provider set for a tenant, replacing the deployment's defaults."""

    def get_tenant_limits(self, tenant_id: str) -> TenantLimits | None: ...

    def put_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> None: ...

    def delete_tenant_limits(self, tenant_id: str) -> bool:
        """Remove the tenant's own limits (the defaults apply again); False when it had none."""
        ...


class UploadStore(Protocol):
    """Where a large import's NDJSON file waits between the caller's upload and its split.

    Uploads are named by owner and import id (a UUID); another owner's or tenant's upload of
    the same id is another upload. The caller sends the file itself, to `create_upload`'s
    target; the service only reads it back, a byte range at a time, and deletes it."""

    def create_upload(
        self, owner: OwnerKey, import_id: str, *, size_bytes: int, expires_at: datetime
    ) -> UploadTarget:
        """Where to send exactly `size_bytes` until `expires_at`. A store refuses another size
        where it can (S3 checks the signed Content-Length; the embedded route counts bytes);
        the service checks `uploaded_size` before it reads either way."""
        ...

    def uploaded_size(self, owner: OwnerKey, import_id: str) -> int | None:
        """The size of the complete upload as stored; None while there is none."""
        ...

    def read_range(self, owner: OwnerKey, import_id: str, start: int, end: int) -> bytes:
        """Bytes `start` up to `end` (excluded) of the upload, all of them. NotFoundError
        when the upload is gone or shorter; StorageUnavailableError when the store fails."""
        ...

    def delete_upload(self, owner: OwnerKey, import_id: str) -> None:
        """Remove the upload; one already gone is no error."""
        ...


class ImportJobStore(Protocol):
    """Bulk-import job records, one per (tenant, owner, import id)."""

    def create_import(self, job: ImportJob) -> None:
        """Save a new job; ConflictError when the owner already has a job of that id."""
        ...

    def get_import(self, owner: OwnerKey, import_id: str) -> ImportJob | None: ...

    def save_import(self, job: ImportJob, *, replacing: ImportJob) -> None:
        """Replace the stored job by `job`; ConflictError when the stored one is no longer
        `replacing` (another writer saved progress first: read again and redo)."""
        ...

    def erase_owner(self, owner: OwnerKey) -> int:
        """Remove the owner's jobs (and chunks waiting to be committed) where this store keeps
        them apart from the ledger; how many jobs. 0 where the ledger's own erasure removes
        them (DynamoDB keeps them in the owner's partition)."""
        ...


class RankingProfileStore(Protocol):
    """An owner's ranking profiles (immutable once saved) and, per scope slot, the changes of
    which profile is active: the newest change is the slot's current state."""

    def create_profile(self, owner: OwnerKey, profile: RankingProfile) -> None:
        """Save a new profile; ConflictError when the owner already has one of that id."""
        ...

    def get_profile(self, owner: OwnerKey, profile_id: str) -> RankingProfile | None: ...

    def list_profiles(
        self, owner: OwnerKey, *, limit: int, after_id: str | None
    ) -> list[RankingProfile]:
        """Up to `limit` profiles with an id after `after_id`, in id order."""
        ...

    def current_states(self, owner: OwnerKey) -> list[RankingProfileState]:
        """The current state of each of the owner's slots that ever changed, in slot order."""
        ...

    def list_history(self, owner: OwnerKey, slot: str, *, limit: int) -> list[RankingProfileState]:
        """The slot's last `limit` changes, newest first (`prme.model.learning.scope_slot`)."""
        ...

    def save_state(
        self, owner: OwnerKey, state: RankingProfileState, *, replacing: str | None
    ) -> None:
        """Make `state` its slot's current state and add it to the slot's history, at once,
        only while the slot's current change is `replacing` (None: the slot never changed);
        ConflictError otherwise (another change came first), with nothing written."""
        ...

    def erase_owner(self, owner: OwnerKey) -> int:
        """Remove the owner's profiles and states where this store keeps them apart from the
        ledger; how many records. 0 where the ledger's erasure removes them (DynamoDB)."""
        ...


class ImportQueue(Protocol):
    """Where an import's planned chunks go to be committed; sending one again is harmless."""

    def send_chunks(self, chunks: Sequence[ImportChunkMessage]) -> None:
        """Hand over every chunk or raise (StorageUnavailableError): a caller that sees the
        error sends again, and chunks already committed are skipped by their digest."""
        ...


class UsageLog(Protocol):
    """Metered usage, one entry per operation; what an operator bills from.

    An entry's id is deterministic, so a retried operation records the same entry again:
    the log keeps the first one and skips the repeat (a conditional write), never counting
    an operation twice."""

    def record(self, entries: Sequence[UsageEntry]) -> None:
        """Save entries; an entry whose id its owner already has is skipped. Raises
        StorageUnavailableError (the engine logs it and goes on)."""
        ...

    def totals(self, tenant_id: str, query: UsageQuery) -> list[UsageTotal]:
        """The tenant's entries with `query.start <= at < query.end` (of one owner when
        `query.owner_ref` is set), summed per period and kind, in that order."""
        ...

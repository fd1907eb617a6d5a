"""Domain records kept in the ledger: sources, memory nodes, journal entries, work and credentials."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from prme.model.canonical import checksum
from prme.model.conditions import CONDITION_METADATA_KEY, ConditionState, stored_condition
from prme.model.enums import (
    CredentialRole,
    EpistemicType,
    LifecycleState,
    NodeType,
    Role,
    Scope,
    SourceType,
    WorkFailure,
    WorkKind,
    WorkStatus,
)

SPEAKER_METADATA_KEY = "prme_speaker_v1"
VALUE_BINDINGS_METADATA_KEY = "prme_value_bindings_v1"
# What an extractor derived a node from; only extraction writes it, so callers may not.
EXTRACTION_METADATA_KEY = "prme_extraction_v1"
# Where the organizer's decay starts from (values and time of the last store or
# reinforcement); only the organizer and reinforcement write it.
DECAY_METADATA_KEY = "prme_decay_v1"
RESERVED_METADATA_KEYS = frozenset(
    {
        SPEAKER_METADATA_KEY,
        VALUE_BINDINGS_METADATA_KEY,
        EXTRACTION_METADATA_KEY,
        CONDITION_METADATA_KEY,
        DECAY_METADATA_KEY,
    }
)


class OwnerKey(BaseModel):
    """The partition every record lives in: a tenant and one of its owners (end users)."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    owner_id: str


class Event(BaseModel):
    """An immutable source: exactly what the caller sent, with its digest."""

    model_config = ConfigDict(frozen=True)

    id: str
    tenant_id: str
    owner_id: str
    content: str
    content_sha256: str
    role: Role
    session_id: str | None = None
    scope: Scope = Scope.PERSONAL
    event_time: AwareDatetime | None = None
    ingested_at: AwareDatetime
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def effective_time(self) -> datetime:
        """When it happened if known, else when it was ingested."""
        return self.event_time or self.ingested_at

    @property
    def speaker(self) -> str | None:
        value = self.metadata.get(SPEAKER_METADATA_KEY)
        return value if isinstance(value, str) else None


class MemoryNode(BaseModel):
    """A typed memory derived from one or more events; its lifecycle only moves forward."""

    model_config = ConfigDict(frozen=True)

    id: str
    tenant_id: str
    owner_id: str
    node_type: NodeType
    content: str
    content_sha256: str
    scope: Scope
    session_id: str | None = None
    source_type: SourceType
    epistemic_type: EpistemicType
    confidence: float
    salience: float = 0.5
    lifecycle_state: LifecycleState
    event_time: AwareDatetime | None = None
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    created_at: AwareDatetime
    updated_at: AwareDatetime
    ttl_days: int | None = None
    expires_at: AwareDatetime | None = None
    evidence_refs: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def speaker(self) -> str | None:
        value = self.metadata.get(SPEAKER_METADATA_KEY)
        return value if isinstance(value, str) else None

    @property
    def effective_time(self) -> datetime:
        """When it happened if known, else when it was recorded: the one time order of records."""
        return self.event_time or self.created_at

    def is_expired(self, at: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= at

    @property
    def condition_state(self) -> ConditionState | None:
        """A conditional memory's latest condition state (unknown until evaluated); None for
        any other memory."""
        if self.epistemic_type is not EpistemicType.CONDITIONAL:
            return None
        evaluation = stored_condition(self.metadata)
        return ConditionState.UNKNOWN if evaluation is None else evaluation.state


# What a journal checksum covers. 1: operation, subject and payload (records written before
# issue 15 keep verifying). 2: every field but the checksum, so a record moved to another id,
# owner or time, or two records whose contents were swapped, fail as well.
LEGACY_JOURNAL_CHECKSUM = 1
JOURNAL_CHECKSUM_VERSION = 2


class JournalRecord(BaseModel):
    """An append-only, checksummed account of one mutating operation.

    The checksum is a plain digest, not a signature: it detects corruption and edits made
    without recomputing it, not a writer with access to the store who recomputes it."""

    model_config = ConfigDict(frozen=True)

    id: str
    tenant_id: str
    owner_id: str
    operation: str
    subject_id: str
    created_at: AwareDatetime
    payload: dict[str, Any]
    checksum: str
    checksum_version: int = LEGACY_JOURNAL_CHECKSUM
    # When the record stops being readable (retrieval receipts past their retention); the
    # DynamoDB table deletes it after that by TTL. Covered by the checksum
    # when set, left out of it when not, so records saved before it still verify.
    expires_at: AwareDatetime | None = None

    @classmethod
    def build(
        cls,
        *,
        record_id: str,
        owner: OwnerKey,
        operation: str,
        subject_id: str,
        created_at: datetime,
        payload: dict[str, Any],
        expires_at: datetime | None = None,
    ) -> JournalRecord:
        unsigned = cls(
            id=record_id,
            tenant_id=owner.tenant_id,
            owner_id=owner.owner_id,
            operation=operation,
            subject_id=subject_id,
            created_at=created_at,
            payload=payload,
            checksum="",
            checksum_version=JOURNAL_CHECKSUM_VERSION,
            expires_at=expires_at,
        )
        return unsigned.model_copy(update={"checksum": unsigned.expected_checksum()})

    def expected_checksum(self) -> str | None:
        """The checksum this record's content calls for; None for an unknown version."""
        if self.checksum_version == LEGACY_JOURNAL_CHECKSUM:
            return checksum(
                {
                    "operation": self.operation,
                    "subject_id": self.subject_id,
                    "payload": self.payload,
                }
            )
        if self.checksum_version == JOURNAL_CHECKSUM_VERSION:
            unsigned = {"checksum"} if self.expires_at else {"checksum", "expires_at"}
            return checksum(self.model_dump(mode="json", exclude=unsigned))
        return None

    def verify(self) -> bool:
        return self.expected_checksum() == self.checksum


class WorkItem(BaseModel):
    """Derived work saved with the write that needs it (transactional outbox)."""

    model_config = ConfigDict(frozen=True)

    id: str
    tenant_id: str
    owner_id: str
    kind: WorkKind
    event_id: str
    node_id: str
    status: WorkStatus = WorkStatus.PENDING
    attempts: int = 0
    last_error: str | None = None
    created_at: AwareDatetime
    updated_at: AwareDatetime
    # Times the sweeper announced the item again because it stayed pending (engine/work_dispatch).
    sweeps: int = 0

    # Every change of state is one of the methods below, each returning the changed copy; the
    # retry rule that picks between them is engine/work_retry.py.
    @classmethod
    def queued(
        cls,
        kind: WorkKind,
        *,
        work_id: str,
        owner: OwnerKey,
        event_id: str,
        node_id: str,
        now: datetime,
    ) -> WorkItem:
        """New pending work, saved in the same write as the record that needs it."""
        stamps = {"created_at": now, "updated_at": now}
        partition = owner.model_dump()
        return cls(id=work_id, kind=kind, event_id=event_id, node_id=node_id, **partition, **stamps)

    @property
    def owner(self) -> OwnerKey:
        return OwnerKey(tenant_id=self.tenant_id, owner_id=self.owner_id)

    def succeeded(self, now: datetime) -> WorkItem:
        return self.model_copy(update={"status": WorkStatus.DONE, "updated_at": now})

    def attempt_failed(self, reason: WorkFailure, now: datetime, *, final: bool) -> WorkItem:
        """One more attempt spent: failed for good when `final`, else pending for the next."""
        status = WorkStatus.FAILED if final else WorkStatus.PENDING
        return self.model_copy(
            update={
                "status": status,
                "attempts": self.attempts + 1,
                "last_error": reason,
                "updated_at": now,
            }
        )

    def failed(self, reason: WorkFailure, now: datetime) -> WorkItem:
        """Failed for good without another attempt (its source is gone, its retries spent)."""
        return self.model_copy(
            update={"status": WorkStatus.FAILED, "last_error": reason, "updated_at": now}
        )

    def revived(self, now: datetime, *, keep_sweeps: bool = False) -> WorkItem:
        """Pending again with a fresh set of attempts (and of announcements, unless kept)."""
        sweeps = self.sweeps if keep_sweeps else 0
        return self.model_copy(
            update={
                "status": WorkStatus.PENDING,
                "attempts": 0,
                "sweeps": sweeps,
                "last_error": None,
                "updated_at": now,
            }
        )

    def announced_again(self, now: datetime) -> WorkItem:
        """Counted as announced once more by the sweeper; `now` restarts its overdue clock."""
        return self.model_copy(update={"sweeps": self.sweeps + 1, "updated_at": now})


class Credential(BaseModel):
    """An API key as stored: only its hash, never the secret."""

    model_config = ConfigDict(frozen=True)

    key_id: str
    key_hash: str
    tenant_id: str
    owner_id: str | None
    role: CredentialRole
    label: str = ""
    created_at: AwareDatetime
    revoked_at: AwareDatetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class IdempotencyRecord(BaseModel):
    """Binds a caller's key to one owner, operation and exact request, and to its result."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    owner_id: str
    operation: str
    key: str
    request_sha256: str
    result: dict[str, Any]
    created_at: AwareDatetime
    expires_at: AwareDatetime


class StoreCommit(BaseModel):
    """Everything one direct store writes, committed in a single ledger transaction."""

    model_config = ConfigDict(frozen=True)

    event: Event
    node: MemoryNode
    journal: JournalRecord
    work: WorkItem
    idempotency: IdempotencyRecord | None = None
    # More derived work of the same source (an ingested message's extraction).
    extra_work: tuple[WorkItem, ...] = ()


class IngestCommit(BaseModel):
    """A fast-ingest batch: its events and their materialization work, in one transaction."""

    model_config = ConfigDict(frozen=True)

    events: tuple[Event, ...]
    work: tuple[WorkItem, ...]
    journal: JournalRecord
    idempotency: IdempotencyRecord | None = None


class MemoryEdge(BaseModel):
    """A typed link between two nodes of one owner (supersedes, alias_of, ...)."""

    model_config = ConfigDict(frozen=True)

    id: str
    tenant_id: str
    owner_id: str
    edge_type: str
    source_node_id: str
    target_node_id: str
    evidence_refs: tuple[str, ...] = ()
    created_at: AwareDatetime
    # True when a person confirmed the link (an accepted alias review), not a pattern.
    verified: bool = False
    # The journal record that created the link, when one operation did (a review).
    operation_id: str | None = None


class NodeChange(BaseModel):
    """Node state changes committed atomically with their audit record.

    Each updated node carries the exact state it replaces: the commit fails with a
    conflict when the stored node is no longer that state (optimistic concurrency)."""

    model_config = ConfigDict(frozen=True)

    updates: tuple[tuple[MemoryNode, MemoryNode], ...]  # (previous, new)
    journal: JournalRecord
    edges: tuple[MemoryEdge, ...] = ()
    work: tuple[WorkItem, ...] = ()
    idempotency: IdempotencyRecord | None = None
    # Nodes created by this change (extracted artifacts), and existing work it closes.
    new_nodes: tuple[MemoryNode, ...] = ()
    work_updates: tuple[WorkItem, ...] = ()

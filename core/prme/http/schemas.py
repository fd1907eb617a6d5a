"""HTTP request and response bodies, and the mapping from domain records to them."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from prme.engine import manage
from prme.engine.work_dispatch import ProcessingReport
from prme.model.bindings import VisibleValueBinding
from prme.model.enums import CredentialRole, LifecycleState, NodeType, ProcessingStatus, Role, Scope
from prme.model.imports import BulkImportInput
from prme.model.inputs import FastIngestInput, IngestInput, RetrieveInput, StoreInput
from prme.model.listings import (
    MAX_SEARCH_TEXT_CHARS,
    EventFilter,
    EventPage,
    NodeFilter,
    NodePage,
    SearchText,
)
from prme.model.portability import ImportBatch
from prme.model.records import Credential, Event, MemoryNode, WorkItem
from prme.model.uploads import UploadRequest
from prme.retrieval.results import (
    ContextBundle,
    ResponseSizeLimit,
    RetrievalMetrics,
    RetrievalResult,
)

USER_ID = Field(
    default=None,
    min_length=1,
    max_length=256,
    description="Whose memory. Omit to act for the authenticated owner.",
)
EVENT_ID = Field(description="The source event's id: the immutable record of what was sent")
PROCESSING_STATUS = Field(
    description="completed when the memory is searchable, pending while its indexing work "
    "waits or runs, failed when some of it failed"
)


STORE_EXAMPLE: dict[str, Any] = {
    "content": "Pay the rent from my joint account ending 0412.",
    "value_bindings": [
        {
            "reference": "rent_account",
            "kind": "bank_account",
            "presentation": "ending 0412",
            "lookup": "acct_7Hq2XK9d",
        }
    ],
    "node_type": "instruction",
    "session_id": "household",
    "event_time": "2024-03-02T18:30:00+00:00",
}


class StoreRequest(StoreInput):
    """POST /v1/store. Unknown fields (including the retired `namespace`) are rejected."""

    model_config = ConfigDict(json_schema_extra={"examples": [STORE_EXAMPLE]})

    user_id: str | None = USER_ID


class StoreResponse(BaseModel):
    """What a direct store saved: the source event and the memory node made from it."""

    event_id: str = EVENT_ID
    node_id: str | None = Field(description="The memory node made from the source")
    processing_status: ProcessingStatus = PROCESSING_STATUS


INGEST_EXAMPLE: dict[str, Any] = {
    "content": "Yesterday I adopted a cat called Miso.",
    "role": "user",
    "speaker": "Caroline",
    "session_id": "chat-2024-03-02",
    "event_time": "2024-03-02T18:30:00+00:00",
    "wait_for_extraction": False,
}


class IngestRequest(IngestInput):
    """POST /v1/ingest: a message kept verbatim, with memories extracted from it."""

    model_config = ConfigDict(json_schema_extra={"examples": [INGEST_EXAMPLE]})

    user_id: str | None = USER_ID


class IngestResponse(BaseModel):
    """What an ingest saved, and how far its indexing and extraction got."""

    event_id: str = EVENT_ID
    node_id: str | None = Field(description="The memory node that keeps the message itself")
    processing_status: ProcessingStatus = PROCESSING_STATUS
    extraction_status: ProcessingStatus = Field(
        description="completed when memories were extracted from the message, pending while "
        "extraction waits or runs, failed when it failed"
    )


FAST_INGEST_EXAMPLE: dict[str, Any] = {
    "items": [
        {
            "content": "Did you book the flight to Porto?",
            "role": "participant",
            "speaker": "Melanie",
            "session_id": "chat-2024-03-02",
            "event_time": "2024-03-02T18:29:00+00:00",
        },
        {
            "content": "Yes, I fly out on the 14th.",
            "speaker": "Caroline",
            "session_id": "chat-2024-03-02",
            "event_time": "2024-03-02T18:30:00+00:00",
        },
    ]
}


class FastIngestRequest(FastIngestInput):
    """POST /v1/ingest/fast: an ordered batch for one owner, validated before any I/O."""

    model_config = ConfigDict(json_schema_extra={"examples": [FAST_INGEST_EXAMPLE]})

    user_id: str | None = USER_ID


class FastIngestResponse(BaseModel):
    """The saved sources of a fast-ingest batch; their nodes are built by materialization."""

    event_ids: list[str] = Field(description="The source event ids, in the order of the items")
    accepted: int = Field(description="How many items were saved")


class MaterializationRequest(BaseModel):
    """POST /v1/materializations/process: run pending work for one owner within a time budget."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = USER_ID
    budget_ms: int | None = Field(
        default=None,
        ge=0,
        le=900_000,
        strict=True,
        description="Time budget in milliseconds; 0 only counts pending work",
    )


class MaterializationResponse(BaseModel):
    """What a materialization pass did and what is still waiting."""

    processed: int = Field(description="Work items this pass completed")
    pending: int = Field(description="Work items still waiting; call again until it is 0")
    failed: int = Field(description="Work items that failed")
    budget_ms: int | None = Field(
        default=None,
        description="The time the pass was given: the requested budget_ms, lowered to the pass's "
        "share of what was left of the request's own time (PRME_REQUEST_BUDGET_MS and, on AWS "
        "Lambda, the function's remaining time) when that was less; null when nothing bounded it",
    )
    budget_lowered: bool = Field(
        default=False,
        description="True when the requested budget_ms was more than the request could give; "
        "call again (or let the workers finish) for the work still pending",
    )

    @classmethod
    def of(
        cls, report: ProcessingReport, *, requested_ms: int | None, given_ms: int | None
    ) -> MaterializationResponse:
        return cls(
            processed=report.processed,
            pending=report.pending,
            failed=report.failed,
            budget_ms=given_ms,
            budget_lowered=requested_ms is not None
            and given_ms is not None
            and given_ms < requested_ms,
        )


class ReinforceRequest(BaseModel):
    """PUT /v1/nodes/{node_id}/reinforce: a memory was confirmed again."""

    model_config = ConfigDict(extra="forbid")

    evidence_id: UUID | None = Field(default=None, description="Source event confirming it")


class SupersedenceRequest(BaseModel):
    """POST /v1/supersedences: a newer memory replaces an outdated one."""

    model_config = ConfigDict(extra="forbid")

    old_node_id: UUID = Field(description="The outdated memory")
    new_node_id: UUID = Field(description="The memory that replaces it")
    evidence_id: UUID | None = Field(default=None, description="Source event of the change")
    user_id: str | None = USER_ID


RETRIEVE_EXAMPLE: dict[str, Any] = {
    "query": "When is Caroline flying to Porto?",
    "limit": 10,
    "token_budget": 1500,
    "reference_time": "2024-03-10T09:00:00+00:00",
    "filters": {"scope": "personal", "exclude_node_types": ["summary"]},
}


class RetrieveRequest(RetrieveInput):
    """POST /v1/retrieve: rank the owner's memories for a query and pack a context."""

    model_config = ConfigDict(json_schema_extra={"examples": [RETRIEVE_EXAMPLE]})

    user_id: str | None = USER_ID


class RetrieveResponse(BaseModel):
    """The ranked memories of a retrieval, its packed context and metrics."""

    results: list[RetrievalResult] = Field(description="The selected memories, best first")
    bundle: ContextBundle = Field(description="The packed context to answer from")
    value_bindings: list[VisibleValueBinding] = Field(
        description="Value bindings whose presentation appears in the packed context"
    )
    metrics: RetrievalMetrics = Field(
        description="Counts, limits and timings; metrics.request_id names the saved receipt"
    )
    size_limit: ResponseSizeLimit | None = Field(
        default=None,
        description="Present only when ranked records were left out to keep the response under "
        "the server's byte limit; absent when everything the limit and token budget allowed "
        "was returned",
    )


def _owned_fields(response: type[BaseModel], record: Event | MemoryNode) -> dict[str, Any]:
    """Each field of `response` read from the record's attribute of the same name; the
    record's owner is shown as `user_id`."""
    fields = {name: getattr(record, name) for name in response.model_fields if name != "user_id"}
    return {**fields, "user_id": record.owner_id}


class EventResponse(BaseModel):
    """A source event: what was sent, kept verbatim and never changed."""

    id: str = Field(description="The event's id")
    user_id: str = Field(description="The owner of the event")
    content: str = Field(description="The text as sent")
    content_sha256: str = Field(description="SHA-256 hex of the content")
    role: str = Field(description="Who wrote it: user, participant, assistant, tool or system")
    speaker: str | None = Field(description="Who said it, when given")
    session_id: str | None = Field(description="Conversation or session label, when given")
    scope: str = Field(description="Visibility scope")
    event_time: datetime | None = Field(description="When it happened or was said, when given")
    ingested_at: datetime = Field(description="When the server saved it")
    metadata: dict[str, Any] = Field(description="Free-form JSON sent with it")

    @classmethod
    def of(cls, event: Event) -> EventResponse:
        return cls.model_validate(_owned_fields(cls, event))


class NodeResponse(BaseModel):
    """A memory node: a typed memory derived from one or more source events."""

    id: str = Field(description="The node's id")
    user_id: str = Field(description="The owner of the memory")
    node_type: str = Field(description="Memory type, e.g. fact, preference, note")
    content: str = Field(description="The memory's text")
    content_sha256: str = Field(description="SHA-256 hex of the content")
    scope: str = Field(description="Visibility scope")
    session_id: str | None = Field(description="Session of its source, when given")
    speaker: str | None = Field(description="Who said it, when given")
    source_type: str = Field(description="Provenance class")
    epistemic_type: str = Field(description="How certain it is: observed, asserted, inferred, ...")
    confidence: float = Field(description="Confidence, 0 to 1")
    salience: float = Field(description="Importance, 0 to 1; reinforcing raises it")
    lifecycle_state: str = Field(
        description="tentative, stable, contested, superseded, deprecated or archived"
    )
    event_time: datetime | None = Field(description="When it happened, when known")
    valid_from: datetime | None = Field(description="Since when it holds")
    valid_to: datetime | None = Field(description="Until when it held; set when superseded")
    created_at: datetime = Field(description="When the node was made")
    updated_at: datetime = Field(description="When the node last changed")
    ttl_days: int | None = Field(description="Days from creation until it expires; null never")
    expires_at: datetime | None = Field(description="When it expires; null never")
    evidence_refs: list[str] = Field(description="Ids of the source events behind it")
    metadata: dict[str, Any] = Field(description="Free-form JSON")

    @classmethod
    def of(cls, node: MemoryNode) -> NodeResponse:
        return cls.model_validate(_owned_fields(cls, node))


class WorkItemResponse(BaseModel):
    """One piece of derived work of an event (indexing, materialization, extraction)."""

    id: str = Field(description="The work item's id")
    kind: str = Field(
        description="index_node, materialize_event, extract or alias_scan",
    )
    node_id: str = Field(description="The memory node the work is for")
    status: str = Field(description="pending, running, done or failed")
    attempts: int = Field(description="Attempts made so far")
    last_error: str | None = Field(description="Why the last attempt failed, when it did")
    updated_at: datetime = Field(description="When the item last changed")

    @classmethod
    def of(cls, item: WorkItem) -> WorkItemResponse:
        return cls.model_validate(item, from_attributes=True)


class ProcessingStatusResponse(BaseModel):
    """Whether an event's memory is searchable, with the work behind it."""

    event_id: str = EVENT_ID
    processing_status: ProcessingStatus = PROCESSING_STATUS
    work: list[WorkItemResponse] = Field(
        description="The event's materialization and indexing work items"
    )


class ErrorResponse(BaseModel):
    """An error body; it never repeats stored content or provider text."""

    model_config = ConfigDict(extra="allow")

    detail: str | list[dict[str, Any]] = Field(
        description="What went wrong; for a validation error, one object per rejected field"
    )
    error: str | None = Field(
        default=None,
        description="The error's stable code (not_found, conflict, storage_unavailable, "
        "embedding_model_missing, ...): errors that share a status differ here; absent on a "
        "validation error",
    )


class AcceptedErrorResponse(BaseModel):
    """A 503 body: the source was saved but its processing did not complete."""

    detail: str = Field(description="What happened and what to do")
    event_id: str = Field(description="The saved source event; inspect its status with this id")
    reason_code: str = Field(description="Why processing did not complete")
    accepted: bool = Field(default=True, description="True: the source was saved")


class ExtractionStatusResponse(BaseModel):
    """Whether memories were extracted from an ingested message, with the work behind it."""

    event_id: str = EVENT_ID
    extraction_status: ProcessingStatus = Field(
        description="completed when extraction finished, pending while it waits or runs, "
        "failed when it failed"
    )
    work: list[WorkItemResponse] = Field(description="The event's extraction work items")

    @classmethod
    def of(
        cls, event_id: str, status: ProcessingStatus, work: list[WorkItem]
    ) -> ExtractionStatusResponse:
        return cls(
            event_id=event_id,
            extraction_status=status,
            work=[WorkItemResponse.of(item) for item in work],
        )


_PAGE_LIMIT = Field(
    default=manage.DEFAULT_PAGE, ge=1, le=manage.MAX_PAGE, description="Most records per page"
)
_AFTER_ID = Field(
    default=None,
    description="next_after_id of the previous page; omit for the first page. Pages sort by id",
)
_NEXT_AFTER_ID = Field(
    description="Pass as after_id for the next page; null when no record follows. A filtered "
    "page may hold fewer records than the limit (even none) and still have a next page"
)


class NodeListQuery(BaseModel):
    """GET /v1/nodes: which of the owner's memory nodes to list."""

    model_config = ConfigDict(extra="forbid")

    limit: int = _PAGE_LIMIT
    after_id: UUID | None = _AFTER_ID
    node_type: NodeType | None = Field(default=None, description="Only nodes of this type")
    lifecycle_state: LifecycleState | None = Field(
        default=None, description="Only nodes in this state (archived or superseded included)"
    )
    scope: Scope | None = Field(default=None, description="Only nodes of this scope")
    session_id: str | None = Field(
        default=None, min_length=1, max_length=256, description="Only nodes of this session"
    )
    include_inactive: bool = Field(
        default=False,
        description="Also list superseded, deprecated and archived nodes (left out by default)",
    )
    since: AwareDatetime | None = Field(
        default=None,
        description="Only nodes whose time is at or after this: the event time of what they "
        "say when known, else when the node was created",
    )
    until: AwareDatetime | None = Field(
        default=None,
        description="Only nodes whose time (as for since) is before this",
    )
    text: SearchText | None = Field(
        default=None,
        description=f"Only nodes whose content contains this text, ignoring case (1 to "
        f"{MAX_SEARCH_TEXT_CHARS} characters, no control characters; matched literally)",
    )
    user_id: str | None = USER_ID

    def node_filter(self) -> NodeFilter:
        return NodeFilter.model_validate(self.model_dump(exclude={"limit", "after_id", "user_id"}))


class EventListQuery(BaseModel):
    """GET /v1/events: which of the owner's source events to list."""

    model_config = ConfigDict(extra="forbid")

    limit: int = _PAGE_LIMIT
    after_id: UUID | None = _AFTER_ID
    session_id: str | None = Field(
        default=None, min_length=1, max_length=256, description="Only events of this session"
    )
    role: Role | None = Field(default=None, description="Only events written in this role")
    since: AwareDatetime | None = Field(
        default=None, description="Only events that happened at or after this time"
    )
    until: AwareDatetime | None = Field(
        default=None, description="Only events that happened before this time"
    )
    text: SearchText | None = Field(
        default=None,
        description=f"Only events whose verbatim content contains this text, ignoring case (1 "
        f"to {MAX_SEARCH_TEXT_CHARS} characters, no control characters; matched literally)",
    )
    user_id: str | None = USER_ID

    def event_filter(self) -> EventFilter:
        return EventFilter.model_validate(self.model_dump(exclude={"limit", "after_id", "user_id"}))


class NodePageResponse(BaseModel):
    """One page of the owner's memory nodes, in node id order."""

    items: list[NodeResponse] = Field(description="The nodes of this page")
    next_after_id: str | None = _NEXT_AFTER_ID

    @classmethod
    def of(cls, page: NodePage) -> NodePageResponse:
        return cls(items=[NodeResponse.of(n) for n in page.items], next_after_id=page.next_after_id)


class EventPageResponse(BaseModel):
    """One page of the owner's source events, in event id order."""

    items: list[EventResponse] = Field(description="The events of this page")
    next_after_id: str | None = _NEXT_AFTER_ID

    @classmethod
    def of(cls, page: EventPage) -> EventPageResponse:
        return cls(
            items=[EventResponse.of(e) for e in page.items], next_after_id=page.next_after_id
        )


class KeyRequest(BaseModel):
    """POST /v1/keys: an owner key for one user of the operator's tenant."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(
        min_length=1, max_length=256, description="The user the new key acts for (only them)"
    )
    label: str = Field(
        default="", max_length=200, description="A note for operators, e.g. which service holds it"
    )


class KeyResponse(BaseModel):
    """An API key as listed: never its secret or its hash."""

    key_id: str = Field(description="The key's id; its secret starts with prme_<key_id>_")
    user_id: str | None = Field(description="The user an owner key acts for; null for operators")
    role: CredentialRole = Field(description="owner (one user) or operator (the whole tenant)")
    label: str = Field(description="The operator's note")
    created_at: datetime = Field(description="When the key was created")
    revoked_at: datetime | None = Field(description="When it was revoked; null while active")

    @classmethod
    def of(cls, credential: Credential) -> KeyResponse:
        return cls(
            key_id=credential.key_id,
            user_id=credential.owner_id,
            role=credential.role,
            label=credential.label,
            created_at=credential.created_at,
            revoked_at=credential.revoked_at,
        )


class KeyListResponse(BaseModel):
    """The keys of the operator's tenant."""

    items: list[KeyResponse] = Field(description="Every key, active and revoked")


class IssuedKeyResponse(KeyResponse):
    """A new key with its secret, shown this once."""

    secret: str = Field(
        description="Send it as `Authorization: Bearer <secret>`; it is not stored and cannot "
        "be shown again"
    )
    keyless_access_ended: bool = Field(
        description="True when this key ended the server's keyless local mode: from now on "
        "every request needs a key"
    )


class ImportRequest(ImportBatch):
    """POST /v1/import: a batch of an export file's records, for the owner of the call."""

    user_id: str | None = USER_ID


class BulkImportRequest(BulkImportInput):
    """POST /v1/imports: a bulk import of raw sources for one owner, committed in chunks."""

    model_config = ConfigDict(json_schema_extra={"examples": [FAST_INGEST_EXAMPLE]})

    user_id: str | None = USER_ID


class ImportUploadRequest(UploadRequest):
    """POST /v1/imports/uploads: open a bulk import for one owner's NDJSON file."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"size_bytes": 52_428_800}]})

    user_id: str | None = USER_ID

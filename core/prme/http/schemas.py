"""HTTP request and response bodies, and the mapping from domain records to them."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from prme.engine.work_dispatch import ProcessingReport
from prme.model.bindings import VisibleValueBinding
from prme.model.enums import ProcessingStatus
from prme.model.inputs import FastIngestInput, IngestInput, RetrieveInput, StoreInput
from prme.model.records import Event, MemoryNode, WorkItem
from prme.retrieval.results import (
    ContextBundle,
    ResponseSizeLimit,
    RetrievalMetrics,
    RetrievalResult,
)

USER_ID = Field(
    default=None, min_length=1, max_length=256, description="Owner; defaults to the key's owner"
)


class StoreRequest(StoreInput):
    """POST /v1/store. Unknown fields (including the retired `namespace`) are rejected."""

    user_id: str | None = USER_ID


class StoreResponse(BaseModel):
    event_id: str
    node_id: str | None
    processing_status: ProcessingStatus


class IngestRequest(IngestInput):
    """POST /v1/ingest: a message kept verbatim, with memories extracted from it."""

    user_id: str | None = USER_ID


class IngestResponse(BaseModel):
    event_id: str
    node_id: str | None
    processing_status: ProcessingStatus
    extraction_status: ProcessingStatus


class FastIngestRequest(FastIngestInput):
    """POST /v1/ingest/fast: an ordered batch for one owner, validated before any I/O."""

    user_id: str | None = USER_ID


class FastIngestResponse(BaseModel):
    event_ids: list[str]
    accepted: int


class MaterializationRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = USER_ID
    budget_ms: int | None = Field(
        default=None, ge=0, le=900_000, strict=True, description="0 only counts pending work"
    )


class MaterializationResponse(BaseModel):
    processed: int
    pending: int
    failed: int
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
    model_config = ConfigDict(extra="forbid")

    evidence_id: UUID | None = None


class SupersedenceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    old_node_id: UUID
    new_node_id: UUID
    evidence_id: UUID | None = None
    user_id: str | None = USER_ID


class RetrieveRequest(RetrieveInput):
    user_id: str | None = USER_ID


class RetrieveResponse(BaseModel):
    results: list[RetrievalResult]
    bundle: ContextBundle
    value_bindings: list[VisibleValueBinding]
    metrics: RetrievalMetrics
    size_limit: ResponseSizeLimit | None = Field(
        default=None,
        description="Present only when ranked records were left out to keep the response under "
        "the server's byte limit; absent when everything the limit and token budget allowed "
        "was returned",
    )


class EventResponse(BaseModel):
    id: str
    user_id: str
    content: str
    content_sha256: str
    role: str
    speaker: str | None
    session_id: str | None
    scope: str
    event_time: datetime | None
    ingested_at: datetime
    metadata: dict[str, Any]

    @classmethod
    def of(cls, event: Event) -> EventResponse:
        return cls(
            id=event.id,
            user_id=event.owner_id,
            content=event.content,
            content_sha256=event.content_sha256,
            role=event.role.value,
            speaker=event.speaker,
            session_id=event.session_id,
            scope=event.scope.value,
            event_time=event.event_time,
            ingested_at=event.ingested_at,
            metadata=event.metadata,
        )


class NodeResponse(BaseModel):
    id: str
    user_id: str
    node_type: str
    content: str
    content_sha256: str
    scope: str
    session_id: str | None
    speaker: str | None
    source_type: str
    epistemic_type: str
    confidence: float
    salience: float
    lifecycle_state: str
    event_time: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    created_at: datetime
    updated_at: datetime
    ttl_days: int | None
    expires_at: datetime | None
    evidence_refs: list[str]
    metadata: dict[str, Any]

    @classmethod
    def of(cls, node: MemoryNode) -> NodeResponse:
        return cls(
            id=node.id,
            user_id=node.owner_id,
            node_type=node.node_type.value,
            content=node.content,
            content_sha256=node.content_sha256,
            scope=node.scope.value,
            session_id=node.session_id,
            speaker=node.speaker,
            source_type=node.source_type.value,
            epistemic_type=node.epistemic_type.value,
            confidence=node.confidence,
            salience=node.salience,
            lifecycle_state=node.lifecycle_state.value,
            event_time=node.event_time,
            valid_from=node.valid_from,
            valid_to=node.valid_to,
            created_at=node.created_at,
            updated_at=node.updated_at,
            ttl_days=node.ttl_days,
            expires_at=node.expires_at,
            evidence_refs=list(node.evidence_refs),
            metadata=node.metadata,
        )


class WorkItemResponse(BaseModel):
    id: str
    kind: str
    node_id: str
    status: str
    attempts: int
    last_error: str | None
    updated_at: datetime

    @classmethod
    def of(cls, item: WorkItem) -> WorkItemResponse:
        return cls(
            id=item.id,
            kind=item.kind.value,
            node_id=item.node_id,
            status=item.status.value,
            attempts=item.attempts,
            last_error=item.last_error,
            updated_at=item.updated_at,
        )


class ProcessingStatusResponse(BaseModel):
    event_id: str
    processing_status: ProcessingStatus
    work: list[WorkItemResponse]


class ErrorResponse(BaseModel):
    model_config = ConfigDict(extra="allow")

    detail: str | list[dict[str, Any]]


class AcceptedErrorResponse(BaseModel):
    detail: str
    event_id: str
    reason_code: str
    accepted: bool = True


class ExtractionStatusResponse(BaseModel):
    event_id: str
    extraction_status: ProcessingStatus
    work: list[WorkItemResponse]

    @classmethod
    def of(
        cls, event_id: str, status: ProcessingStatus, work: list[WorkItem]
    ) -> ExtractionStatusResponse:
        return cls(
            event_id=event_id,
            extraction_status=status,
            work=[WorkItemResponse.of(item) for item in work],
        )

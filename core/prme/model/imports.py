"""Bulk imports: the input, the job record with its chunks and progress, and the chunk message.

An import's items are split into chunks the API decides (inline mode) or a splitter decides
once an uploaded file arrives (upload mode, status `awaiting_upload` until then). The job
keeps each chunk's sha256, so a consumer commits only chunks the service itself planned.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator

from prme.model.canonical import canonical_json, checksum
from prme.model.inputs import MAX_FAST_INGEST_ITEMS, FastIngestItem
from prme.model.records import OwnerKey

# An inline import's bounds: far below Lambda's 6 MB payload and the api function's 2 MB body
# limit (`input_policy.LAMBDA_MAX_BODY_BYTES`), so a valid import is never cut by transport.
MAX_IMPORT_ITEMS = 1_000
MAX_IMPORT_BYTES = 1_800_000
# One chunk's items as JSON: an SQS message holds 262,144 bytes; the envelope (ids, tenant,
# owner) is small, and the rest is margin. One item larger than this cannot travel alone.
MAX_CHUNK_BYTES = 160_000
# Per-item errors a job keeps (the count of failed items is always exact).
MAX_REPORTED_ERRORS = 100


# Characters a queue message may not hold raw (SQS refuses U+FFFE and U+FFFF; JSON already
# escapes the controls below U+0020), written as JSON escapes, which only occur in strings.
_WIRE_ESCAPES = {0xFFFE: "\\ufffe", 0xFFFF: "\\uffff"}


def wire_json(value: Any) -> str:
    """Canonical JSON that every queue accepts as a message body."""
    return canonical_json(value).translate(_WIRE_ESCAPES)


def item_json(item: FastIngestItem) -> dict[str, Any]:
    """An item as it travels and is digested: the fields the sender set, in JSON form."""
    return item.model_dump(mode="json", exclude_unset=True)


def item_bytes(item: FastIngestItem) -> int:
    return len(wire_json(item_json(item)).encode("utf-8"))


def chunk_digest(items: Sequence[FastIngestItem]) -> str:
    """The sha256 of a chunk's items, the same from the models the API validated and from
    the models a consumer parsed out of the message."""
    return checksum([item_json(item) for item in items])


def split_into_chunks(items: Sequence[FastIngestItem]) -> list[list[FastIngestItem]]:
    """Consecutive chunks, in order, each of at most `MAX_FAST_INGEST_ITEMS` items (one ledger
    transaction) and `MAX_CHUNK_BYTES` bytes (one queue message). Deterministic: the same
    items always give the same chunks. An item past `MAX_CHUNK_BYTES` is refused earlier."""
    chunks: list[list[FastIngestItem]] = []
    current: list[FastIngestItem] = []
    size = 0
    for item in items:
        weight = item_bytes(item) + 1  # the comma between items
        if current and (len(current) >= MAX_FAST_INGEST_ITEMS or size + weight > MAX_CHUNK_BYTES):
            chunks.append(current)
            current, size = [], 0
        current.append(item)
        size += weight
    if current:
        chunks.append(current)
    return chunks


class BulkImportInput(BaseModel):
    """The items of an inline import, validated whole before anything is written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    items: list[FastIngestItem] = Field(
        min_length=1,
        description=f"Up to {MAX_IMPORT_ITEMS} raw sources (the items of POST /v1/ingest/fast), "
        f"at most {MAX_IMPORT_BYTES} bytes as JSON and {MAX_CHUNK_BYTES} bytes each, kept in "
        "this order",
    )

    @field_validator("items")
    @classmethod
    def _fits_an_import(cls, items: list[FastIngestItem]) -> list[FastIngestItem]:
        if len(items) > MAX_IMPORT_ITEMS:
            raise ValueError(f"at most {MAX_IMPORT_ITEMS} items fit one inline import")
        total = 0
        for index, item in enumerate(items):
            size = item_bytes(item)
            if size > MAX_CHUNK_BYTES:
                raise ValueError(
                    f"item {index} is {size} bytes as JSON; an import item may have at most "
                    f"{MAX_CHUNK_BYTES} (store it with POST /v1/store)"
                )
            total += size
        if total > MAX_IMPORT_BYTES:
            raise ValueError(f"the items must be at most {MAX_IMPORT_BYTES} bytes as JSON")
        return items


class ImportMode(StrEnum):
    """Where an import's items come from: the request itself, or an uploaded file."""

    INLINE = "inline"
    UPLOAD = "upload"


class ImportStatus(StrEnum):
    """Where an import stands; a finished one is completed, completed_with_errors or failed."""

    # Upload mode: the job exists, the file has not been split into chunks yet.
    AWAITING_UPLOAD = "awaiting_upload"
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    COMPLETED_WITH_ERRORS = "completed_with_errors"
    # An import that can never finish (an uploaded file that cannot be split).
    FAILED = "failed"


FINISHED = frozenset(
    {ImportStatus.COMPLETED, ImportStatus.COMPLETED_WITH_ERRORS, ImportStatus.FAILED}
)


class ImportItemError(BaseModel):
    """Why one item of an import was not saved; never its content."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item_index: int = Field(ge=0, description="The item's position in the import, from 0")
    error: str = Field(description="The error code, as in error responses")
    message: str = Field(description="What went wrong, without the item's content")
    line: int | None = Field(
        default=None,
        ge=1,
        description="Upload mode: the item's line in the uploaded file, from 1 (every "
        "non-blank line is an item position)",
    )


class ImportChunk(BaseModel):
    """One planned chunk: which items, their digest, and what committing it gave."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first_item: int = Field(ge=0)
    item_count: int = Field(ge=1, le=MAX_FAST_INGEST_ITEMS)
    sha256: str = Field(min_length=64, max_length=64)
    done: bool = False
    accepted: int = 0
    failed: int = 0


def plan_chunks(chunks: Sequence[Sequence[FastIngestItem]]) -> tuple[ImportChunk, ...]:
    """The job's record of chunks decided elsewhere (inline split or an uploaded file's)."""
    planned: list[ImportChunk] = []
    first = 0
    for items in chunks:
        planned.append(
            ImportChunk(first_item=first, item_count=len(items), sha256=chunk_digest(items))
        )
        first += len(items)
    return tuple(planned)


class ImportJob(BaseModel):
    """An import's record: whose it is (from the authenticated key only), its chunks and progress.

    `version` grows with every saved change; a store replaces a job only over the version it
    read, so two consumers recording chunks at once never lose one another's progress."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    import_id: str
    tenant_id: str
    owner_id: str
    mode: ImportMode
    status: ImportStatus
    created_at: datetime
    updated_at: datetime
    # The digest of the request behind an Idempotency-Key (a replay must match it).
    request_sha256: str
    idempotency_key: str | None = None
    item_count: int = 0
    chunks: tuple[ImportChunk, ...] = ()
    errors: tuple[ImportItemError, ...] = ()
    version: int = 0
    # Upload mode: the size the file was declared with, and how many of its lines the split
    # refused (each a failed item, never in a chunk).
    upload_bytes: int | None = None
    rejected: int = 0

    @property
    def owner(self) -> OwnerKey:
        return OwnerKey(tenant_id=self.tenant_id, owner_id=self.owner_id)

    @property
    def chunks_done(self) -> int:
        return sum(1 for chunk in self.chunks if chunk.done)

    @property
    def items_accepted(self) -> int:
        return sum(chunk.accepted for chunk in self.chunks)

    @property
    def items_failed(self) -> int:
        return sum(chunk.failed for chunk in self.chunks) + self.rejected

    def with_chunks(self, chunks: tuple[ImportChunk, ...], now: datetime) -> ImportJob:
        """The job once its chunks are decided (upload mode, after the file arrived)."""
        if self.status is not ImportStatus.AWAITING_UPLOAD:
            raise ValueError(f"import {self.import_id} already has its chunks")
        return self.model_copy(
            update={
                "chunks": chunks,
                "item_count": sum(chunk.item_count for chunk in chunks),
                "status": ImportStatus.QUEUED if chunks else ImportStatus.COMPLETED,
                "updated_at": now,
                "version": self.version + 1,
            }
        )

    def with_chunk_done(
        self, index: int, accepted: int, errors: Sequence[ImportItemError], now: datetime
    ) -> ImportJob:
        chunks = list(self.chunks)
        chunks[index] = chunks[index].model_copy(
            update={"done": True, "accepted": accepted, "failed": len(errors)}
        )
        kept = sorted([*self.errors, *errors], key=lambda e: e.item_index)[:MAX_REPORTED_ERRORS]
        job = self.model_copy(
            update={
                "chunks": tuple(chunks),
                "errors": tuple(kept),
                "updated_at": now,
                "version": self.version + 1,
            }
        )
        return job.model_copy(update={"status": job.current_status()})

    def current_status(self) -> ImportStatus:
        if self.chunks_done < len(self.chunks):
            return ImportStatus.RUNNING if self.chunks_done else ImportStatus.QUEUED
        return ImportStatus.COMPLETED_WITH_ERRORS if self.items_failed else ImportStatus.COMPLETED


class ImportChunkMessage(BaseModel):
    """What the import queue carries: one planned chunk of one job. Nothing in it is believed
    until the job (read by tenant, owner and import id) lists this chunk with this digest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    import_id: str = Field(min_length=1, max_length=64)
    tenant_id: str = Field(min_length=1, max_length=128)
    owner_id: str = Field(min_length=1, max_length=256)
    chunk_index: int = Field(ge=0)
    items: list[FastIngestItem] = Field(min_length=1, max_length=MAX_FAST_INGEST_ITEMS)

    @classmethod
    def of(cls, job: ImportJob, index: int, items: Sequence[FastIngestItem]) -> Self:
        return cls(
            import_id=job.import_id,
            tenant_id=job.tenant_id,
            owner_id=job.owner_id,
            chunk_index=index,
            items=list(items),
        )

    @property
    def owner(self) -> OwnerKey:
        return OwnerKey(tenant_id=self.tenant_id, owner_id=self.owner_id)

    def body(self) -> str:
        """The message as sent: UTF-8 JSON of the items exactly as they were set."""
        return wire_json(
            {
                "import_id": self.import_id,
                "tenant_id": self.tenant_id,
                "owner_id": self.owner_id,
                "chunk_index": self.chunk_index,
                "items": [item_json(item) for item in self.items],
            }
        )


class BulkImportStatus(BaseModel):
    """An import's state: its chunks, the items saved and failed, and why items failed."""

    import_id: str = Field(description="The import's id, for GET /v1/imports/{import_id}")
    mode: ImportMode = Field(description="inline: the items came in the request")
    status: ImportStatus = Field(
        description="queued, running, completed, completed_with_errors (some items were not "
        "saved: see errors), failed; awaiting_upload for an import whose file has not arrived"
    )
    items_total: int = Field(description="How many items the import holds")
    chunks_total: int = Field(description="How many chunks the items were split into")
    chunks_done: int = Field(description="How many chunks are committed")
    items_accepted: int = Field(description="How many items are saved as source events")
    items_failed: int = Field(description="How many items could not be saved")
    errors: list[ImportItemError] = Field(
        description=f"Why items failed, by item index (the first {MAX_REPORTED_ERRORS})"
    )
    created_at: datetime = Field(description="When the import was submitted")
    updated_at: datetime = Field(description="When the import last changed")

    @classmethod
    def of(cls, job: ImportJob) -> Self:
        return cls(
            import_id=job.import_id,
            mode=job.mode,
            status=job.status,
            items_total=job.item_count,
            chunks_total=len(job.chunks),
            chunks_done=job.chunks_done,
            items_accepted=job.items_accepted,
            items_failed=job.items_failed,
            errors=list(job.errors),
            created_at=job.created_at,
            updated_at=job.updated_at,
        )

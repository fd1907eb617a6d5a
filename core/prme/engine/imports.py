"""Bulk imports: plan a job and its chunks, commit a chunk the job vouches for, report progress.

The tenant and owner of a job come from the authenticated caller only. A chunk message is
believed only when the job stored under its (tenant, owner, import id) lists a chunk of that
index with the same sha256: whoever can write to the queue can at most resend a chunk the
service planned. Each chunk commits through fast ingest under a key derived from the import
id and chunk index, so a redelivered chunk replays instead of writing again, and its progress
is counted once.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prme.engine.deps import EngineDeps
from prme.engine.erase import erasure_began_after
from prme.engine.idempotency import request_digest
from prme.engine.ingest_fast import ingest_fast
from prme.errors import (
    ConflictError,
    ImportChunkRefusedError,
    InvalidRequestError,
    NotFoundError,
    OperationNotServedError,
    PayloadTooLargeError,
    PrmeError,
    RetryableStorageError,
    error_code,
)
from prme.model.imports import (
    FINISHED,
    BulkImportInput,
    ImportChunkMessage,
    ImportItemError,
    ImportJob,
    ImportMode,
    ImportStatus,
    chunk_digest,
    plan_chunks,
    split_into_chunks,
)
from prme.model.inputs import FastIngestInput, FastIngestItem
from prme.model.records import OwnerKey
from prme.ports import ImportJobStore, ImportQueue

SUBMIT_OPERATION = "submit_import"
# Import ids made from an Idempotency-Key: the same key of the same owner names the same job.
_IMPORT_NAMESPACE = uuid.UUID("5b0f7c3e-9d41-4c8a-a6f2-1e9b8d7c6a50")
# Consumers recording chunks of one job at once: each retry re-reads the job.
PROGRESS_ROUNDS = 20
# Errors a single item can cause whatever is retried: the item is reported, the rest commit.
_ITEM_ERRORS: tuple[type[PrmeError], ...] = (InvalidRequestError, PayloadTooLargeError)
_ITEM_MESSAGES = {
    "payload_too_large": "The item is larger than the store accepts",
}
_ITEM_MESSAGE = "The item was refused when it was saved"


@dataclass(frozen=True)
class ChunkOutcome:
    job: ImportJob | None
    # Already counted before this delivery (a redelivery): nothing was written.
    replayed: bool = False
    # The owner's erasure began after the import was submitted: nothing was written.
    dropped_for_erasure: bool = False
    accepted: int = 0
    failed: int = 0


def _ports(deps: EngineDeps) -> tuple[ImportJobStore, ImportQueue]:
    if deps.imports is None or deps.import_queue is None:
        raise OperationNotServedError("bulk imports are not configured for this backend")
    return deps.imports, deps.import_queue


def import_id_for_key(owner: OwnerKey, idempotency_key: str) -> str:
    return str(
        uuid.uuid5(_IMPORT_NAMESPACE, f"{owner.tenant_id}\x00{owner.owner_id}\x00{idempotency_key}")
    )


def chunk_key(import_id: str, index: int) -> str:
    """The Idempotency-Key a chunk commits under."""
    return str(uuid.uuid5(uuid.UUID(import_id), f"chunk-{index}"))


def _item_key(key: str, offset: int) -> str:
    return str(uuid.uuid5(uuid.UUID(key), f"item-{offset}"))


def submit_import(
    deps: EngineDeps,
    owner: OwnerKey,
    request: BulkImportInput,
    idempotency_key: str | None = None,
) -> ImportJob:
    """Save the job with its chunks, then hand the chunks to the import queue.

    With an Idempotency-Key, the same key and items return the same job (sending its
    unfinished chunks again, which heals a send lost after the job was saved); other items
    under the key are a ConflictError."""
    store, _ = _ports(deps)
    digest = request_digest(SUBMIT_OPERATION, request)
    chunks = split_into_chunks(request.items)
    job = save_new_job(
        deps,
        store,
        owner,
        digest,
        idempotency_key,
        mode=ImportMode.INLINE,
        status=ImportStatus.QUEUED,
        item_count=len(request.items),
        chunks=plan_chunks(chunks),
    )
    return send_chunks(deps, job, chunks)


def save_new_job(
    deps: EngineDeps,
    store: ImportJobStore,
    owner: OwnerKey,
    digest: str,
    idempotency_key: str | None,
    **fields: Any,
) -> ImportJob:
    """Save a new job of `owner` (`fields` say its mode, status and contents), or answer the
    job its Idempotency-Key saved before for the same request (`digest`); ConflictError when
    the key saved another request's job."""
    now = deps.clock.now()
    job = ImportJob(
        import_id=import_id_for_key(owner, idempotency_key) if idempotency_key else deps.ids(),
        tenant_id=owner.tenant_id,
        owner_id=owner.owner_id,
        created_at=now,
        updated_at=now,
        request_sha256=digest,
        idempotency_key=idempotency_key,
        **fields,
    )
    try:
        store.create_import(job)
    except ConflictError:
        existing = store.get_import(owner, job.import_id)
        if existing is None:
            raise
        if existing.request_sha256 != digest:
            raise ConflictError("the Idempotency-Key was used for another import") from None
        return existing
    return job


def attach_chunks(
    deps: EngineDeps, owner: OwnerKey, import_id: str, chunks: Sequence[Sequence[FastIngestItem]]
) -> ImportJob:
    """Decide the chunks of an import that awaited its upload, and send them: the one step an
    upload splitter calls once the file is read and split (`split_into_chunks`)."""
    store, _ = _ports(deps)
    job = get_import(deps, owner, import_id)
    updated = job.with_chunks(plan_chunks(chunks), deps.clock.now())
    store.save_import(updated, replacing=job)
    return send_chunks(deps, updated, chunks)


def send_chunks(
    deps: EngineDeps, job: ImportJob, chunks: Sequence[Sequence[FastIngestItem]]
) -> ImportJob:
    """Send the job's unfinished chunks; the job as stored afterwards (an embedded queue may
    have committed them already)."""
    store, queue = _ports(deps)
    messages = [
        ImportChunkMessage.of(job, index, items)
        for index, items in enumerate(chunks)
        if not job.chunks[index].done
    ]
    if messages:
        queue.send_chunks(messages)
    return store.get_import(job.owner, job.import_id) or job


def get_import(deps: EngineDeps, owner: OwnerKey, import_id: str) -> ImportJob:
    store, _ = _ports(deps)
    job = store.get_import(owner, import_id)
    if job is None:
        raise NotFoundError("import not found")
    return job


def _vouched(store: ImportJobStore, message: ImportChunkMessage) -> ImportJob:
    job = store.get_import(message.owner, message.import_id)
    if job is None:
        raise ImportChunkRefusedError("unknown_import")
    if message.chunk_index >= len(job.chunks):
        raise ImportChunkRefusedError("unknown_chunk")
    planned = job.chunks[message.chunk_index]
    if planned.item_count != len(message.items) or planned.sha256 != chunk_digest(message.items):
        raise ImportChunkRefusedError("chunk_mismatch")
    return job


def _item_error(index: int, exc: PrmeError) -> ImportItemError:
    code = error_code(type(exc))
    return ImportItemError(
        item_index=index, error=code, message=_ITEM_MESSAGES.get(code, _ITEM_MESSAGE)
    )


def _commit(
    deps: EngineDeps, owner: OwnerKey, key: str, first_item: int, items: list[FastIngestItem]
) -> tuple[int, list[ImportItemError]]:
    """Commit a chunk in one transaction; when an item makes that impossible, each item on
    its own (under keys derived from the chunk's), so the good ones are saved and the bad
    ones reported. Both ways replay on redelivery, since the same items fail the same way."""
    try:
        return ingest_fast(deps, owner, FastIngestInput(items=items), key).accepted, []
    except ConflictError:
        # The chunk committed before and its memories were deleted since: the owner's delete
        # stands, and the chunk counts as saved then.
        return len(items), []
    except _ITEM_ERRORS:
        pass
    accepted = 0
    errors: list[ImportItemError] = []
    for offset, item in enumerate(items):
        try:
            single = FastIngestInput(items=[item])
            accepted += ingest_fast(deps, owner, single, _item_key(key, offset)).accepted
        except ConflictError:
            accepted += 1
        except _ITEM_ERRORS as exc:
            errors.append(_item_error(first_item + offset, exc))
    return accepted, errors


def commit_import_chunk(deps: EngineDeps, message: ImportChunkMessage) -> ChunkOutcome:
    """Commit one chunk the job vouches for and count it in the job, once however often it
    is delivered. ImportChunkRefusedError for a chunk no job vouches for."""
    store, _ = _ports(deps)
    job = _vouched(store, message)
    index = message.chunk_index
    if job.chunks[index].done:
        return ChunkOutcome(job=job, replayed=True)
    owner = message.owner
    if erasure_began_after(deps, owner, job.created_at):
        # Asked after the import: the erasure must not be undone by it.
        return ChunkOutcome(job=job, dropped_for_erasure=True)
    planned = job.chunks[index]
    accepted, errors = _commit(
        deps, owner, chunk_key(job.import_id, index), planned.first_item, message.items
    )
    for _ in range(PROGRESS_ROUNDS):
        current = store.get_import(owner, job.import_id)
        if current is None:  # erased while this chunk committed
            return ChunkOutcome(job=None, accepted=accepted, failed=len(errors))
        if current.chunks[index].done:
            return ChunkOutcome(job=current, replayed=True)
        updated = current.with_chunk_done(index, accepted, errors, deps.clock.now())
        try:
            store.save_import(updated, replacing=current)
        except ConflictError:
            continue
        return ChunkOutcome(job=updated, accepted=accepted, failed=len(errors))
    # The chunk is committed; its redelivery replays it and records the progress then.
    raise RetryableStorageError("the import's progress could not be saved")


def is_finished(job: ImportJob) -> bool:
    return job.status in FINISHED

"""Bulk imports by upload: a job that waits for its NDJSON file, then the file split into chunks.

`open_upload_import` saves the job (`awaiting_upload`) and hands back where to send exactly
the declared number of bytes. `start_upload_import`, called once the file is there, checks
its size, splits it (`import_split`), records the chunks and the refused lines in the job and
hands every chunk to the import queue as an inline import's chunks are; the upload is deleted
once every chunk is handed over, since the chunk messages carry the items from then on. A start
that is repeated (a lost answer, a crash part way) splits the same file into the same chunks
and sends the ones not yet committed again.
"""

from __future__ import annotations

from datetime import timedelta

from prme.engine.deps import EngineDeps
from prme.engine.idempotency import request_digest
from prme.engine.import_split import (
    ImportSplit,
    SplitLimits,
    UploadChunk,
    chunk_items,
    split_upload,
)
from prme.engine.imports import get_import, save_new_job
from prme.errors import BadRequestError, ConflictError, OperationNotServedError
from prme.model.imports import (
    FINISHED,
    MAX_REPORTED_ERRORS,
    ImportChunk,
    ImportChunkMessage,
    ImportItemError,
    ImportJob,
    ImportMode,
    ImportStatus,
)
from prme.model.records import OwnerKey
from prme.model.uploads import UploadRequest, UploadTarget
from prme.ports import ImportJobStore, ImportQueue, UploadStore

OPEN_OPERATION = "open_import_upload"
# Long enough to send a large file on a slow line; short enough that a presigned URL outlives
# neither the credentials that signed it (a Lambda role's session) nor much of its purpose.
UPLOAD_LIFETIME = timedelta(hours=1)
# A job records every chunk in one item (DynamoDB: 400 KB): about 140 bytes each.
MAX_UPLOAD_CHUNKS = 2_000
# Chunk messages handed to the queue at a time, so a large file's items are never all held.
_SEND_BATCH = 10


def _ports(deps: EngineDeps) -> tuple[ImportJobStore, ImportQueue, UploadStore]:
    if deps.imports is None or deps.import_queue is None or deps.uploads is None:
        raise OperationNotServedError("imports by upload are not configured for this backend")
    return deps.imports, deps.import_queue, deps.uploads


def open_upload_import(
    deps: EngineDeps, owner: OwnerKey, request: UploadRequest, idempotency_key: str | None = None
) -> tuple[ImportJob, UploadTarget]:
    """Save a job awaiting its file and open the upload. The same Idempotency-Key with the
    same size gives the same job and a fresh target while the file has not been started."""
    store, _, uploads = _ports(deps)
    digest = request_digest(OPEN_OPERATION, request)
    job = save_new_job(
        deps,
        store,
        owner,
        digest,
        idempotency_key,
        mode=ImportMode.UPLOAD,
        status=ImportStatus.AWAITING_UPLOAD,
        upload_bytes=request.size_bytes,
    )
    if job.status is not ImportStatus.AWAITING_UPLOAD:  # a key's earlier job, since started
        raise ConflictError("the import has started; its upload is closed")
    target = uploads.create_upload(
        owner,
        job.import_id,
        size_bytes=request.size_bytes,
        expires_at=deps.clock.now() + UPLOAD_LIFETIME,
    )
    return job, target


def start_upload_import(
    deps: EngineDeps, owner: OwnerKey, import_id: str, limits: SplitLimits | None = None
) -> ImportJob:
    """Split the uploaded file and hand its chunks over; the job as stored afterwards.

    BadRequestError (nothing changes, the upload stays open) when the file has not arrived or
    is not the declared size; a file with too many bad lines or items fails the job."""
    store, _, uploads = _ports(deps)
    job = get_import(deps, owner, import_id)
    if job.mode is not ImportMode.UPLOAD:
        raise ConflictError("This import's items came with it; there is no file to start")
    if job.status in FINISHED:
        return job
    size = uploads.uploaded_size(owner, import_id)
    if size is None:
        if job.status is ImportStatus.AWAITING_UPLOAD:
            raise BadRequestError("The file has not arrived; send it to the upload URL first")
        return job  # started before, every chunk handed over and the file deleted since
    if job.status is ImportStatus.AWAITING_UPLOAD and size != job.upload_bytes:
        # Only S3's signature stops another size at the door; whatever arrived is not read.
        uploads.delete_upload(owner, import_id)
        raise BadRequestError(
            f"The uploaded file has {size} bytes, not the {job.upload_bytes} declared; "
            "nothing was read, send the file again"
        )
    split = split_upload(
        size, lambda start, end: uploads.read_range(owner, import_id, start, end), limits
    )
    if job.status is ImportStatus.AWAITING_UPLOAD:
        job = _record_split(deps, store, job, split)
    if job.status is not ImportStatus.FAILED:
        _hand_over(deps, job, split.chunks)
    uploads.delete_upload(owner, import_id)
    return store.get_import(owner, import_id) or job


def _record_split(
    deps: EngineDeps, store: ImportJobStore, job: ImportJob, split: ImportSplit
) -> ImportJob:
    """The job with its chunks and refused lines, saved over the job that awaited its file."""
    chunks = split.chunks
    errors = [
        ImportItemError(
            item_index=problem.item,
            error="invalid_request",
            message=f"{problem.reason}: {problem.detail}",
            line=problem.line,
        )
        for problem in split.problems[:MAX_REPORTED_ERRORS]
    ]
    failed = split.abandoned or len(chunks) > MAX_UPLOAD_CHUNKS
    if failed:
        status = ImportStatus.FAILED
    elif chunks:
        status = ImportStatus.QUEUED
    else:
        status = ImportStatus.COMPLETED_WITH_ERRORS if errors else ImportStatus.COMPLETED
    planned = tuple(
        ImportChunk(first_item=c.first_item, item_count=c.items, sha256=c.items_sha256)
        for c in chunks
    )
    updated = job.model_copy(
        update={
            "chunks": () if failed else planned,
            "item_count": split.lines,
            "rejected": len(split.problems),
            "errors": tuple(errors),
            "status": status,
            "updated_at": deps.clock.now(),
            "version": job.version + 1,
        }
    )
    try:
        store.save_import(updated, replacing=job)
    except ConflictError:
        # Another start recorded the same split first: carry on with what it saved.
        return get_import(deps, job.owner, job.import_id)
    return updated


def _hand_over(deps: EngineDeps, job: ImportJob, chunks: list[UploadChunk]) -> None:
    """Send every chunk the job lists and has not committed, a few at a time."""
    _, queue, uploads = _ports(deps)
    if len(chunks) != len(job.chunks) or any(
        c.items_sha256 != planned.sha256 for c, planned in zip(chunks, job.chunks, strict=True)
    ):
        raise BadRequestError("The uploaded file changed after its import started")
    batch: list[ImportChunkMessage] = []
    for chunk, planned in zip(chunks, job.chunks, strict=True):
        if planned.done:
            continue
        data = uploads.read_range(job.owner, job.import_id, chunk.start, chunk.end)
        batch.append(ImportChunkMessage.of(job, chunk.index, chunk_items(data, chunk)))
        if len(batch) >= _SEND_BATCH:
            queue.send_chunks(batch)
            batch = []
    if batch:
        queue.send_chunks(batch)

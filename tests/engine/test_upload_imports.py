"""Bulk imports by upload on every backend: a job awaiting its file, the file sent as a caller
sends it (a real PUT to S3's presigned URL on the local AWS), split, chunks committed once,
bad lines reported by their line, and the file deleted once its chunks are handed over."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from prme.backends.memory import RecordingImportQueue
from prme.engine import import_uploads
from prme.engine.import_uploads import open_upload_import, start_upload_import
from prme.engine.service import MemoryEngine
from prme.errors import BadRequestError, ConflictError, NotFoundError, StorageUnavailableError
from prme.model.imports import ImportChunkMessage, ImportMode, ImportStatus
from prme.model.uploads import UploadRequest
from tests.harness.engines import ALICE, BOB, Harness, embedded_harness, memory_harness
from tests.harness.uploads import (
    UploadBackend,
    embedded_uploads,
    memory_uploads,
    s3_uploads,
    upload_bucket,
)


@pytest.fixture(params=["memory", "embedded", "aws"])
def backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Harness, UploadBackend]]:
    if request.param == "memory":
        h = memory_harness()
        yield _with_uploads(h, memory_uploads(h.clock))
    elif request.param == "embedded":
        h = embedded_harness(tmp_path / "data")
        yield _with_uploads(h, embedded_uploads(tmp_path / "uploads", h.clock))
        h.index.close()  # type: ignore[attr-defined]
        h.ledger.close()  # type: ignore[attr-defined]
    else:
        from tests.harness.aws import aws_harness

        h = aws_harness(*request.getfixturevalue("aws_resources"))
        with upload_bucket(request.getfixturevalue("aws_endpoint")) as (client, bucket):
            yield _with_uploads(h, s3_uploads(client, bucket, h.clock))


def _with_uploads(h: Harness, uploads: UploadBackend) -> tuple[Harness, UploadBackend]:
    engine = MemoryEngine(replace(h.engine.deps, uploads=uploads.store))
    return replace(h, engine=engine), uploads


def ndjson(count: int, *, bad_lines: dict[int, bytes] | None = None) -> bytes:
    """`count` item lines (CRLF ends, a blank line now and then), with lines replaced by
    number (from 1) where `bad_lines` says."""
    lines = []
    for i in range(count):
        lines.append(json.dumps({"content": f"uploaded note {i}", "session_id": "up"}).encode())
        if i % 17 == 16:
            lines.append(b"")
    for number, text in (bad_lines or {}).items():
        lines[number - 1] = text
    return b"\r\n".join(lines) + b"\r\n"


def deliver_all(h: Harness, times: int = 1) -> None:
    for _ in range(times):
        for message in list(h.import_queue.sent):
            h.engine.commit_import_chunk(message)


def upload_and_start(h: Harness, uploads: UploadBackend, data: bytes) -> str:
    job, target = open_upload_import(h.engine.deps, ALICE, UploadRequest(size_bytes=len(data)))
    assert uploads.send(ALICE, job.import_id, target, data) == "stored"
    start_upload_import(h.engine.deps, ALICE, job.import_id)
    return job.import_id


def test_an_uploaded_file_is_split_committed_once_and_its_bad_line_reported(
    backend: tuple[Harness, UploadBackend],
) -> None:
    h, uploads = backend
    data = ndjson(150, bad_lines={60: b'{"content": "half a line'})
    job, target = open_upload_import(h.engine.deps, ALICE, UploadRequest(size_bytes=len(data)))
    assert (job.mode, job.status) == (ImportMode.UPLOAD, ImportStatus.AWAITING_UPLOAD)
    assert target.size_bytes == len(data)

    assert uploads.send(ALICE, job.import_id, target, data) == "stored"
    started = start_upload_import(h.engine.deps, ALICE, job.import_id)
    deliver_all(h, times=2)

    done = h.engine.get_import(ALICE, job.import_id)
    # 150 non-blank lines are 150 item positions; blank lines (after every 17th item) are
    # none, so line 60, with three blank lines before it, is item 56 (from 0).
    assert started.item_count == 150
    assert (done.status, done.items_accepted, done.items_failed) == (
        ImportStatus.COMPLETED_WITH_ERRORS,
        149,
        1,
    )
    ((error),) = done.errors
    assert (error.line, error.item_index) == (60, 56)
    assert error.message.startswith("not_json")
    assert h.engine.get_stats(ALICE).events == 149
    # The chunk messages carry the items: the file is not kept once they are handed over.
    assert uploads.store.uploaded_size(ALICE, job.import_id) is None


def test_starting_again_sends_nothing_twice_and_commits_nothing_twice(
    backend: tuple[Harness, UploadBackend],
) -> None:
    h, uploads = backend
    import_id = upload_and_start(h, uploads, ndjson(60))
    sent = len(h.import_queue.sent)

    again = start_upload_import(h.engine.deps, ALICE, import_id)
    deliver_all(h)

    assert len(h.import_queue.sent) == sent
    assert again.status is ImportStatus.QUEUED
    assert h.engine.get_import(ALICE, import_id).items_accepted == 60
    assert h.engine.get_stats(ALICE).events == 60


def test_a_file_of_another_size_is_refused_unread_and_may_be_sent_again(
    backend: tuple[Harness, UploadBackend],
) -> None:
    h, uploads = backend
    data = ndjson(5)
    job, target = open_upload_import(h.engine.deps, ALICE, UploadRequest(size_bytes=len(data) + 7))

    uploads.send(ALICE, job.import_id, target, data)
    if uploads.store.uploaded_size(ALICE, job.import_id) is not None:
        # Only where the store took it (moto does not check the signed length).
        with pytest.raises(BadRequestError, match="not the"):
            start_upload_import(h.engine.deps, ALICE, job.import_id)
    with pytest.raises(BadRequestError, match="has not arrived"):
        start_upload_import(h.engine.deps, ALICE, job.import_id)

    job, target = open_upload_import(h.engine.deps, ALICE, UploadRequest(size_bytes=len(data)))
    assert uploads.send(ALICE, job.import_id, target, data) == "stored"
    start_upload_import(h.engine.deps, ALICE, job.import_id)
    assert h.engine.get_import(ALICE, job.import_id).status is ImportStatus.QUEUED
    assert h.engine.get_stats(ALICE).events == 0


def test_a_key_gives_the_same_job_until_it_starts(backend: tuple[Harness, UploadBackend]) -> None:
    h, uploads = backend
    data, key = ndjson(3), str(uuid.uuid4())
    first, _ = open_upload_import(h.engine.deps, ALICE, UploadRequest(size_bytes=len(data)), key)
    again, target = open_upload_import(
        h.engine.deps, ALICE, UploadRequest(size_bytes=len(data)), key
    )
    assert again.import_id == first.import_id
    with pytest.raises(ConflictError):
        open_upload_import(h.engine.deps, ALICE, UploadRequest(size_bytes=len(data) + 1), key)

    assert uploads.send(ALICE, first.import_id, target, data) == "stored"
    start_upload_import(h.engine.deps, ALICE, first.import_id)
    with pytest.raises(ConflictError, match="started"):
        open_upload_import(h.engine.deps, ALICE, UploadRequest(size_bytes=len(data)), key)


def test_another_owner_can_neither_start_nor_read_the_import(
    backend: tuple[Harness, UploadBackend],
) -> None:
    h, uploads = backend
    data = ndjson(3)
    job, target = open_upload_import(h.engine.deps, ALICE, UploadRequest(size_bytes=len(data)))
    assert uploads.send(ALICE, job.import_id, target, data) == "stored"

    with pytest.raises(NotFoundError):
        start_upload_import(h.engine.deps, BOB, job.import_id)
    assert h.import_queue.sent == []
    assert uploads.store.uploaded_size(ALICE, job.import_id) == len(data)


def test_a_file_of_bad_lines_fails_the_import_and_is_deleted(
    backend: tuple[Harness, UploadBackend],
) -> None:
    h, uploads = backend
    data = b"not json\n" * 150

    import_id = upload_and_start(h, uploads, data)

    failed = h.engine.get_import(ALICE, import_id)
    assert failed.status is ImportStatus.FAILED
    assert len(failed.errors) == 100
    assert h.import_queue.sent == []
    assert uploads.store.uploaded_size(ALICE, import_id) is None


class QueueLostAfterFirstBatch:
    """An import queue whose second hand-over fails once, as SQS down mid-way would."""

    def __init__(self, inner: RecordingImportQueue) -> None:
        self.inner = inner
        self.calls = 0

    def send_chunks(self, chunks: Sequence[ImportChunkMessage]) -> None:
        self.calls += 1
        if self.calls == 2:
            raise StorageUnavailableError("queue unavailable")
        self.inner.send_chunks(chunks)


def test_a_start_cut_off_mid_way_resends_only_what_is_not_committed(
    backend: tuple[Harness, UploadBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    h, uploads = backend
    monkeypatch.setattr(import_uploads, "_SEND_BATCH", 2)
    data = ndjson(200)  # 5 chunks of 49 items at most: hand-overs of 2, 2 and 1
    job, target = open_upload_import(h.engine.deps, ALICE, UploadRequest(size_bytes=len(data)))
    assert uploads.send(ALICE, job.import_id, target, data) == "stored"
    flaky = MemoryEngine(
        replace(h.engine.deps, import_queue=QueueLostAfterFirstBatch(h.import_queue))
    )

    with pytest.raises(StorageUnavailableError):
        start_upload_import(flaky.deps, ALICE, job.import_id)
    deliver_all(h)  # the first two chunks commit
    h.import_queue.sent.clear()
    start_upload_import(h.engine.deps, ALICE, job.import_id)
    deliver_all(h)

    assert [m.chunk_index for m in h.import_queue.sent] == [2, 3, 4]
    done = h.engine.get_import(ALICE, job.import_id)
    assert (done.status, done.items_accepted) == (ImportStatus.COMPLETED, 200)
    assert h.engine.get_stats(ALICE).events == 200
    assert uploads.store.uploaded_size(ALICE, job.import_id) is None

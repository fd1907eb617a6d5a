"""Bulk imports on every backend: a job planned from the caller, chunks committed once, progress
counted once, forged chunks refused, poison items reported while the rest commit."""

from __future__ import annotations

import uuid

import pytest

from prme.engine.imports import ImportChunkRefusedError, chunk_key
from prme.errors import ConflictError, NotFoundError, StorageUnavailableError
from prme.model.imports import (
    MAX_CHUNK_BYTES,
    BulkImportInput,
    ImportChunkMessage,
    ImportJob,
    ImportMode,
    ImportStatus,
    split_into_chunks,
)
from prme.model.inputs import MAX_FAST_INGEST_ITEMS, FastIngestItem
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness
from tests.harness.imports import import_input, with_failing_progress, with_poison


def deliver_all(h: Harness, times: int = 1) -> None:
    for _ in range(times):
        for message in list(h.import_queue.sent):
            h.engine.commit_import_chunk(message)


def event_contents(h: Harness) -> list[str]:
    contents: list[str] = []
    after: str | None = None
    while True:
        page = h.engine.list_events(ALICE, limit=100, after_id=after)
        contents += [event.content for event in page.items]
        if page.next_after_id is None:
            return sorted(contents)
        after = page.next_after_id


def test_an_import_is_split_committed_once_and_reported(any_backend: Harness) -> None:
    h = any_backend
    job = h.engine.submit_import(ALICE, import_input(120))

    # Given 120 items: three chunks of at most one transaction each, all sent.
    assert (job.status, job.item_count, len(job.chunks)) == (ImportStatus.QUEUED, 120, 3)
    assert [c.item_count for c in job.chunks] == [49, 49, 22]
    assert [m.chunk_index for m in h.import_queue.sent] == [0, 1, 2]

    # When SQS delivers every chunk twice (at least once), nothing is written twice.
    deliver_all(h, times=2)

    done = h.engine.get_import(ALICE, job.import_id)
    assert (done.status, done.chunks_done, done.items_accepted, done.items_failed) == (
        ImportStatus.COMPLETED,
        3,
        120,
        0,
    )
    assert h.engine.get_stats(ALICE).events == 120
    assert len(set(event_contents(h))) == 120
    assert h.engine.process_materializations(ALICE, budget_ms=0).pending == 120


def test_the_same_key_returns_the_same_import_and_other_items_conflict(
    any_backend: Harness,
) -> None:
    h = any_backend
    key = str(uuid.uuid4())
    first = h.engine.submit_import(ALICE, import_input(3), idempotency_key=key)
    again = h.engine.submit_import(ALICE, import_input(3), idempotency_key=key)

    assert again.import_id == first.import_id
    deliver_all(h)
    assert h.engine.get_stats(ALICE).events == 3
    assert h.engine.get_import(ALICE, first.import_id).items_accepted == 3
    with pytest.raises(ConflictError):
        h.engine.submit_import(ALICE, import_input(4), idempotency_key=key)
    # Another owner's key space is its own.
    assert h.engine.submit_import(BOB, import_input(3), idempotency_key=key).import_id != (
        first.import_id
    )


def test_a_chunk_no_job_vouches_for_is_refused_and_writes_nothing(any_backend: Harness) -> None:
    h = any_backend
    job = h.engine.submit_import(ALICE, import_input(2))
    (sent,) = h.import_queue.sent
    tampered = sent.model_copy(
        update={"items": [FastIngestItem(content="injected words"), *sent.items[1:]]}
    )
    forged = [
        (tampered, "chunk_mismatch"),
        (sent.model_copy(update={"items": sent.items[:1]}), "chunk_mismatch"),
        (sent.model_copy(update={"chunk_index": 1}), "unknown_chunk"),
        (sent.model_copy(update={"import_id": str(uuid.uuid4())}), "unknown_import"),
        # The job is read under the message's tenant and owner: another's is not found.
        (sent.model_copy(update={"owner_id": BOB.owner_id}), "unknown_import"),
        (sent.model_copy(update={"tenant_id": OTHER_TENANT_ALICE.tenant_id}), "unknown_import"),
    ]
    for message, reason in forged:
        with pytest.raises(ImportChunkRefusedError) as refused:
            h.engine.commit_import_chunk(message)
        assert refused.value.reason == reason

    assert h.engine.get_stats(ALICE).events == 0
    assert h.engine.get_stats(BOB).events == 0
    assert h.engine.get_import(ALICE, job.import_id).status is ImportStatus.QUEUED


def test_a_poison_item_is_reported_and_the_rest_of_its_chunk_commits(any_backend: Harness) -> None:
    h = any_backend
    engine = with_poison(h.engine)
    job = engine.submit_import(ALICE, import_input(60, poison_at=frozenset({3, 55})))
    for _ in range(2):  # a redelivery counts nothing twice
        for message in h.import_queue.sent:
            engine.commit_import_chunk(message)

    done = engine.get_import(ALICE, job.import_id)
    assert (done.status, done.items_accepted, done.items_failed) == (
        ImportStatus.COMPLETED_WITH_ERRORS,
        58,
        2,
    )
    assert [(e.item_index, e.error) for e in done.errors] == [
        (3, "payload_too_large"),
        (55, "payload_too_large"),
    ]
    assert all("POISON" not in e.message and "kestrel" not in e.message for e in done.errors)
    assert h.engine.get_stats(ALICE).events == 58


def test_a_consumer_dying_after_its_commit_is_finished_exactly_by_redelivery(
    any_backend: Harness,
) -> None:
    h = any_backend
    engine, store = with_failing_progress(h.engine)
    job = engine.submit_import(ALICE, import_input(100))
    first, second, third = h.import_queue.sent
    engine.commit_import_chunk(first)
    # The second chunk's events commit, then its progress record is lost with the consumer.
    store.failing = True
    with pytest.raises(StorageUnavailableError):
        engine.commit_import_chunk(second)
    store.failing = False
    assert engine.get_import(ALICE, job.import_id).chunks_done == 1

    for message in (second, first, third):  # SQS redelivers what was not acknowledged
        engine.commit_import_chunk(message)

    done = engine.get_import(ALICE, job.import_id)
    assert (done.status, done.chunks_done, done.items_accepted) == (ImportStatus.COMPLETED, 3, 100)
    assert h.engine.get_stats(ALICE).events == 100


def test_an_import_is_read_only_by_its_owner(any_backend: Harness) -> None:
    h = any_backend
    job = h.engine.submit_import(ALICE, import_input(1))
    for stranger in (BOB, OTHER_TENANT_ALICE):
        with pytest.raises(NotFoundError):
            h.engine.get_import(stranger, job.import_id)
    with pytest.raises(NotFoundError):
        h.engine.get_import(ALICE, str(uuid.uuid4()))


def test_an_upload_import_gets_its_chunks_later_and_completes(any_backend: Harness) -> None:
    from prme.engine.imports import attach_chunks

    h = any_backend
    deps = h.engine.deps
    assert deps.imports is not None
    now = h.clock.now()
    waiting = ImportJob(
        import_id=str(uuid.uuid4()),
        tenant_id=ALICE.tenant_id,
        owner_id=ALICE.owner_id,
        mode=ImportMode.UPLOAD,
        status=ImportStatus.AWAITING_UPLOAD,
        created_at=now,
        updated_at=now,
        request_sha256="0" * 64,
    )
    deps.imports.create_import(waiting)
    items = import_input(70).items

    job = attach_chunks(deps, ALICE, waiting.import_id, split_into_chunks(items))
    deliver_all(h)

    assert (job.status, len(job.chunks), job.item_count) == (ImportStatus.QUEUED, 2, 70)
    done = h.engine.get_import(ALICE, waiting.import_id)
    assert (done.status, done.items_accepted) == (ImportStatus.COMPLETED, 70)
    with pytest.raises(ValueError, match="already has its chunks"):
        attach_chunks(deps, ALICE, waiting.import_id, split_into_chunks(items))


def test_chunks_fit_one_transaction_and_one_queue_message() -> None:
    big = "\U0001f426" * 9_000  # 36,000 bytes each in UTF-8
    items = [FastIngestItem(content=big) for _ in range(20)] + [
        FastIngestItem(content=f"small {i}") for i in range(100)
    ]
    chunks = split_into_chunks(items)
    assert [len(c) for c in chunks] == [4, 4, 4, 4, 49, 49, 6]
    assert all(len(c) <= MAX_FAST_INGEST_ITEMS for c in chunks)
    assert sum(len(c) for c in chunks) == 120
    assert chunks == split_into_chunks(items)  # deterministic
    for index, chunk in enumerate(chunks):
        body = ImportChunkMessage(
            import_id=str(uuid.uuid4()),
            tenant_id="t",
            owner_id="o" * 256,
            chunk_index=index,
            items=chunk,
        ).body()
        assert len(body.encode()) <= MAX_CHUNK_BYTES + 1_000
    # An item that cannot travel alone is refused before anything is written.
    with pytest.raises(ValueError, match="at most 160000"):
        BulkImportInput(items=[FastIngestItem(content="\U0001f426" * 45_000)])


def test_chunk_keys_are_stable_per_import_and_index() -> None:
    import_id = str(uuid.uuid4())
    assert chunk_key(import_id, 0) == chunk_key(import_id, 0)
    assert chunk_key(import_id, 0) != chunk_key(import_id, 1)


def test_an_erasure_removes_the_owners_imports(any_backend: Harness) -> None:
    h = any_backend
    job = h.engine.submit_import(ALICE, import_input(3))
    kept = h.engine.submit_import(BOB, import_input(1))
    deliver_all(h)

    h.engine.erase_owner(ALICE, confirm=ALICE.owner_id)

    with pytest.raises(NotFoundError):
        h.engine.get_import(ALICE, job.import_id)
    assert h.engine.get_import(BOB, kept.import_id).items_accepted == 1

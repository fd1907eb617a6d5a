"""Bulk imports end to end on the local AWS: the API's engine saves the job and sends its chunks
to the ingest queue, the consumer commits what SQS delivers (again and again), refuses what no
job vouches for, reports poison items, and finishes an import a dying consumer left part-done."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prme.model.imports import ImportStatus
from tests.harness.imports import import_input, with_failing_progress, with_poison
from tests.harness.lambda_events import ALICE, Deployed, FakeLambdaContext, sqs_records


def ingest_event(*bodies: str) -> dict[str, Any]:
    return sqs_records("sqs_ingest_batch.json", list(bodies), id_prefix="import")


def queued_chunks(deployed: Deployed) -> list[str]:
    """Every chunk message the ingest queue holds, taken off it."""
    bodies: list[str] = []
    while True:
        response = deployed.sqs.receive_message(
            QueueUrl=deployed.urls["ingest"], MaxNumberOfMessages=10
        )
        messages = response.get("Messages", [])
        if not messages:
            return bodies
        for message in messages:
            bodies.append(message["Body"])
            deployed.sqs.delete_message(
                QueueUrl=deployed.urls["ingest"], ReceiptHandle=message["ReceiptHandle"]
            )


def dead_letter_reasons(deployed: Deployed) -> list[str]:
    response = deployed.sqs.receive_message(
        QueueUrl=deployed.urls["ingest-dlq"], MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    )
    return sorted(
        m["MessageAttributes"]["prme_reason"]["StringValue"] for m in response.get("Messages", [])
    )


def consume(*bodies: str) -> dict[str, Any]:
    from functions import ingest_consumer

    response: dict[str, Any] = ingest_consumer.handler(ingest_event(*bodies), FakeLambdaContext())
    return response


def test_an_import_commits_through_sqs_once_however_often_chunks_arrive(
    deployed: Deployed,
) -> None:
    from functions import runtime

    engine = runtime.backend().engine
    job = engine.submit_import(ALICE, import_input(120))
    chunks = queued_chunks(deployed)
    assert len(chunks) == 3 == len(job.chunks)

    assert consume(*chunks) == {"batchItemFailures": []}
    # SQS delivers every chunk again (at least once): nothing is written or counted twice.
    assert consume(*reversed(chunks)) == {"batchItemFailures": []}

    done = engine.get_import(ALICE, job.import_id)
    assert (done.status, done.chunks_done, done.items_accepted, done.items_failed) == (
        ImportStatus.COMPLETED,
        3,
        120,
        0,
    )
    assert engine.get_stats(ALICE).events == 120
    assert engine.process_materializations(ALICE, budget_ms=0).pending == 120
    assert dead_letter_reasons(deployed) == []


def test_forged_tampered_and_old_messages_are_refused_into_the_dlq(deployed: Deployed) -> None:
    from functions import ingest_consumer, runtime

    ingest_consumer._dead_letter_url.cache_clear()  # this test's deployment, not an earlier one
    engine = runtime.backend().engine
    job = engine.submit_import(ALICE, import_input(2))
    (chunk,) = queued_chunks(deployed)
    message = json.loads(chunk)
    tampered = {**message, "items": [{"content": "injected secret words"}, message["items"][1]]}
    other_owner = {**message, "owner_id": "mallory"}
    forged = {**message, "import_id": "6f1d6a52-4c3e-4b8f-9a0d-2e1f3c4b5a69"}
    old_format = {
        "tenant_id": "acme",
        "owner_id": "alice",
        "idempotency_key": "0b7e2f4c-1d2e-4f3a-8b9c-0d1e2f3a4b5c",
        "body": {"items": [{"content": "secret words"}]},
    }
    bodies = [json.dumps(m) for m in (tampered, other_owner, forged, old_format)]

    # Nothing is retried: a message no job vouches for is parked in the DLQ at once.
    assert consume(*bodies, "not json at all") == {"batchItemFailures": []}

    reasons = dead_letter_reasons(deployed)
    assert reasons == [
        "invalid_message:import_id:missing",
        "invalid_message:not_json",
        "refused:chunk_mismatch",
        "refused:unknown_import",
        "refused:unknown_import",
    ]
    assert all("secret" not in reason for reason in reasons)
    assert engine.get_stats(ALICE).events == 0
    assert engine.get_import(ALICE, job.import_id).chunks_done == 0


def test_a_poison_item_is_reported_while_the_rest_commit(
    deployed: Deployed, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions import runtime

    built = runtime.backend()
    monkeypatch.setattr(built, "engine", with_poison(built.engine))
    job = built.engine.submit_import(ALICE, import_input(60, poison_at=frozenset({7})))
    chunks = queued_chunks(deployed)

    assert consume(*chunks) == {"batchItemFailures": []}
    assert consume(*chunks) == {"batchItemFailures": []}  # redelivered: counted once

    done = built.engine.get_import(ALICE, job.import_id)
    assert (done.status, done.items_accepted, done.items_failed) == (
        ImportStatus.COMPLETED_WITH_ERRORS,
        59,
        1,
    )
    assert [(e.item_index, e.error) for e in done.errors] == [(7, "payload_too_large")]
    assert built.engine.get_stats(ALICE).events == 59


def test_an_import_a_dying_consumer_left_part_done_is_finished_exactly(
    deployed: Deployed, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions import runtime

    built = runtime.backend()
    engine, store = with_failing_progress(built.engine)
    monkeypatch.setattr(built, "engine", engine)
    job = engine.submit_import(ALICE, import_input(120))
    first, second, third = queued_chunks(deployed)
    assert consume(first) == {"batchItemFailures": []}
    # The next chunk's events commit, then the consumer loses its progress write (as when
    # Lambda stops it there): SQS gets a failure and will deliver the chunk again.
    store.failing = True
    assert consume(second) == {"batchItemFailures": [{"itemIdentifier": "import-0"}]}
    store.failing = False
    assert engine.get_import(ALICE, job.import_id).chunks_done == 1

    assert consume(second, third, first) == {"batchItemFailures": []}

    done = engine.get_import(ALICE, job.import_id)
    assert (done.status, done.chunks_done, done.items_accepted) == (ImportStatus.COMPLETED, 3, 120)
    assert engine.get_stats(ALICE).events == 120

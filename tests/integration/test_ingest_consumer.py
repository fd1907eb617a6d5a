"""The SQS bulk-ingest consumer with real SQS payloads against the local AWS."""

from __future__ import annotations

import json
from typing import Any

from prme.model.enums import ProcessingStatus
from prme.model.inputs import RetrieveInput
from prme.model.listings import EventFilter
from tests.harness.lambda_events import (
    ALICE,
    Deployed,
    FakeLambdaContext,
    load_event,
    sqs_records,
    until_searchable,
)


def ingest_event(*bodies: str) -> dict[str, Any]:
    return sqs_records("sqs_ingest_batch.json", list(bodies), id_prefix="import")


def import_message(count: int, key: str = "0b7e2f4c-1d2e-4f3a-8b9c-0d1e2f3a4b5c") -> str:
    items = [
        {"content": f"imported memory {i} about kestrels", "session_id": "bulk"}
        for i in range(count)
    ]
    return json.dumps(
        {"tenant_id": "acme", "owner_id": "alice", "idempotency_key": key, "body": {"items": items}}
    )


def dead_letters(deployed: Deployed) -> list[dict[str, Any]]:
    response = deployed.sqs.receive_message(
        QueueUrl=deployed.urls["ingest-dlq"], MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    )
    messages: list[dict[str, Any]] = response.get("Messages", [])
    return messages


def test_the_sample_payload_imports_two_events(deployed: Deployed) -> None:
    from functions import ingest_consumer, runtime

    response = ingest_consumer.handler(load_event("sqs_ingest_batch.json"), FakeLambdaContext())
    assert response == {"batchItemFailures": []}
    engine = runtime.backend().engine
    assert engine.process_materializations(ALICE, budget_ms=0).pending == 2
    assert engine.process_materializations(ALICE).processed == 2
    assert dead_letters(deployed) == []


def test_large_import_is_split_and_redelivery_creates_no_duplicates(deployed: Deployed) -> None:
    from functions import ingest_consumer, runtime

    body = import_message(120)  # more than one transaction holds: split into 49 + 49 + 22
    assert ingest_consumer.handler(ingest_event(body), FakeLambdaContext()) == {
        "batchItemFailures": []
    }
    engine = runtime.backend().engine
    assert engine.process_materializations(ALICE, budget_ms=0).pending == 120
    # SQS delivers the same message again (at-least-once): nothing new is written.
    assert ingest_consumer.handler(ingest_event(body), FakeLambdaContext()) == {
        "batchItemFailures": []
    }
    assert engine.process_materializations(ALICE, budget_ms=0).pending == 120


def test_invalid_messages_go_to_the_dlq_with_a_sanitized_reason(deployed: Deployed) -> None:
    from functions import ingest_consumer

    naive_time = json.dumps(
        {
            "tenant_id": "acme",
            "owner_id": "alice",
            "idempotency_key": "0b7e2f4c-1d2e-4f3a-8b9c-0d1e2f3a4b5d",
            "body": {"items": [{"content": "secret words", "event_time": "2024-03-10T01:30:00"}]},
        }
    )
    wrong_owner = json.dumps(
        {
            "tenant_id": "acme",
            "owner_id": "alice",
            "idempotency_key": "0b7e2f4c-1d2e-4f3a-8b9c-0d1e2f3a4b5e",
            "body": {"user_id": "bob", "items": [{"content": "x"}]},
        }
    )
    event = ingest_event("not json at all", naive_time, wrong_owner)
    # Nothing is retried: a message that can never succeed is parked in the DLQ at once.
    assert ingest_consumer.handler(event, FakeLambdaContext()) == {"batchItemFailures": []}
    parked = dead_letters(deployed)
    reasons = sorted(m["MessageAttributes"]["prme_reason"]["StringValue"] for m in parked)
    assert reasons == [
        "invalid_message:body.items.0.event_time:timezone_aware",
        "invalid_message:not_json",
        "invalid_message:owner",
    ]
    assert all("secret words" not in reason for reason in reasons)


def test_messages_past_the_json_limits_go_to_the_dlq_at_once(deployed: Deployed) -> None:
    from functions import ingest_consumer

    ingest_consumer._dead_letter_url.cache_clear()  # this test's deployment, not an earlier one
    message = json.loads(import_message(1))
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    huge_integer = json.dumps(message)[:-1] + ', "n": ' + "9" * 5_000 + "}"
    nul_tenant = json.dumps({**message, "tenant_id": "acme\u0000"})
    event = ingest_event(deep, huge_integer, nul_tenant)

    # Before: the first two raised and were retried on every delivery; the third was written.
    assert ingest_consumer.handler(event, FakeLambdaContext()) == {"batchItemFailures": []}
    reasons = sorted(
        m["MessageAttributes"]["prme_reason"]["StringValue"] for m in dead_letters(deployed)
    )
    assert reasons == [
        "invalid_message:json_limits",
        "invalid_message:json_limits",
        "invalid_message:tenant_id:value_error",
    ]


def test_imported_events_keep_speaker_and_reach_completed_status(deployed: Deployed) -> None:
    from functions import ingest_consumer, runtime

    ingest_consumer.handler(load_event("sqs_ingest_batch.json"), FakeLambdaContext())
    engine = runtime.backend().engine
    engine.process_materializations(ALICE)
    hits = until_searchable(
        lambda: engine.retrieve(ALICE, RetrieveInput(query="Imported note")).results,
        lambda found: len(found) == 2,
    )
    assert {h.content for h in hits} == {"Imported note one", "Imported note two"}
    assert {h.content: h.speaker for h in hits}["Imported note two"] == "Caroline"
    for hit in hits:
        status, _ = engine.get_processing_status(ALICE, hit.evidence_refs[0])
        assert status is ProcessingStatus.COMPLETED


def test_a_redelivered_import_whose_memories_were_deleted_is_parked_not_rewritten(
    deployed: Deployed,
) -> None:
    from functions import ingest_consumer, runtime

    ingest_consumer._dead_letter_url.cache_clear()
    body = import_message(2, key="0b7e2f4c-1d2e-4f3a-8b9c-0d1e2f3a4b60")
    assert ingest_consumer.handler(ingest_event(body), FakeLambdaContext()) == {
        "batchItemFailures": []
    }
    engine = runtime.backend().engine
    for event in engine.list_events(ALICE, EventFilter()).items:
        engine.delete_memory(ALICE, event.id)

    # SQS delivers it again: the owner's delete stands, and the message is not retried forever.
    assert ingest_consumer.handler(ingest_event(body), FakeLambdaContext()) == {
        "batchItemFailures": []
    }
    assert engine.list_events(ALICE, EventFilter()).items == []
    reasons = [m["MessageAttributes"]["prme_reason"]["StringValue"] for m in dead_letters(deployed)]
    assert reasons == ["idempotency_conflict"]


def test_an_import_queued_before_its_owner_was_erased_is_dropped_without_a_retry(
    deployed: Deployed,
) -> None:
    from functions import ingest_consumer, runtime

    engine = runtime.backend().engine
    # The sample record was sent (SentTimestamp) before now, when alice is erased.
    receipt = engine.erase_owner(ALICE, confirm=ALICE.owner_id)
    assert receipt.complete

    response = ingest_consumer.handler(ingest_event(import_message(3)), FakeLambdaContext())

    assert response == {"batchItemFailures": []}
    assert engine.get_stats(ALICE).events == 0
    assert dead_letters(deployed) == []

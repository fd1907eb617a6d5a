"""Lambda entry points invoked in-process with real event payloads against the local AWS."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prme.backends.aws.resources import index_name
from prme.engine.work_refs import WorkRef
from prme.model.enums import NodeType, ProcessingStatus, WorkFailure
from prme.model.inputs import StoreInput
from prme.operations import OPERATIONS
from tests.harness.lambda_events import (
    ALICE,
    Deployed,
    FakeLambdaContext,
    load_event,
    pending_store,
    sqs_event,
)


def api_call(
    name: str, *, key: str | None, path: str | None = None, body: dict[str, Any] | None = None
) -> tuple[int, dict[str, Any]]:
    from functions import api

    event = load_event(name)
    if key is not None:
        event["headers"]["authorization"] = f"Bearer {key}"
    if path is not None:
        event["rawPath"] = path
        event["requestContext"]["http"]["path"] = path
    if body is not None:
        event["body"] = json.dumps(body)
    response = api.handler(event, FakeLambdaContext())
    return response["statusCode"], json.loads(response["body"])


def test_api_stores_and_reads_through_api_gateway_events(deployed: Deployed) -> None:
    status, stored = api_call("apigw_v2_store.json", key=deployed.alice_key)
    assert status == 200
    assert stored["processing_status"] == "completed"
    status, event = api_call(
        "apigw_v2_get_event.json", key=deployed.alice_key, path=f"/v1/events/{stored['event_id']}"
    )
    assert status == 200
    assert event["content"] == "I moved to Lisbon in May."
    assert event["user_id"] == "alice"


def test_api_auth_and_not_found(deployed: Deployed) -> None:
    status, body = api_call("apigw_v2_store.json", key=None)
    assert status == 401
    assert body == {"detail": "Missing or invalid API key", "error": "authentication"}
    status, _ = api_call("apigw_v2_get_event.json", key=deployed.alice_key)
    assert status == 404
    status, _ = api_call(
        "apigw_v2_store.json", key=deployed.alice_key, body={"content": "x", "user_id": "bob"}
    )
    assert status == 403


def test_api_serves_mcp_from_the_same_function(deployed: Deployed) -> None:
    status, reply = api_call("apigw_v2_mcp.json", key=deployed.alice_key)
    assert status == 200
    stored = reply["result"]["structuredContent"]
    assert stored["processing_status"] == "completed"
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    status, reply = api_call("apigw_v2_mcp.json", key=deployed.alice_key, body=listing)
    assert status == 200
    # As deployed (no PRME_MCP_TOOLS), the function lists the table's default tools.
    default_tools = {op.mcp.name for op in OPERATIONS if op.mcp is not None and op.mcp.default}
    assert {tool["name"] for tool in reply["result"]["tools"]} == default_tools
    read = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "memory_retrieve", "arguments": {"query": "Where did I move?"}},
    }
    status, reply = api_call("apigw_v2_mcp.json", key=deployed.alice_key, body=read)
    # The write is searchable at the index's next refresh (off on write, as deployed): the
    # call is served, its text the model's rendering and its JSON the structured content.
    found = reply["result"]["structuredContent"]
    text = reply["result"]["content"][0]["text"]
    assert text.endswith(f"request_id: {found['metrics']['request_id']}")
    status, reply = api_call("apigw_v2_mcp.json", key=None)
    assert status == 401
    assert reply["category"] == "unauthenticated"


def test_api_uses_the_request_id_as_correlation_id(deployed: Deployed) -> None:
    from functions.runtime import logger

    api_call("apigw_v2_store.json", key=deployed.alice_key)
    request_id = load_event("apigw_v2_store.json")["requestContext"]["requestId"]
    assert logger.get_correlation_id() == request_id


def test_materializer_processes_work_and_reports_partial_failures(deployed: Deployed) -> None:
    from functions import materializer, runtime

    result, work = pending_store("indexed by the materializer")
    event = sqs_event([WorkRef.of(work)], extra_bodies=("this is not a work message",))
    response = materializer.handler(event, FakeLambdaContext())
    # Only the unreadable message is reported failed; SQS redelivers it, then dead-letters it.
    assert response == {"batchItemFailures": [{"itemIdentifier": "msg-1"}]}
    engine = runtime.backend().engine
    assert engine.get_processing_status(ALICE, result.event_id)[0] is ProcessingStatus.COMPLETED
    # Redelivery of a processed message is a no-op, not a failure.
    again = materializer.handler(sqs_event([WorkRef.of(work)]), FakeLambdaContext())
    assert again == {"batchItemFailures": []}


def test_work_of_an_erased_owner_is_acknowledged_and_recreates_nothing(
    deployed: Deployed,
) -> None:
    from functions import materializer, runtime

    _, work = pending_store("a memory whose owner is erased before it is indexed")
    engine = runtime.backend().engine
    assert engine.erase_owner(ALICE, confirm=ALICE.owner_id).complete

    # Delivered after the erasure, on its first receive and on what would be its last.
    for receive_count in (1, 5):
        response = materializer.handler(
            sqs_event([WorkRef.of(work)], receive_count=receive_count), FakeLambdaContext()
        )
        assert response == {"batchItemFailures": []}
    stats = engine.get_stats(ALICE)
    assert (stats.events, stats.nodes, stats.pending_materializations) == (0, 0, 0)


def test_poison_work_fails_on_its_last_receive_and_shows_in_status(deployed: Deployed) -> None:
    from functions import materializer, runtime

    result, work = pending_store("a node the index keeps refusing")
    runtime.backend().clients.opensearch.indices.close(index=index_name(deployed.names.index_alias))
    try:
        first = materializer.handler(
            sqs_event([WorkRef.of(work)], receive_count=1), FakeLambdaContext()
        )
        assert first == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
        engine = runtime.backend().engine
        assert engine.get_processing_status(ALICE, result.event_id)[0] is ProcessingStatus.PENDING
        last = materializer.handler(
            sqs_event([WorkRef.of(work)], receive_count=5), FakeLambdaContext()
        )
        assert last == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
        status, items = engine.get_processing_status(ALICE, result.event_id)
        assert status is ProcessingStatus.FAILED
        assert items[0].last_error == "retries_exhausted"
    finally:
        runtime.backend().clients.opensearch.indices.open(
            index=index_name(deployed.names.index_alias)
        )


def _untouched_for(work: Any, seconds: int) -> None:
    """Make a pending work item look as if nothing had touched it for `seconds`."""
    from datetime import timedelta

    from functions import runtime

    earlier = work.updated_at - timedelta(seconds=seconds)
    runtime.backend().engine.deps.ledger.save_work(work.model_copy(update={"updated_at": earlier}))


def test_maintenance_announces_overdue_work_of_every_kind_once_its_queue_gave_up(
    deployed: Deployed,
) -> None:
    from functions import maintenance, runtime
    from prme.backends.aws.resources import queue_specs
    from prme.engine.work_dispatch import MAX_SWEEPS
    from prme.model.inputs import IngestInput

    specs = queue_specs(deployed.names.queue_prefix)
    engine = runtime.backend().engine
    # Given materialization work whose send was lost, and two extractions
    _, materialize = pending_store("left pending by a lost send", lose_send=True)
    lost = engine.ingest(ALICE, IngestInput(content="We ran 12 km."))
    in_flight = engine.ingest(ALICE, IngestInput(content="We swam 2 km."))
    assert len(_received_refs(deployed, "extract")) == 2  # taken off the queue
    [extract] = engine.get_extraction_status(ALICE, lost.event_id)[1]
    [retried] = engine.get_extraction_status(ALICE, in_flight.event_id)[1]
    _untouched_for(materialize, specs["materialize"].delivery_span_s + 1)
    _untouched_for(extract, specs["extract"].delivery_span_s + 1)
    # ...one of which SQS may still be redelivering: older than the materialize queue's
    # span, not the extract queue's.
    _untouched_for(retried, specs["materialize"].delivery_span_s + 1)
    # When the maintenance pass runs
    result = maintenance.handler(load_event("eventbridge_schedule.json"), FakeLambdaContext())
    # Then each overdue item is announced again on its own queue, the other one is left alone
    assert result["overdue_announced"] == 2
    assert result["overdue_failed"] == 0
    assert _received_refs(deployed, "materialize") == [WorkRef.of(materialize)]
    assert _received_refs(deployed, "extract") == [WorkRef.of(extract)]
    # When it has been announced as often as the sweeper allows and is overdue again
    [extract] = engine.get_extraction_status(ALICE, lost.event_id)[1]
    assert extract.sweeps == 1
    _untouched_for(
        extract.model_copy(update={"sweeps": MAX_SWEEPS}), specs["extract"].delivery_span_s + 1
    )
    result = maintenance.handler(load_event("eventbridge_schedule.json"), FakeLambdaContext())
    # Then it is failed with its reason, and nothing is announced
    assert (result["overdue_announced"], result["overdue_failed"]) == (0, 1)
    status, [failed] = engine.get_extraction_status(ALICE, lost.event_id)
    assert status is ProcessingStatus.FAILED
    assert failed.last_error == WorkFailure.SWEEPS_EXHAUSTED


def test_maintenance_proposes_aliases_for_new_entities(deployed: Deployed) -> None:
    from functions import maintenance, runtime

    engine = runtime.backend().engine
    for name in ("International Business Machines", "IBM"):
        engine.store(ALICE, StoreInput(content=name, node_type=NodeType.ENTITY))
    result = maintenance.handler(load_event("eventbridge_schedule.json"), FakeLambdaContext())
    assert result["alias_proposals_created"] == 1
    [item] = engine.list_alias_proposals(ALICE)
    assert {c.name for c in item.proposal.nodes} == {"International Business Machines", "IBM"}
    # The scan closed the alias work, and a second pass proposes nothing twice.
    assert engine.deps.ledger.count_pending_work(ALICE, family="alias") == 0
    again = maintenance.handler(load_event("eventbridge_schedule.json"), FakeLambdaContext())
    assert again["alias_proposals_created"] == 0


def _received_refs(deployed: Deployed, family: str) -> list[WorkRef]:
    messages = deployed.sqs.receive_message(QueueUrl=deployed.urls[family], MaxNumberOfMessages=10)
    return [WorkRef.from_message(json.loads(m["Body"])) for m in messages.get("Messages", [])]


def test_ingest_announces_extraction_on_its_queue_and_the_extractor_runs_it(
    deployed: Deployed,
) -> None:
    from functions import extractor, runtime

    status, body = api_call(
        "apigw_v2_store.json",
        key=deployed.alice_key,
        path="/v1/ingest",
        body={"content": "I adopted 2 cats last week.", "event_time": "2024-05-10T09:00:00Z"},
    )
    assert status == 200
    assert body["extraction_status"] == "pending"
    refs = _received_refs(deployed, "extract")
    assert [r.event_id for r in refs] == [body["event_id"]]
    assert _received_refs(deployed, "materialize") == []  # the raw note was indexed inline
    response = extractor.handler(sqs_event(refs), FakeLambdaContext())
    assert response == {"batchItemFailures": []}
    engine = runtime.backend().engine
    assert engine.get_extraction_status(ALICE, body["event_id"])[0] is ProcessingStatus.COMPLETED
    derived = [
        n for n in engine.get_event_nodes(ALICE, body["event_id"]) if n.id != body["node_id"]
    ]
    assert derived  # claims, entities or quantities from the message


def test_extraction_that_keeps_failing_ends_failed_on_the_extract_queues_last_receive(
    deployed: Deployed, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace
    from datetime import datetime

    from functions import extractor, runtime, work_consumer
    from prme.backends.aws.resources import queue_specs
    from prme.errors import ExtractionUnavailableError
    from prme.model.extraction import Extraction

    class Down:
        name = "down"

        def extract(self, text: str, *, reference_time: datetime) -> Extraction:
            raise ExtractionUnavailableError(reason_code=WorkFailure.EXTRACTOR_PROVIDER_ERROR)

    # Given an extract queue that dead-letters sooner than the materialize queue
    specs = queue_specs(deployed.names.queue_prefix)
    specs["extract"] = replace(specs["extract"], max_receive_count=3)
    assert specs["materialize"].max_receive_count > 3
    monkeypatch.setattr(work_consumer, "queue_specs", lambda _prefix: specs)
    _, body = api_call(
        "apigw_v2_store.json",
        key=deployed.alice_key,
        path="/v1/ingest",
        body={"content": "We ran 12 km."},
    )
    refs = _received_refs(deployed, "extract")
    engine = runtime.backend().engine
    engine.deps = replace(engine.deps, extractor=Down())
    # When the model stays down
    first = extractor.handler(sqs_event(refs, receive_count=1), FakeLambdaContext())
    assert first == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
    status, items = engine.get_extraction_status(ALICE, body["event_id"])
    assert status is ProcessingStatus.PENDING
    assert items[0].last_error == "ProviderError"
    # Then the extract queue's last receive, not the materialize queue's, fails the work
    last = extractor.handler(sqs_event(refs, receive_count=3), FakeLambdaContext())
    assert last == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
    status, items = engine.get_extraction_status(ALICE, body["event_id"])
    assert status is ProcessingStatus.FAILED
    assert items[0].last_error == "retries_exhausted"

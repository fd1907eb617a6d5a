"""Each Lambda handler run under exactly its role's statements from the synthesized template,
with the template's environment, against a moto server that enforces IAM."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from prme.model.enums import CredentialRole
from tests.iam_support import IamDeployment, IamServer, enter_function, iam_deployment
from tests.integration.lambda_support import TENANT, FakeLambdaContext, load_event
from tests.stack_template import StackTemplate

# A write becomes searchable after the index's refresh (about a second; the stack leaves
# refresh-on-write off): reads poll for it, up to this long.
SEARCHABLE_WITHIN_S = 15.0


@pytest.fixture
def iam_deployed(
    iam_aws: IamServer, stack_template: StackTemplate, opensearch_url: str
) -> Iterator[IamDeployment]:
    yield from iam_deployment(iam_aws, stack_template, opensearch_url)


def run_as(deployment: IamDeployment, monkeypatch: pytest.MonkeyPatch, function: str) -> None:
    """From here on, handlers run as `function` would be deployed: its environment, its role."""
    if function not in deployment.keys:
        deployment.keys[function] = deployment.create_user(function)
    enter_function(monkeypatch, deployment.environment(function, deployment.keys[function]))


def api_key(deployment: IamDeployment) -> str:
    """Alice's owner key, issued as an operator would (outside every function's role)."""
    from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
    from prme.backends.clock import SystemClock
    from prme.engine.credentials import CredentialService

    ledger = DynamoDbLedger(deployment.admin("dynamodb"), deployment.binding.table_name)
    issued = CredentialService(ledger, SystemClock()).create(
        tenant_id=TENANT, owner_id="alice", role=CredentialRole.OWNER
    )
    return issued.secret


def api_call(key: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    from functions import api

    event = load_event("apigw_v2_store.json")
    event["headers"]["authorization"] = f"Bearer {key}"
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["body"] = json.dumps(body)
    response = api.handler(event, FakeLambdaContext())
    return response["statusCode"], json.loads(response["body"])


def retrieved_contents(key: str, query: str) -> set[str]:
    """What a retrieve finds once the writes are searchable, polling for at most a bound."""
    deadline = time.monotonic() + SEARCHABLE_WITHIN_S
    while True:
        status, body = api_call(key, "/v1/retrieve", {"query": query})
        assert status == 200, body
        found = {hit["content"] for hit in body["results"]}
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def sqs_records(event_file: str, bodies: list[str]) -> dict[str, Any]:
    template = load_event(event_file)["Records"][0]
    records = []
    for i, body in enumerate(bodies):
        record = copy.deepcopy(template)
        record["messageId"] = f"msg-{i}"
        record["body"] = body
        records.append(record)
    return {"Records": records}


def drain(deployment: IamDeployment, queue: str) -> list[str]:
    sqs, bodies = deployment.admin("sqs"), list[str]()
    while True:
        response = sqs.receive_message(
            QueueUrl=deployment.queue_urls[queue],
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
        )
        messages = response.get("Messages", [])
        if not messages:
            return bodies
        for message in messages:
            reason = message.get("MessageAttributes", {}).get("prme_reason", {})
            bodies.append(reason.get("StringValue", message["Body"]))
            sqs.delete_message(
                QueueUrl=deployment.queue_urls[queue], ReceiptHandle=message["ReceiptHandle"]
            )


def test_ingest_consumer_parks_a_never_valid_message_in_its_dlq(
    iam_deployed: IamDeployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions import ingest_consumer

    run_as(iam_deployed, monkeypatch, "ingest")
    event = sqs_records("sqs_ingest_batch.json", ["not json at all"])
    # Before the DLQ grant: GetQueueUrl on the DLQ was denied, the record failed and was
    # retried until SQS's redrive moved it, without its reason.
    assert ingest_consumer.handler(event, FakeLambdaContext()) == {"batchItemFailures": []}
    assert drain(iam_deployed, "ingest-dlq") == ["invalid_message:not_json"]


def test_api_stores_and_retrieves_under_its_role(
    iam_deployed: IamDeployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = api_key(iam_deployed)
    run_as(iam_deployed, monkeypatch, "api")
    status, stored = api_call(key, "/v1/store", {"content": "I moved to Lisbon in May."})
    assert status == 200, stored
    assert stored["processing_status"] == "completed"
    assert retrieved_contents(key, "Lisbon") == {"I moved to Lisbon in May."}


def test_import_then_materialize_then_retrieve_each_under_its_role(
    iam_deployed: IamDeployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions import ingest_consumer, materializer

    key = api_key(iam_deployed)
    run_as(iam_deployed, monkeypatch, "ingest")
    imported = ingest_consumer.handler(load_event("sqs_ingest_batch.json"), FakeLambdaContext())
    assert imported == {"batchItemFailures": []}
    work = drain(iam_deployed, "materialize")
    assert len(work) == 2

    run_as(iam_deployed, monkeypatch, "materializer")
    batch = sqs_records("sqs_materialize_batch.json", work)
    assert materializer.handler(batch, FakeLambdaContext()) == {"batchItemFailures": []}

    run_as(iam_deployed, monkeypatch, "api")
    assert retrieved_contents(key, "Imported note") == {"Imported note one", "Imported note two"}


def test_maintenance_announces_overdue_work_under_its_role(
    iam_deployed: IamDeployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions import ingest_consumer, maintenance

    run_as(iam_deployed, monkeypatch, "ingest")
    ingest_consumer.handler(load_event("sqs_ingest_batch.json"), FakeLambdaContext())
    announced = drain(iam_deployed, "materialize")  # the announcement is lost
    time.sleep(1.1)  # past the overdue period LOCAL_OVERRIDES sets

    run_as(iam_deployed, monkeypatch, "maintenance")
    result = maintenance.handler(load_event("eventbridge_schedule.json"), FakeLambdaContext())
    assert result["overdue_announced"] == 2
    assert sorted(drain(iam_deployed, "materialize")) == sorted(announced)

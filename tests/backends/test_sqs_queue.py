"""`SqsWorkQueue` against moto's SQS over HTTP, and the outbox recovery it relies on."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prme.backends.aws.bootstrap import ensure_queues
from prme.backends.aws.sqs_queue import SqsWorkQueue
from prme.backends.clock import ManualClock
from prme.engine.work_refs import WorkRef
from prme.errors import InvalidRequestError, StorageUnavailableError
from prme.model.enums import WorkKind
from prme.model.records import OwnerKey, WorkItem
from tests.harness.aws import AwsNames, boto_client


def work_item(i: int) -> WorkItem:
    return WorkItem.queued(
        WorkKind.INDEX_NODE,
        work_id=f"w{i}",
        owner=OwnerKey(tenant_id="t1", owner_id="alice"),
        event_id=f"e{i}",
        node_id=f"n{i}",
        now=ManualClock().now(),
    )


def receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        messages = batch.get("Messages", [])
        if not messages:
            return bodies
        bodies.extend(json.loads(m["Body"]) for m in messages)


@pytest.fixture
def queues(aws_endpoint: str, aws_names: AwsNames) -> tuple[Any, dict[str, str]]:
    sqs = boto_client("sqs", aws_endpoint)
    return sqs, ensure_queues(sqs, aws_names.queue_prefix)


def test_enqueue_sends_one_reference_per_item_in_batches(
    queues: tuple[Any, dict[str, str]],
) -> None:
    sqs, urls = queues
    items = [work_item(i) for i in range(23)]
    SqsWorkQueue(sqs, urls["materialize"]).enqueue(items)
    refs = [WorkRef.from_message(body) for body in receive_all(sqs, urls["materialize"])]
    assert sorted(r.work_id for r in refs) == sorted(i.id for i in items)
    assert {r.owner.owner_id for r in refs} == {"alice"}


def test_queues_have_dead_letter_redrive(queues: tuple[Any, dict[str, str]]) -> None:
    sqs, urls = queues
    attributes = sqs.get_queue_attributes(QueueUrl=urls["materialize"], AttributeNames=["All"])
    redrive = json.loads(attributes["Attributes"]["RedrivePolicy"])
    assert int(redrive["maxReceiveCount"]) == 5
    assert redrive["deadLetterTargetArn"].endswith("-materialize-dlq")


def test_bootstrap_of_queues_is_idempotent(
    queues: tuple[Any, dict[str, str]], aws_names: AwsNames
) -> None:
    sqs, urls = queues
    assert ensure_queues(sqs, aws_names.queue_prefix) == urls


def test_unreachable_queue_raises_storage_unavailable() -> None:
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "sqs",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    with pytest.raises(StorageUnavailableError):
        SqsWorkQueue(client, "http://127.0.0.1:9/000000000000/q").enqueue([work_item(1)])


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"v": 2, "tenant_id": "t"},
        {"v": 1, "tenant_id": 1, "owner_id": "o", "event_id": "e", "work_id": "w"},
    ],
)
def test_malformed_messages_are_rejected(body: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequestError):
        WorkRef.from_message(body)


def test_bootstrap_keeps_queues_that_exist_with_other_attributes(
    aws_endpoint: str, aws_names: AwsNames
) -> None:
    sqs = boto_client("sqs", aws_endpoint)
    spec_name = f"{aws_names.queue_prefix}-materialize"
    existing = sqs.create_queue(QueueName=spec_name, Attributes={"VisibilityTimeout": "7"})[
        "QueueUrl"
    ]
    urls = ensure_queues(sqs, aws_names.queue_prefix)
    assert urls["materialize"] == existing

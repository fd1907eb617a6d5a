"""Fault injection on the AWS backend: index outage, lost SQS sends, concurrent idempotent stores."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.config import Config

from prme.backends.aws.bootstrap import ensure_queues
from prme.backends.aws.sqs_queue import SqsWorkQueue
from prme.engine.work_refs import WorkRef
from prme.model.enums import ProcessingStatus
from prme.model.inputs import RetrieveInput, StoreInput
from tests.harness.aws import AwsNames, aws_harness, boto_client
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE


def engine_with(h: Any, **replacements: Any) -> Any:
    deps = h.engine.deps
    return type(h.engine)(type(deps)(**{**deps.__dict__, **replacements}))


def stopped_opensearch_index(alias: str) -> Any:
    """The index adapter pointed at a port where no OpenSearch answers (a stopped node)."""
    from prme.backends.aws.opensearch_index import OpenSearchIndex, build_opensearch_client

    return OpenSearchIndex(
        build_opensearch_client("http://127.0.0.1:9", auth="none", region=None), alias
    )


def test_opensearch_stopped_during_store_then_completed_by_queued_work(
    aws_resources: tuple[Any, str, Any, str], aws_endpoint: str, aws_names: AwsNames
) -> None:
    h = aws_harness(*aws_resources)
    sqs = boto_client("sqs", aws_endpoint)
    url = ensure_queues(sqs, aws_names.queue_prefix)["materialize"]
    queue = SqsWorkQueue(sqs, url)
    while_down = engine_with(h, index=stopped_opensearch_index(aws_names.index_alias), queue=queue)

    result = while_down.store(ALICE, StoreInput(content="written while the index was down"))
    assert result.processing_status is ProcessingStatus.PENDING
    assert while_down.get_node(ALICE, result.node_id).content == "written while the index was down"
    assert while_down.get_processing_status(ALICE, result.event_id)[0] is ProcessingStatus.PENDING

    # OpenSearch is back: the queued message drives the next processing pass.
    engine = engine_with(h, queue=queue)
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    refs = [WorkRef.from_message(json.loads(m["Body"])) for m in messages]
    assert engine.process_queued(refs).processed == 1
    assert engine.get_processing_status(ALICE, result.event_id)[0] is ProcessingStatus.COMPLETED
    hits = engine.retrieve(ALICE, RetrieveInput(query="index was down")).results
    assert [r.node_id for r in hits] == [result.node_id]


def test_lost_sqs_send_is_recovered_by_the_sweeper(
    aws_resources: tuple[Any, str, Any, str], aws_endpoint: str, aws_names: AwsNames
) -> None:
    h = aws_harness(*aws_resources)
    sqs = boto_client("sqs", aws_endpoint)
    url = ensure_queues(sqs, aws_names.queue_prefix)["materialize"]
    broken_sqs = boto3.client(
        "sqs",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    lossy = engine_with(
        h,
        index=stopped_opensearch_index(aws_names.index_alias),
        queue=SqsWorkQueue(broken_sqs, url),
    )
    result = lossy.store(ALICE, StoreInput(content="its announcement was lost"))
    assert result.processing_status is ProcessingStatus.PENDING
    assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)

    healthy = engine_with(h, queue=SqsWorkQueue(sqs, url))
    assert healthy.sweep_overdue(overdue_seconds=60).announced == 0  # not overdue yet
    h.clock.advance(seconds=61)
    assert healthy.sweep_overdue(overdue_seconds=60).announced == 1
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    refs = [WorkRef.from_message(json.loads(m["Body"])) for m in messages]
    assert healthy.process_queued(refs).processed == 1
    assert healthy.get_processing_status(ALICE, result.event_id)[0] is ProcessingStatus.COMPLETED
    # Redelivery of the same message is harmless: the work is already done.
    assert healthy.process_queued(refs).processed == 0


class OneTransactionAtATime:
    """Proxy of a DynamoDB client that lets one TransactWriteItems reach moto at a time.

    moto applies concurrent transactions non-atomically (it can write part of one and then
    fail internally), which AWS never does. Serializing them at the client keeps the race
    this test is about (requests that all see no key yet and all try to commit) while the
    server behaves like DynamoDB.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()

    def transact_write_items(self, **kwargs: Any) -> Any:
        with self._lock:
            return self._client.transact_write_items(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_concurrent_stores_with_one_idempotency_key_make_one_event(
    aws_resources: tuple[Any, str, Any, str],
) -> None:
    dynamodb, table, opensearch, alias = aws_resources
    h = aws_harness(OneTransactionAtATime(dynamodb), table, opensearch, alias)
    request = StoreInput(content="submitted twice at once")
    start = threading.Barrier(6)

    def submit(_: int) -> tuple[str, str | None]:
        start.wait()  # all six check for the key before any of them commits
        result = h.engine.store(
            ALICE, request, idempotency_key="11111111-2222-4333-8444-555555555555"
        )
        return result.event_id, result.node_id

    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = set(pool.map(submit, range(6)))
    assert len(outcomes) == 1
    hits = h.engine.retrieve(ALICE, RetrieveInput(query="submitted twice", limit=50)).results
    assert len(hits) == 1


def test_no_query_returns_another_tenants_or_owners_documents(
    aws_resources: tuple[Any, str, Any, str],
) -> None:
    h = aws_harness(*aws_resources)
    for owner in (ALICE, BOB, OTHER_TENANT_ALICE):
        h.engine.store(
            owner, StoreInput(content=f"vault code for {owner.tenant_id}/{owner.owner_id}")
        )
    for owner in (ALICE, BOB, OTHER_TENANT_ALICE):
        for query in ("vault code", "code for t1", "alice", "bob"):
            for mode in ("default", "explicit"):
                results = h.engine.retrieve(
                    owner, RetrieveInput(query=query, mode=mode, limit=50)
                ).results
                assert {r.content for r in results} <= {
                    f"vault code for {owner.tenant_id}/{owner.owner_id}"
                }


@pytest.mark.parametrize("owner", [ALICE])
def test_receipt_from_aws_replays(aws_resources: tuple[Any, str, Any, str], owner: Any) -> None:
    h = aws_harness(*aws_resources)
    for i in range(5):
        h.engine.store(
            owner, StoreInput(content=f"harbour walk {i}", event_time=f"202{i}-02-02T00:00:00Z")
        )
    response = h.engine.retrieve(owner, RetrieveInput(query="latest harbour walk"))
    receipt = h.engine.get_retrieval_receipt(owner, response.metrics.request_id)
    assert receipt.replay_matches()
    assert receipt.returned_node_ids == [r.node_id for r in response.results]

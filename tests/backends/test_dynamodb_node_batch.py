"""The DynamoDB side of a batch read of nodes, against a stubbed client (no sockets): a full
batch is one BatchGetItem, and keys left unprocessed are retried only while the request's
deadline leaves time to wait."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
from prme.engine.deadlines import deadline_scope
from prme.errors import RetryableStorageError
from prme.model.node_batch import MAX_NODE_BATCH
from tests.harness.engines import ALICE
from tests.harness.ledger_commits import make_commit


def stubbed() -> tuple[Any, DynamoDbLedger, list[float]]:
    client = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1}),
    )
    sleeps: list[float] = []
    return (
        client,
        DynamoDbLedger(client, "stubbed", sleep=sleeps.append, jitter=lambda: 0.5),
        sleeps,
    )


def node_key(node_id: str) -> dict[str, Any]:
    return {"pk": {"S": "T#t1#O#alice"}, "sk": {"S": f"NODE#{node_id}"}}


def test_a_full_batch_is_one_batch_get_item_of_every_key() -> None:
    client, ledger, _ = stubbed()
    node = make_commit(ALICE, 1).node
    others = [str(uuid.uuid4()) for _ in range(MAX_NODE_BATCH - 1)]
    with Stubber(client) as stub:
        stub.add_response(
            "batch_get_item",
            {
                "Responses": {
                    "stubbed": [{**node_key(node.id), "body": {"S": node.model_dump_json()}}]
                }
            },
            expected_params={
                "RequestItems": {
                    "stubbed": {
                        "Keys": [node_key(i) for i in [node.id, *others]],
                        "ConsistentRead": True,
                    }
                }
            },
        )

        found = ledger.get_nodes(ALICE, [node.id, *others])

        stub.assert_no_pending_responses()
    assert found == {node.id: node}


def test_unprocessed_keys_past_the_deadline_answer_busy_instead_of_waiting() -> None:
    client, ledger, sleeps = stubbed()
    node_id = str(uuid.uuid4())
    unprocessed = {
        "Responses": {"stubbed": []},
        "UnprocessedKeys": {"stubbed": {"Keys": [node_key(node_id)], "ConsistentRead": True}},
    }
    with Stubber(client) as stub, deadline_scope(0.001):
        stub.add_response("batch_get_item", unprocessed)

        with pytest.raises(RetryableStorageError):
            ledger.get_nodes(ALICE, [node_id])
    # The backoff (tens of milliseconds) would outlast the deadline: no wait at all.
    assert sleeps == []

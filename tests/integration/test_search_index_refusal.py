"""A function that finds a search index of another vector dimension refuses clearly: a 503
with its own code, nothing written, no index created, a metric counted for the alarm."""

from __future__ import annotations

import json

import pytest

from prme.backends.aws.bootstrap import ensure_index
from prme.backends.aws.opensearch_index import build_opensearch_client
from prme.backends.aws.resources import index_name
from prme.errors import SearchIndexMismatchError
from tests.harness.aws import boto_client
from tests.harness.lambda_events import Deployed, FakeLambdaContext, load_event


def test_the_api_refuses_an_index_of_another_dimension(
    deployed: Deployed,
    aws_endpoint: str,
    opensearch_url: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    from functions import api

    # Given the alias leads to a 384-dimension index while the function embeds 64 dimensions.
    alias = deployed.names.index_alias
    opensearch = build_opensearch_client(opensearch_url, auth="none", region=None)
    opensearch.indices.delete(index=index_name(alias))
    ensure_index(opensearch, alias, 384)
    capsys.readouterr()

    # When a store arrives through API Gateway.
    event = load_event("apigw_v2_store.json")
    event["headers"]["authorization"] = f"Bearer {deployed.alice_key}"
    response = api.handler(event, FakeLambdaContext())

    # Then it is refused with a clear code, and nothing was written anywhere.
    assert response["statusCode"] == 503
    assert json.loads(response["body"]) == {
        "detail": SearchIndexMismatchError.default_detail,
        "reason_code": "search_index_mismatch",
    }
    dynamodb = boto_client("dynamodb", aws_endpoint)
    owner_items = dynamodb.query(
        TableName=deployed.names.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "T#acme#O#alice"}},
    )
    assert owner_items["Count"] == 0
    opensearch.indices.refresh(index=alias)
    assert opensearch.count(index=alias)["count"] == 0
    assert sorted(opensearch.indices.get(index=f"{alias}*")) == [index_name(alias)]
    # The log line names the reason; the metric line is what the alarm watches.
    (refused,) = [r for r in caplog.records if r.getMessage() == "search index refused"]
    assert "dimension 384" in refused.__dict__["reason"]
    printed = capsys.readouterr().out
    metric_lines = [json.loads(line) for line in printed.splitlines() if "_aws" in line]
    assert any(line.get("SearchIndexRefused") == [1.0] for line in metric_lines)
    opensearch.close()

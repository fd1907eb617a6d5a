"""Metering in the Lambda functions: each metered request emits its tenant's CloudWatch metrics
(EMF on stdout) beside its usage entry, and a usage log that fails is counted, never fatal."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.harness.lambda_events import TENANT, Deployed, FakeLambdaContext, load_event


def store_call(key: str, content: str) -> int:
    from functions import api

    event = load_event("apigw_v2_store.json")
    event["headers"]["authorization"] = f"Bearer {key}"
    event["body"] = json.dumps({"content": content})
    response: dict[str, Any] = api.handler(event, FakeLambdaContext())
    return int(response["statusCode"])


def emitted(output: str) -> list[dict[str, Any]]:
    """Every EMF document printed: its dimensions and metric values."""
    documents = []
    for line in output.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            documents.append(json.loads(line))
    return documents


def test_a_metered_request_emits_its_tenants_metrics(
    deployed: Deployed, capsys: pytest.CaptureFixture[str]
) -> None:
    from functions.usage_metrics import TENANT_OPERATIONS_METRIC, TENANT_TOKENS_METRIC

    assert store_call(deployed.alice_key, "I moved to Lisbon in May.") == 200
    tenant_documents = [d for d in emitted(capsys.readouterr().out) if "tenant" in d]
    assert len(tenant_documents) == 1
    (document,) = tenant_documents
    assert document["tenant"] == TENANT
    # EMF holds each metric's values as a list of numbers.
    assert (document[TENANT_OPERATIONS_METRIC], document[TENANT_TOKENS_METRIC]) == ([1], [0])
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert "tenant" in directive["Dimensions"][0]


def test_a_failing_usage_log_is_counted_and_the_request_still_succeeds(
    deployed: Deployed, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from prme.backends.aws.dynamodb_usage import DynamoDbUsageLog
    from prme.backends.aws.resources import USAGE_NOT_RECORDED_METRIC
    from prme.errors import StorageUnavailableError

    def down(self: DynamoDbUsageLog, entries: Any) -> None:
        raise StorageUnavailableError()

    monkeypatch.setattr(DynamoDbUsageLog, "record", down)
    assert store_call(deployed.alice_key, "I moved to Lisbon in May.") == 200
    counted = [d for d in emitted(capsys.readouterr().out) if USAGE_NOT_RECORDED_METRIC in d]
    assert [d[USAGE_NOT_RECORDED_METRIC] for d in counted] == [[1]]

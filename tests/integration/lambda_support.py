"""Lambda test support: real event payloads, a Lambda context, and a deployed-like environment."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prme.backends.aws.bootstrap import bootstrap
from prme.engine.credentials import CredentialService
from prme.model.enums import CredentialRole
from prme.model.records import OwnerKey
from tests.aws_support import AwsNames, boto_client

EVENTS = Path(__file__).resolve().parents[1] / "events"
TENANT = "acme"
ALICE = OwnerKey(tenant_id=TENANT, owner_id="alice")


def load_event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return event


@dataclass
class FakeLambdaContext:
    function_name: str = "prme-test"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:prme-test"
    memory_limit_in_mb: int = 512
    aws_request_id: str = "c6af9ac6-7b61-11e6-9a41-93e812345678"
    log_group_name: str = "/aws/lambda/prme-test"
    log_stream_name: str = "2026/11/29/[$LATEST]abc"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@dataclass
class Deployed:
    names: AwsNames
    urls: dict[str, str]
    sqs: Any
    alice_key: str


def deployed_environment(
    monkeypatch: pytest.MonkeyPatch,
    aws_endpoint: str,
    opensearch_url: str,
    aws_names: AwsNames,
) -> Iterator[Deployed]:
    """Environment as the stack sets it, resources bootstrapped, handler caches cleared."""
    from prme.backends.aws.opensearch_index import build_opensearch_client

    env = {
        "PRME_BACKEND": "aws",
        "PRME_TABLE_NAME": aws_names.table,
        "PRME_QUEUE_PREFIX": aws_names.queue_prefix,
        "PRME_OPENSEARCH_INDEX_ALIAS": aws_names.index_alias,
        "PRME_OPENSEARCH_URL": opensearch_url,
        "PRME_OPENSEARCH_REFRESH_ON_WRITE": "true",
        "PRME_EMBEDDER": "hashing",
        "POWERTOOLS_SERVICE_NAME": "prme-tests",
        "POWERTOOLS_METRICS_NAMESPACE": "PrmeTests",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    dynamodb, sqs = boto_client("dynamodb", aws_endpoint), boto_client("sqs", aws_endpoint)
    opensearch = build_opensearch_client(opensearch_url, auth="none", region=None)
    urls = bootstrap(
        dynamodb=dynamodb,
        sqs=sqs,
        opensearch=opensearch,
        table_name=aws_names.table,
        queue_prefix=aws_names.queue_prefix,
        index_alias=aws_names.index_alias,
        dimension=64,
    )
    from functions import api, runtime

    runtime.settings.cache_clear()
    runtime.backend.cache_clear()
    api._adapter.cache_clear()
    built = runtime.backend()
    assert isinstance(built.credentials, CredentialService)
    issued = built.credentials.create(tenant_id=TENANT, owner_id="alice", role=CredentialRole.OWNER)
    try:
        yield Deployed(aws_names, urls, sqs, issued.secret)
    finally:
        runtime.backend().close()
        runtime.settings.cache_clear()
        runtime.backend.cache_clear()
        api._adapter.cache_clear()
        opensearch.indices.delete(index=f"{aws_names.index_alias}-v*", ignore_unavailable=True)
        opensearch.close()

"""The local AWS for tests: moto's server over real HTTP, OpenSearch, fresh resource names per
test, and an engine on the AWS adapters.

`make test` starts the local AWS and exports AWS_ENDPOINT_URL; run alone, a session-wide
moto server is started in-process on a free port. Tests never reset the server (parallel
workers share it): each test gets its own table and queue names instead.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from prme.backends.clock import ManualClock
from prme.backends.memory import RecordingWorkQueue
from prme.embedding.hashing import HashingEmbedder
from prme.engine.config import EngineConfig
from prme.engine.deps import EngineDeps
from prme.engine.service import MemoryEngine
from tests.harness.engines import TOKEN_COUNTER, Harness
from tests.harness.store_scan import scan_aws

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture(scope="session")
def aws_endpoint() -> Iterator[str]:
    for key, value in FAKE_CREDENTIALS.items():
        os.environ.setdefault(key, value)
    configured = os.environ.get("AWS_ENDPOINT_URL")
    if configured:
        yield configured
        return
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    os.environ["AWS_ENDPOINT_URL"] = url
    try:
        yield url
    finally:
        os.environ.pop("AWS_ENDPOINT_URL", None)
        server.stop()


@dataclass(frozen=True)
class AwsNames:
    table: str
    queue_prefix: str
    index_alias: str


@pytest.fixture
def aws_names() -> AwsNames:
    suffix = uuid.uuid4().hex[:10]
    return AwsNames(f"prme-t-{suffix}", f"prme-t-{suffix}", f"prme-t-{suffix}")


def boto_client(service: str, endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        # moto can fail concurrent transactions with an internal error (a moto artifact that
        # botocore retries as it would a 500 from AWS); allow enough attempts for it.
        config=Config(retries={"mode": "standard", "max_attempts": 8}),
    )


@pytest.fixture
def dynamodb_table(aws_endpoint: str, aws_names: AwsNames) -> tuple[Any, str]:
    from prme.backends.aws.bootstrap import ensure_table

    client = boto_client("dynamodb", aws_endpoint)
    ensure_table(client, aws_names.table)
    return client, aws_names.table


@pytest.fixture(scope="session")
def opensearch_url() -> str:
    """The local OpenSearch node: from PRME_OPENSEARCH_URL, else started (once, under a lock)."""
    configured = os.environ.get("PRME_OPENSEARCH_URL")
    if configured:
        return configured
    import fcntl

    from localstack import local_aws

    lock_path = local_aws.STATE / "start.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        local_aws.up(with_opensearch=True)
    url = local_aws.endpoints()["PRME_OPENSEARCH_URL"]
    os.environ["PRME_OPENSEARCH_URL"] = url
    return url


@pytest.fixture
def aws_resources(
    aws_endpoint: str, opensearch_url: str, aws_names: AwsNames
) -> Iterator[tuple[Any, str, Any, str]]:
    """A fresh table and index alias on the local AWS: (dynamodb, table, opensearch, alias)."""
    from prme.backends.aws.bootstrap import ensure_index, ensure_table
    from prme.backends.aws.opensearch_index import build_opensearch_client

    dynamodb = boto_client("dynamodb", aws_endpoint)
    ensure_table(dynamodb, aws_names.table)
    opensearch = build_opensearch_client(opensearch_url, auth="none", region=None)
    ensure_index(opensearch, aws_names.index_alias, 64)
    try:
        yield dynamodb, aws_names.table, opensearch, aws_names.index_alias
    finally:
        opensearch.indices.delete(index=f"{aws_names.index_alias}-v*", ignore_unavailable=True)
        dynamodb.delete_table(TableName=aws_names.table)
        opensearch.close()


def aws_harness(
    dynamodb: Any,
    table: str,
    opensearch: Any,
    alias: str,
    config: EngineConfig | None = None,
    *,
    refresh_on_write: bool = True,
) -> Harness:
    """The AWS adapters against the local AWS; work announcements are recorded, not sent.

    Writes are searchable at once unless `refresh_on_write` is off, as the stack deploys it
    (tests/backends/test_deployed_refresh.py)."""
    from prme.backends.aws.dynamodb_imports import DynamoDbImportJobStore
    from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
    from prme.backends.aws.dynamodb_ranking_profiles import DynamoDbRankingProfileStore
    from prme.backends.aws.dynamodb_usage import DynamoDbUsageLog
    from prme.backends.aws.opensearch_index import OpenSearchIndex
    from prme.backends.memory import RecordingImportQueue

    ledger = DynamoDbLedger(dynamodb, table)
    import_queue = RecordingImportQueue()
    usage = DynamoDbUsageLog(dynamodb, table)
    index = OpenSearchIndex(opensearch, alias, refresh_on_write=refresh_on_write)
    queue, clock, embedder = RecordingWorkQueue(), ManualClock(), HashingEmbedder()
    deps = EngineDeps(
        ledger=ledger,
        index=index,
        queue=queue,
        embedder=embedder,
        clock=clock,
        token_counter=TOKEN_COUNTER,
        config=config or EngineConfig(),
        imports=DynamoDbImportJobStore(dynamodb, table),
        import_queue=import_queue,
        usage=usage,
        ranking_profiles=DynamoDbRankingProfileStore(dynamodb, table),
    )
    return Harness(
        MemoryEngine(deps),
        ledger,
        index,
        queue,
        clock,
        embedder,
        ledger,
        lambda: scan_aws(dynamodb, table, opensearch, alias),
        import_queue,
        usage=usage,
    )

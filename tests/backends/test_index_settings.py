"""The index `prme bootstrap` creates on a real OpenSearch node: replicas from settings,
slow-log thresholds on, and indexing slow logs that never carry a document."""

from __future__ import annotations

from typing import Any

import pytest

from prme.backends.aws.resources import index_name
from prme.backends.aws.service import AwsClients, bootstrap_from_settings
from prme.settings import Settings
from tests.harness.aws import AwsNames, boto_client


def test_bootstrap_creates_the_index_with_the_configured_replicas_and_slow_logs(
    aws_endpoint: str, opensearch_url: str, aws_names: AwsNames, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prme.backends.aws.opensearch_index import build_opensearch_client

    # Given the replica count as the stack passes it: an environment variable.
    monkeypatch.setenv(Settings.env_name("opensearch_replicas"), "1")
    settings = Settings(
        backend="aws",
        table_name=aws_names.table,
        queue_prefix=aws_names.queue_prefix,
        opensearch_url=opensearch_url,
        opensearch_index_alias=aws_names.index_alias,
    )
    opensearch = build_opensearch_client(opensearch_url, auth="none", region=None)
    dynamodb = boto_client("dynamodb", aws_endpoint)
    clients = AwsClients(dynamodb, boto_client("sqs", aws_endpoint), opensearch)
    try:
        # When bootstrap creates the index
        bootstrap_from_settings(settings, clients, dimension=8)
        name = index_name(aws_names.index_alias)
        stored: dict[str, Any] = opensearch.indices.get_settings(index=name, flat_settings=True)
        index = stored[name]["settings"]
    finally:
        opensearch.indices.delete(index=f"{aws_names.index_alias}-v*", ignore_unavailable=True)
        dynamodb.delete_table(TableName=aws_names.table)
        opensearch.close()

    # Then the node holds the replica count and the slow-log thresholds
    assert index["index.number_of_replicas"] == "1"
    for threshold in (
        "index.search.slowlog.threshold.query.warn",
        "index.search.slowlog.threshold.query.info",
        "index.search.slowlog.threshold.fetch.warn",
        "index.indexing.slowlog.threshold.index.warn",
        "index.indexing.slowlog.threshold.index.info",
    ):
        assert index[threshold] not in ("-1", None), threshold  # -1 is OpenSearch's "off"
    # and an indexing slow-log line never quotes the document (memory content).
    assert index["index.indexing.slowlog.source"] in ("0", "false")

"""The stack's index custom resource against the real local OpenSearch: Create (idempotent),
Update, Delete (leaves the index), and FAILED with a clear reason on an index it cannot use."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from localstack.hung_port import HungPort
from prme.backends.aws.bootstrap import ensure_index
from prme.backends.aws.opensearch_index import VectorShape, build_opensearch_client
from prme.backends.aws.resources import index_name
from tests.harness.aws import AwsNames
from tests.harness.cloudformation import ResponseCatcher, cloudformation_request
from tests.harness.lambda_events import FakeLambdaContext

RESPONSE_KEYS = {
    "Status",
    "Reason",
    "PhysicalResourceId",
    "StackId",
    "RequestId",
    "LogicalResourceId",
}


@pytest.fixture
def opensearch(
    monkeypatch: pytest.MonkeyPatch, opensearch_url: str, aws_names: AwsNames
) -> Iterator[Any]:
    monkeypatch.setenv("PRME_OPENSEARCH_URL", opensearch_url)
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "prme-indexsetup")
    # Read when `functions.runtime` is first imported, which may be here.
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "PrmeTests")
    from functions import runtime

    runtime.settings.cache_clear()
    client = build_opensearch_client(opensearch_url, auth="none", region=None)
    yield client
    client.indices.delete(index=f"{aws_names.index_alias}*", ignore_unavailable=True)
    client.close()
    runtime.settings.cache_clear()


def run(
    catcher: ResponseCatcher, request_type: str, alias: str, dimension: int, **extra: Any
) -> dict[str, Any]:
    from functions import index_setup

    event = cloudformation_request(
        request_type,
        catcher.url(f"answer-{len(catcher.caught)}"),
        {"IndexAlias": alias, "Dimension": str(dimension)},
        **extra,
    )
    index_setup.handler(event, cast(Any, FakeLambdaContext()))
    answer = catcher.caught[-1]
    assert answer.path == f"/answer-{len(catcher.caught) - 1}?X-Amz-Signature=abc"
    assert answer.headers.get("content-type", "") == ""
    assert set(answer.body) >= RESPONSE_KEYS
    assert answer.body["StackId"] == event["StackId"]
    assert answer.body["RequestId"] == event["RequestId"]
    assert answer.body["LogicalResourceId"] == event["LogicalResourceId"]
    return answer.body


def shape_behind(client: Any, alias: str) -> tuple[list[str], VectorShape | None]:
    found = client.indices.get(index=alias)
    ((_, index),) = found.items()
    return sorted(found), VectorShape.of_mapping(index["mappings"])


def test_create_is_idempotent_update_keeps_and_delete_leaves_the_index(
    opensearch: Any, aws_names: AwsNames, response_catcher: ResponseCatcher
) -> None:
    alias = aws_names.index_alias

    first = run(response_catcher, "Create", alias, 1024)
    again = run(response_catcher, "Create", alias, 1024)

    assert first["Status"] == again["Status"] == "SUCCESS"
    assert first["PhysicalResourceId"] == again["PhysicalResourceId"] == alias
    assert shape_behind(opensearch, alias) == ([index_name(alias)], VectorShape.expected(1024))

    updated = run(
        response_catcher,
        "Update",
        alias,
        1024,
        physical_id=alias,
        old_properties={"IndexAlias": alias, "Dimension": "1024"},
    )
    deleted = run(response_catcher, "Delete", alias, 1024, physical_id=alias)

    assert updated["Status"] == deleted["Status"] == "SUCCESS"
    assert deleted["PhysicalResourceId"] == alias
    assert shape_behind(opensearch, alias) == ([index_name(alias)], VectorShape.expected(1024))


def test_an_index_of_another_dimension_fails_the_deploy_with_a_clear_reason(
    opensearch: Any, aws_names: AwsNames, response_catcher: ResponseCatcher
) -> None:
    # What `prme bootstrap` made before with PRME_EMBEDDER unset: MiniLM's 384 dimensions.
    alias = aws_names.index_alias
    ensure_index(opensearch, alias, 384)

    answer = run(response_catcher, "Create", alias, 1024)

    assert answer["Status"] == "FAILED"
    assert "dimension 384" in answer["Reason"]
    assert "dimension 1024" in answer["Reason"]
    assert shape_behind(opensearch, alias) == ([index_name(alias)], VectorShape.expected(384))


def test_a_plain_index_named_like_the_alias_fails_the_deploy(
    opensearch: Any, aws_names: AwsNames, response_catcher: ResponseCatcher
) -> None:
    alias = aws_names.index_alias
    opensearch.index(index=alias, body={"text": "auto-created by a write"}, refresh=True)

    answer = run(response_catcher, "Create", alias, 1024)

    assert answer["Status"] == "FAILED"
    assert "plain index" in answer["Reason"]
    assert not opensearch.indices.exists(index=index_name(alias))


def test_an_unreachable_domain_fails_without_provider_text(
    monkeypatch: pytest.MonkeyPatch, opensearch: Any, response_catcher: ResponseCatcher
) -> None:
    from functions import runtime

    monkeypatch.setenv("PRME_OPENSEARCH_URL", "http://127.0.0.1:9")
    runtime.settings.cache_clear()

    answer = run(response_catcher, "Create", "prme-unreachable", 1024)

    assert answer["Status"] == "FAILED"
    assert answer["Reason"].startswith("The search domain refused or did not answer")
    assert "127.0.0.1" not in answer["Reason"]
    assert answer["PhysicalResourceId"] == "prme-unreachable"


@dataclass
class ShortInvocation(FakeLambdaContext):
    """An invocation with 8 s left: after the margin and the answer's reserve, 1.5 s of work."""

    ends_at: float = field(default_factory=lambda: time.monotonic() + 8.0)

    def get_remaining_time_in_millis(self) -> int:
        return int((self.ends_at - time.monotonic()) * 1000)


def test_a_hung_domain_is_answered_failed_before_the_function_times_out(
    monkeypatch: pytest.MonkeyPatch, opensearch: Any, response_catcher: ResponseCatcher
) -> None:
    """A domain that accepts connections and never answers: CloudFormation still hears FAILED
    within the invocation, instead of waiting an hour for a function that timed out."""
    from functions import index_setup, runtime

    with HungPort() as hung:
        monkeypatch.setenv("PRME_OPENSEARCH_URL", hung.url)
        runtime.settings.cache_clear()
        event = cloudformation_request(
            "Create", response_catcher.url("hung"), {"IndexAlias": "prme-hung", "Dimension": "8"}
        )
        context = ShortInvocation()
        index_setup.handler(event, cast(Any, context))
        left_s = context.get_remaining_time_in_millis() / 1000

    answer = response_catcher.caught[-1].body
    assert answer["Status"] == "FAILED"
    assert answer["Reason"].startswith("The search domain did not answer in time")
    assert answer["PhysicalResourceId"] == "prme-hung"
    assert left_s > 0

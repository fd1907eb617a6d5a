"""Deadlines against a hung dependency: a port that accepts connections and never answers.

A stopped dependency refuses the connection at once; a hung one makes every call wait for its
timeout, which is what a request's deadline has to bound. Each test sets a small budget and
checks both the outcome and that the answer came before the budget ran out: that bound is
what the deadline feature promises (a correctness property, with a generous allowance for a
loaded machine), not a performance target.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from functions.limits import LAMBDA_MARGIN_MS
from localstack.hung_port import HungPort
from prme.backends.aws.deadline_clients import DeadlineBoundClient
from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
from prme.backends.aws.opensearch_index import OpenSearchIndex, build_opensearch_client
from prme.embedding.bedrock import BedrockEmbedder
from prme.engine.deadlines import deadline_scope
from prme.engine.work_refs import WorkRef
from prme.errors import IndexUnavailableError, StorageUnavailableError, status_for
from prme.model.enums import ProcessingStatus
from prme.model.inputs import RetrieveInput, StoreInput
from tests.harness.aws import aws_harness
from tests.harness.engines import ALICE
from tests.harness.lambda_events import ALICE as API_ALICE
from tests.harness.lambda_events import Deployed, FakeLambdaContext, load_event, sqs_event

# Each case waits out a budget on purpose.
pytestmark = pytest.mark.slow

BUDGET_S = 3.0
# Allowance over the budget for scheduling on a busy machine; far below a single default
# timeout (10 s), so an undeadlined call still fails the check.
ALLOWANCE_S = 1.0


@pytest.fixture
def hung() -> Iterator[HungPort]:
    with HungPort() as port:
        yield port


@dataclass
class Timed:
    elapsed: float = 0.0


@contextmanager
def within_budget() -> Iterator[Timed]:
    """Run a block under a `BUDGET_S` deadline and measure how long it took."""
    timed = Timed()
    started = time.monotonic()
    try:
        with deadline_scope(BUDGET_S):
            yield timed
    finally:
        timed.elapsed = time.monotonic() - started


def engine_with(h: Any, **replacements: Any) -> Any:
    deps = h.engine.deps
    return type(h.engine)(type(deps)(**{**deps.__dict__, **replacements}))


def hung_index(server: HungPort, alias: str) -> OpenSearchIndex:
    # The production client settings: 10 s timeout, two retries on timeout.
    return OpenSearchIndex(build_opensearch_client(server.url, auth="none", region=None), alias)


def deadline_bound_dynamodb(endpoint: str) -> DeadlineBoundClient:
    """A DynamoDB client built as the deployed backend builds it (service.build_clients)."""
    return DeadlineBoundClient(
        lambda config: boto3.client(
            "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=config
        )
    )


def test_store_on_a_hung_index_commits_pending_in_time_and_completes_later(
    aws_resources: tuple[Any, str, Any, str], aws_endpoint: str, hung: HungPort
) -> None:
    h = aws_harness(*aws_resources)
    while_hung = engine_with(
        h,
        index=hung_index(hung, aws_resources[3]),
        # The commit's client follows the deadline too: it must still fit after the index.
        ledger=DynamoDbLedger(deadline_bound_dynamodb(aws_endpoint), aws_resources[1]),
    )

    with within_budget() as timed:
        result = while_hung.store(ALICE, StoreInput(content="stored while the index hung"))

    assert result.processing_status is ProcessingStatus.PENDING
    assert timed.elapsed < BUDGET_S + ALLOWANCE_S
    assert h.engine.get_node(ALICE, result.node_id).content == "stored while the index hung"
    # The index answers again: the pending work finishes and the record is found.
    assert h.engine.process_materializations(ALICE).processed == 1
    assert h.engine.get_processing_status(ALICE, result.event_id)[0] is ProcessingStatus.COMPLETED
    hits = h.engine.retrieve(ALICE, RetrieveInput(query="index hung")).results
    assert [r.node_id for r in hits] == [result.node_id]


def test_retrieve_on_a_hung_index_answers_503_in_time(
    aws_resources: tuple[Any, str, Any, str], hung: HungPort
) -> None:
    h = aws_harness(*aws_resources)
    h.engine.store(ALICE, StoreInput(content="a record the hung index holds"))
    while_hung = engine_with(h, index=hung_index(hung, aws_resources[3]))

    with within_budget() as timed, pytest.raises(IndexUnavailableError) as raised:
        while_hung.retrieve(ALICE, RetrieveInput(query="record"))

    assert status_for(raised.value) == 503
    assert timed.elapsed < BUDGET_S + ALLOWANCE_S


def test_retrieve_with_a_hung_embedder_answers_degraded_in_time(
    aws_resources: tuple[Any, str, Any, str], hung: HungPort
) -> None:
    h = aws_harness(*aws_resources)
    stored = h.engine.store(ALICE, StoreInput(content="found by its words alone"))
    hung_bedrock = DeadlineBoundClient(
        lambda config: boto3.client(
            "bedrock-runtime", endpoint_url=hung.url, region_name="us-east-1", config=config
        )
    )
    while_hung = engine_with(
        h, embedder=BedrockEmbedder(hung_bedrock, "amazon.titan-embed-text-v2:0", 256)
    )

    with within_budget() as timed:
        response = while_hung.retrieve(ALICE, RetrieveInput(query="words alone"))

    assert response.metrics.backend_failures == ["VECTOR"]
    assert [r.node_id for r in response.results] == [stored.node_id]
    assert timed.elapsed < BUDGET_S + ALLOWANCE_S


def test_store_on_a_hung_dynamodb_answers_503_in_time_and_writes_nothing(
    aws_resources: tuple[Any, str, Any, str], hung: HungPort
) -> None:
    h = aws_harness(*aws_resources)
    hung_ledger = DynamoDbLedger(deadline_bound_dynamodb(hung.url), aws_resources[1])
    while_hung = engine_with(h, ledger=hung_ledger)

    with within_budget() as timed, pytest.raises(StorageUnavailableError) as raised:
        while_hung.store(ALICE, StoreInput(content="never acknowledged"))

    assert status_for(raised.value) == 503
    assert timed.elapsed < BUDGET_S + ALLOWANCE_S
    assert h.ledger.list_nodes(ALICE) == []
    # The index document written before the failed commit has no node: retrieval drops it.
    assert h.engine.retrieve(ALICE, RetrieveInput(query="never acknowledged")).results == []


# -- the Lambda edge: the deadline comes from the invocation's remaining time --------------


@dataclass
class ShortLambdaContext(FakeLambdaContext):
    """An invocation that started with little time: after the margin, `BUDGET_S` is left."""

    ends_at: float = field(default_factory=lambda: time.monotonic() + BUDGET_S + 1.5)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.ends_at - time.monotonic()) * 1000))


def _rebuild_handler_with(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    """A warm container whose environment points at `env`: built by a first call that needs
    no dependency, so the timed calls measure the deadline, not a cold start."""
    from functions import api, runtime

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    runtime.backend().close()
    runtime.settings.cache_clear()
    runtime.backend.cache_clear()
    api._adapter.cache_clear()
    warm_up = load_event("apigw_v2_get_event.json")
    warm_up["rawPath"] = warm_up["requestContext"]["http"]["path"] = "/health"
    assert api.handler(warm_up, FakeLambdaContext())["statusCode"] == 200


def _invoke(path: str, key: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], float]:
    """POST `body` to `path` through the api handler, as API Gateway delivers it."""
    from functions import api

    event = load_event("apigw_v2_store.json")
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["headers"]["authorization"] = f"Bearer {key}"
    event["body"] = json.dumps(body)
    started = time.monotonic()
    response = api.handler(event, ShortLambdaContext())
    elapsed = time.monotonic() - started
    assert LAMBDA_MARGIN_MS == 1_500  # the context above assumes this margin
    return response["statusCode"], json.loads(response["body"]), elapsed


def test_api_handler_stores_pending_and_retrieves_503_on_a_hung_index_in_time(
    deployed: Deployed, monkeypatch: pytest.MonkeyPatch, hung: HungPort, opensearch_url: str
) -> None:
    from functions import runtime

    _rebuild_handler_with(monkeypatch, PRME_OPENSEARCH_URL=hung.url)

    status, stored, elapsed = _invoke(
        "/v1/store", deployed.alice_key, {"content": "said while the index hung"}
    )
    assert (status, stored["processing_status"]) == (200, "pending")
    assert elapsed < BUDGET_S + ALLOWANCE_S

    status, body, elapsed = _invoke("/v1/retrieve", deployed.alice_key, {"query": "index hung"})
    assert status == 503
    assert "accepted" not in body
    assert elapsed < BUDGET_S + ALLOWANCE_S

    # The materializer, on a short invocation, defers the work in time (SQS redelivers it).
    from functions import materializer

    (work,) = runtime.backend().engine.get_processing_status(API_ALICE, stored["event_id"])[1]
    started = time.monotonic()
    deferred = materializer.handler(sqs_event([WorkRef.of(work)]), ShortLambdaContext())
    assert deferred == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
    assert time.monotonic() - started < BUDGET_S + ALLOWANCE_S

    # Back on the real index: the redelivered message completes the stored source's work.
    _rebuild_handler_with(monkeypatch, PRME_OPENSEARCH_URL=opensearch_url)
    done = materializer.handler(sqs_event([WorkRef.of(work)]), ShortLambdaContext())
    assert done == {"batchItemFailures": []}
    engine = runtime.backend().engine
    assert (
        engine.get_processing_status(API_ALICE, stored["event_id"])[0] is ProcessingStatus.COMPLETED
    )


def test_api_handler_answers_503_on_a_hung_dynamodb_in_time(
    deployed: Deployed, monkeypatch: pytest.MonkeyPatch, hung: HungPort
) -> None:
    _rebuild_handler_with(monkeypatch, AWS_ENDPOINT_URL_DYNAMODB=hung.url)

    status, body, elapsed = _invoke(
        "/v1/store", deployed.alice_key, {"content": "never acknowledged"}
    )

    assert status == 503
    assert "accepted" not in body
    assert elapsed < BUDGET_S + ALLOWANCE_S


# The pass fails before it adds a metric, so Powertools warns that it has none to publish.
@pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")
def test_maintenance_on_a_hung_dynamodb_fails_in_time(
    deployed: Deployed, monkeypatch: pytest.MonkeyPatch, hung: HungPort
) -> None:
    from functions import maintenance

    _rebuild_handler_with(monkeypatch, AWS_ENDPOINT_URL_DYNAMODB=hung.url)

    started = time.monotonic()
    with pytest.raises(StorageUnavailableError):
        maintenance.handler({}, ShortLambdaContext())

    assert time.monotonic() - started < BUDGET_S + ALLOWANCE_S


def test_extractor_handler_on_a_hung_model_defers_the_work_in_time(
    deployed: Deployed, monkeypatch: pytest.MonkeyPatch, hung: HungPort
) -> None:
    """The Converse client the extractor function builds (composition.build_extractor) takes
    its timeouts from the invocation's deadline: a hung model fails the record in time, and
    SQS redelivers it, instead of Lambda stopping the function."""
    from functions import extractor, runtime
    from prme.model.inputs import IngestInput

    _rebuild_handler_with(
        monkeypatch, PRME_EXTRACTOR="bedrock", AWS_ENDPOINT_URL_BEDROCK_RUNTIME=hung.url
    )
    engine = runtime.backend().engine
    ingested = engine.ingest(API_ALICE, IngestInput(content="We ran 12 km on Sunday."))
    (work,) = engine.get_extraction_status(API_ALICE, ingested.event_id)[1]

    started = time.monotonic()
    deferred = extractor.handler(sqs_event([WorkRef.of(work)]), ShortLambdaContext())

    assert deferred == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
    assert time.monotonic() - started < BUDGET_S + ALLOWANCE_S
    status, (item,) = engine.get_extraction_status(API_ALICE, ingested.event_id)
    assert status is ProcessingStatus.PENDING
    assert (item.attempts, item.last_error) == (1, "Timeout")


def test_api_handler_waiting_for_extraction_on_a_hung_model_answers_in_time(
    deployed: Deployed, monkeypatch: pytest.MonkeyPatch, hung: HungPort
) -> None:
    """A caller may ask the API to wait for extraction (`wait_for_extraction`), which then
    calls the model inside the api function: that wait ends with the invocation's deadline,
    answering 503 with the saved source's receipt, never a Lambda timeout."""
    _rebuild_handler_with(
        monkeypatch, PRME_EXTRACTOR="bedrock", AWS_ENDPOINT_URL_BEDROCK_RUNTIME=hung.url
    )

    status, body, elapsed = _invoke(
        "/v1/ingest",
        deployed.alice_key,
        {"content": "We ran 12 km on Sunday.", "wait_for_extraction": True},
    )

    assert status == 503
    assert body["accepted"] is True and body["event_id"]
    assert body["reason_code"] == "Timeout"  # the model call ran out of time, nothing else
    assert elapsed < BUDGET_S + ALLOWANCE_S

"""Request deadlines: scopes only shorten, engine steps leave time for the steps after them, and
every client a call may use fits what is left."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pytest
from botocore.config import Config
from botocore.response import StreamingBody

from prme.backends.aws.deadline_clients import DeadlineBoundClient, DeadlineSpentError
from prme.backends.memory import InMemoryIndex
from prme.embedding.bedrock import BedrockEmbedder
from prme.engine.deadlines import deadline_scope, remaining_seconds, share_of_deadline
from prme.errors import IndexUnavailableError
from prme.model.enums import ProcessingStatus
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.records import OwnerKey
from prme.model.search import IndexDocument, IndexHits, IndexQuery
from tests.harness.engines import ALICE, memory_harness


def test_no_deadline_outside_a_request() -> None:
    assert remaining_seconds() is None
    with share_of_deadline(0.5) as deadline:
        assert deadline is None


def test_a_scope_can_shorten_the_enclosing_deadline_but_never_lengthen_it() -> None:
    with deadline_scope(10.0):
        with deadline_scope(60.0):
            assert (remaining_seconds() or 0) <= 10.0
        with deadline_scope(1.0):
            assert (remaining_seconds() or 0) <= 1.0
        assert 1.0 < (remaining_seconds() or 0) <= 10.0
    assert remaining_seconds() is None


def test_a_share_leaves_the_rest_for_later_steps() -> None:
    with deadline_scope(10.0), share_of_deadline(0.25):
        assert (remaining_seconds() or 0) <= 2.5


class DeadlineRecordingIndex(InMemoryIndex):
    """The in-memory index, noting what is left of the deadline when it is called."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[float | None] = []
        self.neighbours_seen: list[float | None] = []

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        self.seen.append(remaining_seconds())
        super().upsert(documents)

    def search(self, owner: OwnerKey, query: IndexQuery) -> IndexHits:
        self.seen.append(remaining_seconds())
        return super().search(owner, query)

    def session_neighbours(
        self, owner: OwnerKey, anchors: Sequence[tuple[str, datetime, str]], radius: int
    ) -> list[list[str]]:
        self.neighbours_seen.append(remaining_seconds())
        return super().session_neighbours(owner, anchors, radius)


def test_store_gives_the_index_write_only_its_share_of_the_deadline() -> None:
    h = memory_harness()
    index = DeadlineRecordingIndex()
    engine = type(h.engine)(type(h.engine.deps)(**{**h.engine.deps.__dict__, "index": index}))

    with deadline_scope(10.0):
        result = engine.store(ALICE, StoreInput(content="a bounded index write"))

    assert result.processing_status is ProcessingStatus.COMPLETED
    (left,) = index.seen
    # A good part of the deadline is kept for the ledger commit that follows.
    assert left is not None
    assert left <= 8.0


def test_retrieve_keeps_time_for_the_ledger_after_its_search() -> None:
    h = memory_harness()
    index = DeadlineRecordingIndex()
    engine = type(h.engine)(type(h.engine.deps)(**{**h.engine.deps.__dict__, "index": index}))

    with deadline_scope(10.0):
        engine.retrieve(ALICE, RetrieveInput(query="anything"))

    (left,) = index.seen
    assert left is not None
    assert left < 10.0 * 0.7


def test_session_context_leaves_time_for_the_reads_and_receipt_after_it() -> None:
    h = memory_harness()
    index = DeadlineRecordingIndex()
    engine = type(h.engine)(type(h.engine.deps)(**{**h.engine.deps.__dict__, "index": index}))
    for content in ("where did you go in May", "we went hiking in the Alps"):
        engine.store(ALICE, StoreInput(content=content, session_id="trip"))

    with deadline_scope(10.0):
        engine.retrieve(ALICE, RetrieveInput(query="hiking"))

    (left,) = index.neighbours_seen
    assert left is not None
    assert left <= 6.0


def configs_by_budget() -> DeadlineBoundClient:
    """A stand-in whose "clients" are the botocore configs it built them from."""
    return DeadlineBoundClient(lambda config: config)


def worst_case_s(config: Config) -> float:
    attempts = config.retries["total_max_attempts"]
    per_attempt = config.connect_timeout + config.read_timeout
    return float(attempts * per_attempt + (attempts - 1) * 1.0)


def test_without_a_deadline_calls_keep_the_default_timeouts() -> None:
    config = configs_by_budget().current()
    assert (config.connect_timeout, config.read_timeout) == (3.0, 10.0)
    assert config.retries["total_max_attempts"] == 4


@pytest.mark.parametrize("budget_s", [25.0, 12.0, 5.0, 2.2, 1.0, 0.6, 0.3])
def test_under_a_deadline_every_attempt_and_retry_fits_what_is_left(budget_s: float) -> None:
    clients = configs_by_budget()
    with deadline_scope(budget_s):
        config = clients.current()
    assert worst_case_s(config) <= budget_s
    # The longest attempt that fits is chosen, not a needlessly short one.
    assert config.connect_timeout + config.read_timeout >= budget_s / 4


def test_a_spent_deadline_calls_nothing() -> None:
    clients = configs_by_budget()
    with deadline_scope(0.1), pytest.raises(DeadlineSpentError):
        clients.current()


class DeadlineRecordingTitan:
    """A Bedrock runtime client that notes the deadline each request sees."""

    def __init__(self) -> None:
        self.seen: list[float | None] = []

    def invoke_model(self, **request: Any) -> dict[str, Any]:
        self.seen.append(remaining_seconds())
        raw = json.dumps({"embedding": [1.0, 0.0, 0.0, 0.0]}).encode()
        return {"body": StreamingBody(io.BytesIO(raw), len(raw))}


def test_bedrock_requests_sent_from_its_thread_pool_see_the_callers_deadline() -> None:
    titan = DeadlineRecordingTitan()
    embedder = BedrockEmbedder(titan, "amazon.titan-embed-text-v2:0", 4, max_concurrency=4)

    with deadline_scope(10.0):
        embedder.embed(["one", "two", "three"])

    assert len(titan.seen) == 3
    assert all(left is not None and left <= 10.0 for left in titan.seen)


def recorded_app(budget_ms: int) -> tuple[Any, DeadlineRecordingIndex, dict[str, str]]:
    """The real app over the in-memory backend, its recording index, and an owner's header."""
    from prme.backends.memory import InMemoryCredentialStore
    from prme.engine.credentials import CredentialService
    from prme.http.app import create_app
    from prme.http.auth import AuthPolicy
    from prme.http.dependencies import ApiRuntime
    from prme.model.enums import CredentialRole

    h = memory_harness()
    index = DeadlineRecordingIndex()
    engine = type(h.engine)(type(h.engine.deps)(**{**h.engine.deps.__dict__, "index": index}))
    credentials = CredentialService(InMemoryCredentialStore(), h.clock)
    key = credentials.create(tenant_id="t1", owner_id="alice", role=CredentialRole.OWNER).secret
    runtime = ApiRuntime(
        engine=engine, credentials=credentials, auth=AuthPolicy(), request_budget_ms=budget_ms
    )
    return create_app(runtime), index, {"Authorization": f"Bearer {key}"}


def test_each_http_request_runs_under_the_configured_budget() -> None:
    from fastapi.testclient import TestClient

    app, index, headers = recorded_app(2_000)
    with TestClient(app) as client:
        response = client.post("/v1/retrieve", json={"query": "anything"}, headers=headers)
    assert response.status_code == 200
    (left,) = index.seen
    assert left is not None
    assert left <= 2.0
    # The scope ends with the request.
    assert remaining_seconds() is None


def test_mcp_tool_calls_run_under_the_same_budget() -> None:
    from fastapi.testclient import TestClient

    app, index, headers = recorded_app(2_000)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory_store", "arguments": {"content": "said over MCP"}},
    }
    with TestClient(app, base_url="http://localhost") as client:
        response = client.post(
            "/mcp", json=call, headers={**headers, "Accept": "application/json, text/event-stream"}
        )
    assert response.status_code == 200
    (left,) = index.seen
    assert left is not None
    assert left <= 2.0


@pytest.mark.parametrize("budget_s", [25.0, 2.2, 1.0])
def test_botocore_makes_no_more_attempts_than_the_budget_allows(budget_s: float) -> None:
    """Counted on a real client whose every attempt times out (before anything is sent)."""
    import boto3
    from botocore.exceptions import ReadTimeoutError

    attempts: list[float] = []

    def time_out(**_: Any) -> None:
        attempts.append(1.0)
        raise ReadTimeoutError(endpoint_url="http://127.0.0.1:9")

    clients = DeadlineBoundClient(
        lambda config: boto3.client(
            "dynamodb",
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=config,
        )
    )
    with deadline_scope(budget_s):
        client = clients.current()
        client.meta.events.register("before-send", time_out)
        with pytest.raises(ReadTimeoutError):
            client.get_item(TableName="t", Key={"pk": {"S": "k"}})
    per_attempt = client.meta.config.connect_timeout + client.meta.config.read_timeout
    assert len(attempts) * per_attempt + (len(attempts) - 1) * 1.0 <= budget_s


class SlowIndex(InMemoryIndex):
    """Refuses writes while `down`; afterwards each write takes `delay_s`."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.down = True
        self._delay_s = delay_s

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        if self.down:
            raise IndexUnavailableError()
        time.sleep(self._delay_s)
        super().upsert(documents)


def test_a_processing_pass_stops_in_time_to_answer_with_its_report() -> None:
    h = memory_harness()
    index = SlowIndex(delay_s=0.2)
    engine = type(h.engine)(type(h.engine.deps)(**{**h.engine.deps.__dict__, "index": index}))
    owners = [OwnerKey(tenant_id="t1", owner_id=f"owner-{i}") for i in range(8)]
    for owner in owners:
        engine.store(owner, StoreInput(content="left pending while the index was down"))
    index.down = False

    with deadline_scope(1.0):
        report = engine.process_materializations(None)

    # Each owner's batch takes 0.2 s: the pass stopped with most of them still pending,
    # instead of running on past the deadline (8 x 0.2 s).
    assert 0 < report.processed < len(owners)
    assert report.pending == len(owners) - report.processed

"""The remote client's retry rules and error answers, over httpx's in-memory transport: which
answers are retried and how often, what waits, which keys repeat, and what reaches a message."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from prme.client import AsyncMemoryClient, MemoryClient
from prme.errors import (
    BadRequestError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    PrmeError,
    ProcessingIncompleteError,
    ServerUnreachableError,
    StorageUnavailableError,
)
from prme.remote import AsyncHttpTransport, HttpTransport, RetryPolicy

BASE = "http://prme.test"
POLICY = RetryPolicy(attempts=4, base_delay=0.5, max_delay=3)
NODE = str(uuid.uuid4())
Reply = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """Answers each request with the next reply and keeps what was sent."""

    def __init__(self, *replies: Reply | httpx.Response) -> None:
        self.replies = list(replies)
        self.sent: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        reply = self.replies[min(len(self.sent), len(self.replies)) - 1]
        return reply(request) if callable(reply) else reply


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr("prme.remote.time.sleep", slept.append)

    async def no_wait(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("prme.remote.asyncio.sleep", no_wait)
    return slept


def _client(recorder: Recorder, api_key: str | None = "prme_k_secret") -> MemoryClient:
    client = MemoryClient(BASE, api_key=api_key, retries=POLICY)
    client.close()  # its own httpx client, replaced by one over the recorder
    client._transport = HttpTransport(
        BASE,
        api_key=api_key,
        timeout=5,
        retries=POLICY,
        wire=httpx.MockTransport(recorder),
    )
    return client


def _node(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json=_node_body())


def _node_body() -> dict[str, Any]:
    when = "2026-01-01T00:00:00Z"
    return {
        "id": NODE,
        "user_id": "u",
        "node_type": "note",
        "content": "x",
        "content_sha256": "0" * 64,
        "scope": "personal",
        "session_id": None,
        "speaker": None,
        "source_type": "user_stated",
        "epistemic_type": "asserted",
        "confidence": 0.5,
        "salience": 0.5,
        "lifecycle_state": "stable",
        "event_time": None,
        "valid_from": None,
        "valid_to": None,
        "created_at": when,
        "updated_at": when,
        "ttl_days": None,
        "expires_at": None,
        "evidence_refs": [],
        "metadata": {},
    }


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, BadRequestError),
        (404, NotFoundError),
        (409, ConflictError),
        (422, InvalidRequestError),
    ],
)
def test_a_client_error_is_never_retried(
    status: int, error: type[PrmeError], waits: list[float]
) -> None:
    recorder = Recorder(httpx.Response(status, json={"detail": "No"}))
    with _client(recorder) as client, pytest.raises(error):
        client.get_node(NODE)
    assert (len(recorder.sent), waits) == (1, [])


def test_retry_after_is_honoured_up_to_the_cap_and_attempts_are_bounded(
    waits: list[float],
) -> None:
    busy = httpx.Response(429, headers={"Retry-After": "2"}, json={"detail": "Slow down"})
    capped = httpx.Response(503, headers={"Retry-After": "60"}, json={"detail": "Busy"})
    recorder = Recorder(busy, capped, httpx.Response(503, json={"detail": "Busy"}))
    with _client(recorder) as client, pytest.raises(StorageUnavailableError) as failed:
        client.get_node(NODE)
    assert len(recorder.sent) == POLICY.attempts
    assert waits[:2] == [2.0, 3.0]  # the server's wait, then the cap
    assert 1.0 <= waits[2] <= 2.0  # no Retry-After: the third wait, base * 2**2 with jitter
    assert str(failed.value) == "Busy"


def test_every_attempt_of_a_write_carries_the_same_key_and_the_callers_own(
    waits: list[float],
) -> None:
    stored = httpx.Response(
        200, json={"event_id": NODE, "node_id": NODE, "processing_status": "completed"}
    )
    recorder = Recorder(httpx.Response(502), httpx.Response(504), stored)
    with _client(recorder) as client:
        client.store("kept once")
        mine = str(uuid.uuid4())
        client.store("kept once more", idempotency_key=mine)
    keys = [request.headers["Idempotency-Key"] for request in recorder.sent]
    assert len(set(keys[:3])) == 1
    assert keys[3] == mine
    assert uuid.UUID(keys[0])


def test_a_write_without_a_key_is_not_repeated_after_an_ambiguous_failure(
    waits: list[float],
) -> None:
    recorder = Recorder(httpx.Response(502, text="<html>gateway secret page</html>"))
    with _client(recorder) as client, pytest.raises(PrmeError) as failed:
        client.supersede(NODE, NODE)
    assert len(recorder.sent) == 1
    # A 5xx body that is not the server's error body never reaches the message.
    assert str(failed.value) == "HTTP 502"

    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    lost = Recorder(timeout)
    with _client(lost) as client, pytest.raises(ServerUnreachableError):
        client.supersede(NODE, NODE)
    assert len(lost.sent) == 1


def test_a_refused_connection_and_a_lost_read_are_retried_when_safe(waits: list[float]) -> None:
    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    recorder = Recorder(refused, timeout, _node)
    with _client(recorder) as client:
        assert client.get_node(NODE).id == NODE
    assert len(recorder.sent) == 3


def test_a_500_shows_only_the_servers_detail_field(waits: list[float]) -> None:
    leaked = {"detail": "Internal server error", "trace": "provider said SECRET"}
    recorder = Recorder(httpx.Response(500, json=leaked))
    with _client(recorder) as client, pytest.raises(PrmeError) as failed:
        client.get_node(NODE)
    assert type(failed.value) is PrmeError
    assert "SECRET" not in str(failed.value)
    assert len(recorder.sent) == 1


def test_an_accepted_503_is_the_receipt_not_a_retry(waits: list[float]) -> None:
    event_id = str(uuid.uuid4())
    body = {
        "detail": "Source saved; processing did not complete.",
        "event_id": event_id,
        "reason_code": "index_unavailable",
        "accepted": True,
    }
    recorder = Recorder(httpx.Response(503, json=body))
    with _client(recorder) as client, pytest.raises(ProcessingIncompleteError) as failed:
        client.ingest("hello", wait_for_extraction=True)
    assert (failed.value.event_id, len(recorder.sent)) == (event_id, 1)


def test_a_422_names_the_field_as_the_embedded_client_does(waits: list[float]) -> None:
    body = {"detail": [{"loc": ["query", "limit"], "msg": "Input should be >= 1", "type": "x"}]}
    recorder = Recorder(httpx.Response(422, json=body))
    with _client(recorder) as client, pytest.raises(InvalidRequestError) as failed:
        client.list_relevance(limit=0)
    assert failed.value.field == ("limit",)
    assert str(failed.value) == "limit: Input should be >= 1"


def test_the_key_is_sent_as_a_bearer_token_and_user_id_where_the_route_reads_it(
    waits: list[float],
) -> None:
    recorder = Recorder(_node)
    with _client(recorder, api_key="prme_k_secret") as client:
        client.get_node(NODE, user_id="alice")
    (sent,) = recorder.sent
    assert sent.headers["Authorization"] == "Bearer prme_k_secret"
    assert (sent.method, sent.url.path, sent.url.params["user_id"]) == (
        "GET",
        f"/v1/nodes/{NODE}",
        "alice",
    )


def test_the_async_transport_retries_alike(waits: list[float]) -> None:
    recorder = Recorder(httpx.Response(503, headers={"Retry-After": "1"}), _node)

    async def read() -> str:
        client = AsyncMemoryClient(BASE, api_key="k", retries=POLICY)
        await client.close()
        client._remote = AsyncHttpTransport(
            BASE,
            api_key="k",
            timeout=5,
            retries=POLICY,
            wire=httpx.MockTransport(recorder),
        )
        async with client:
            return (await client.get_node(NODE)).id

    assert asyncio.run(read()) == NODE
    assert (len(recorder.sent), waits) == (2, [1.0])


def test_a_tenants_limit_is_raised_with_what_it_names_and_waited_for_only_when_short(
    waits: list[float],
) -> None:
    """A 429 of a tenant's limit comes back as RateLimitedError with the limit's fields; one
    that resets sooner than the policy's longest wait is retried after Retry-After, one that
    resets later (the day's retrievals) is raised at once."""
    from prme.errors import QuotaExceededError, RateLimitedError

    day = {
        "detail": "This tenant's 5 retrievals of the UTC day are used",
        "error": "rate_limited",
        "limit": "retrievals_per_day",
        "limit_value": 5,
        "resets_at": "2026-03-02T00:00:00Z",
    }
    recorder = Recorder(httpx.Response(429, headers={"Retry-After": "43200"}, json=day))
    with _client(recorder) as client, pytest.raises(RateLimitedError) as refused:
        client.get_node(NODE)
    assert (len(recorder.sent), waits) == (1, [])
    assert (refused.value.limit, refused.value.limit_value) == ("retrievals_per_day", 5)
    assert refused.value.resets_at is not None and refused.value.resets_at.day == 2

    window = {**day, "limit": "requests_per_second", "limit_value": 2}
    recorder = Recorder(httpx.Response(429, headers={"Retry-After": "2"}, json=window), _node)
    with _client(recorder) as client:
        client.get_node(NODE)
    assert (len(recorder.sent), waits) == (2, [2.0])

    quota = {**day, "error": "quota_exceeded", "limit": "stored_records", "resets_at": None}
    recorder = Recorder(httpx.Response(403, json=quota))
    with _client(recorder) as client, pytest.raises(QuotaExceededError) as over:
        client.get_node(NODE)
    assert (over.value.limit, over.value.resets_at, len(recorder.sent)) == (
        "stored_records",
        None,
        1,
    )

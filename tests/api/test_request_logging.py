"""Request logs: one JSON line per request with its id, route, status, tenant and key, never
memory content or secrets; errors are logged on worker threads, never on the event loop."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from logging.handlers import QueueListener
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.credentials import IssuedKey
from prme.errors import StorageUnavailableError
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.logs import JsonFormatter, start_json_logging
from prme.model.enums import CredentialRole
from prme.model.input_policy import DEFAULT_MAX_BODY_BYTES
from tests.harness.engines import TOKEN_COUNTER

CONTENT = "Diary: the safe code is 4417-KESTREL"


@dataclass
class Served:
    client: TestClient
    alice: IssuedKey


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """The real app over the embedded backend, plus two routes that fail the ways a bug or a
    dependency would: an unexpected exception quoting memory content, and a 503 with a cause."""
    backend = open_embedded(tmp_path / "d", embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    alice = backend.credentials.create(
        tenant_id="acme", owner_id="alice", role=CredentialRole.OWNER
    )
    app = create_app(
        ApiRuntime(engine=backend.engine, credentials=backend.credentials, auth=AuthPolicy())
    )
    add_failing_routes(app)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield Served(client, alice)
    backend.close()


def add_failing_routes(app: FastAPI) -> None:
    def crash() -> None:
        raise RuntimeError(f"could not handle {CONTENT!r}")

    def dependency_down() -> None:
        try:
            raise ConnectionError(f"provider said {CONTENT!r}")
        except ConnectionError as exc:
            raise StorageUnavailableError() from exc

    app.add_api_route("/test/crash", crash, methods=["POST"])
    app.add_api_route("/test/dependency-down", dependency_down, methods=["POST"])


class ThreadRecordingFormatter(JsonFormatter):
    def __init__(self) -> None:
        super().__init__()
        self.on_event_loop: list[bool] = []

    def format(self, record: logging.LogRecord) -> str:
        self.on_event_loop.append(running_on_event_loop())
        return super().format(record)


def running_on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@dataclass
class JsonLog:
    buffer: io.StringIO
    formatter: ThreadRecordingFormatter
    listener: QueueListener
    stopped: bool = False

    def lines(self) -> list[dict[str, Any]]:
        """Every line, once the listener thread has written all that was queued."""
        if not self.stopped:
            self.listener.stop()
            self.stopped = True
        return [json.loads(line) for line in self.buffer.getvalue().splitlines()]


@pytest.fixture
def json_log() -> Iterator[JsonLog]:
    """What `prme serve` installs, writing to a buffer; the prme loggers restored afterwards."""
    prme = logging.getLogger("prme")
    saved = (list(prme.handlers), prme.level, prme.propagate)
    buffer = io.StringIO()
    listener = start_json_logging(("prme",), stream=buffer)
    formatter = ThreadRecordingFormatter()
    for handler in listener.handlers:
        handler.setFormatter(formatter)
    log = JsonLog(buffer, formatter, listener)
    try:
        yield log
    finally:
        log.lines()
        prme.handlers, prme.level, prme.propagate = saved


def test_each_request_logs_one_json_line_without_content_or_secrets(
    served: Served, json_log: JsonLog
) -> None:
    auth = {"Authorization": f"Bearer {served.alice.secret}"}
    # Given a store, a read with a query string, a forbidden call and two failures
    stored = served.client.post("/v1/store", json={"content": CONTENT}, headers=auth)
    assert stored.status_code == 200
    event_id = stored.json()["event_id"]
    read = served.client.get(f"/v1/events/{event_id}?user_id=alice", headers=auth)
    denied = served.client.get(f"/v1/events/{event_id}?user_id=bob", headers=auth)
    crashed = served.client.post("/test/crash", headers={**auth, "X-Request-Id": "trace-42"})
    down = served.client.post("/test/dependency-down", headers=auth)
    assert (read.status_code, denied.status_code) == (200, 403)
    assert (crashed.status_code, down.status_code) == (500, 503)

    # When the listener has written what was queued
    lines = json_log.lines()

    # Then each request has one line with its id (the one returned), route template and caller
    requests = [line for line in lines if line["logger"] == "prme.http.access"]
    assert [(r["method"], r["route"], r["status"]) for r in requests] == [
        ("POST", "/v1/store", 200),
        ("GET", "/v1/events/{event_id}", 200),
        ("GET", "/v1/events/{event_id}", 403),
        ("POST", "/test/crash", 500),
        ("POST", "/test/dependency-down", 503),
    ]
    responses = [stored, read, denied, crashed, down]
    assert [r["request_id"] for r in requests] == [r.headers["x-request-id"] for r in responses]
    assert requests[3]["request_id"] == "trace-42"  # a sane inbound id is kept
    for line in requests[:3]:  # the routes that authenticate
        assert (line["tenant_id"], line["key_id"], line["role"]) == (
            "acme",
            served.alice.credential.key_id,
            "owner",
        )
        assert isinstance(line["duration_ms"], float)
    # And the failures are logged with the request's id, by type and frames only
    errors = {line["message"]: line for line in lines if line["logger"] == "prme.http"}
    assert errors["unhandled error"]["request_id"] == "trace-42"
    assert errors["unhandled error"]["error"]["type"] == "RuntimeError"
    assert errors["request failed: StorageUnavailableError"]["error"]["type"] == "ConnectionError"
    assert (
        errors["request failed: StorageUnavailableError"]["request_id"] == requests[4]["request_id"]
    )
    # And nothing stored, no query string and no key secret reaches the log
    text = json_log.buffer.getvalue()
    for secret in ("KESTREL", served.alice.secret, "user_id=", "bob"):
        assert secret not in text
    # And every line was formatted off the event loop
    assert json_log.formatter.on_event_loop
    assert not any(json_log.formatter.on_event_loop)


def test_a_body_refused_before_parsing_is_logged_with_its_id(
    served: Served, json_log: JsonLog
) -> None:
    oversized = b'{"content": "' + b"x" * (DEFAULT_MAX_BODY_BYTES + 1) + b'"}'
    refused = served.client.post(
        "/v1/store", content=oversized, headers={"content-type": "application/json"}
    )
    assert refused.status_code == 413
    [line] = [line for line in json_log.lines() if line["logger"] == "prme.http.access"]
    assert (line["status"], line["request_id"]) == (413, refused.headers["x-request-id"])


@pytest.mark.parametrize("inbound", ["has space", "x" * 65, "semi;colon", "line\tbreak"])
def test_an_unsafe_inbound_request_id_is_replaced(served: Served, inbound: str) -> None:
    response = served.client.get("/health", headers={"X-Request-Id": inbound})
    returned = response.headers["x-request-id"]
    assert returned != inbound
    assert len(returned) == 32  # a fresh uuid4 hex


class EventLoopSpy(logging.Handler):
    """Stands for a slow handler someone installed (a Rich handler on the root logger, say);
    notes where warnings and errors, the records with tracebacks, are handled."""

    def __init__(self) -> None:
        super().__init__()
        self.on_event_loop: list[bool] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.on_event_loop.append(running_on_event_loop())


def test_errors_are_logged_off_the_event_loop_whatever_handles_them(served: Served) -> None:
    # Given a handler that runs wherever PRME's errors are logged
    spy = EventLoopSpy()
    prme = logging.getLogger("prme")
    prme.addHandler(spy)
    try:
        # When a route fails unexpectedly and another fails on a dependency
        assert served.client.post("/test/crash").status_code == 500
        auth = {"Authorization": f"Bearer {served.alice.secret}"}
        assert served.client.post("/test/dependency-down", headers=auth).status_code == 503
    finally:
        prme.removeHandler(spy)
    # Then both errors were logged, and neither on the thread that runs the event loop
    assert len(spy.on_event_loop) >= 2
    assert not any(spy.on_event_loop)

"""Keyless local mode: decided at startup, only for loopback Host and Origin on every route
(REST and /mcp), and never re-opened while the process runs."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.model.enums import CredentialRole
from tests.harness.engines import TOKEN_COUNTER
from tests.harness.http import MCP_HEADERS, MCP_INITIALIZE

LOOPBACK = "http://127.0.0.1:8000"


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[EmbeddedBackend]:
    opened = open_embedded(tmp_path / "d", embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    yield opened
    opened.close()


def serve(backend: EmbeddedBackend) -> TestClient:
    """The app as `prme serve` builds it on loopback over the embedded backend."""
    policy = AuthPolicy.at_startup(backend.credentials, local_tenant="local")
    runtime = ApiRuntime(engine=backend.engine, credentials=backend.credentials, auth=policy)
    return TestClient(create_app(runtime), base_url=LOOPBACK)


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:8000",
        "127.0.0.1.evil.example",
        "localhost.evil.example:8000",
        "127.0.0.1:notaport",
        "",
    ],
)
def test_a_rebinding_host_is_refused_on_rest_and_mcp(backend: EmbeddedBackend, host: str) -> None:
    # Given a keyless server, and a page whose name now resolves to 127.0.0.1
    with serve(backend) as client:
        stored = client.post("/v1/store", json={"content": "kept local", "user_id": "alice"})
        event_id = stored.json()["event_id"]
        evil = {"host": host}
        # When it calls any route under its own name, Then nothing answers but a 403
        calls = [
            client.post("/v1/store", json={"content": "planted"}, headers=evil),
            client.post("/v1/retrieve", json={"query": "local", "user_id": "alice"}, headers=evil),
            client.get(f"/v1/events/{event_id}", params={"user_id": "alice"}, headers=evil),
            client.post("/mcp", json=MCP_INITIALIZE, headers={**MCP_HEADERS, **evil}),
        ]
        for response in calls:
            assert response.status_code == 403, response.text
            assert "loopback" in response.json()["detail"]
        assert "kept local" not in "".join(r.text for r in calls)
        # And the loopback caller still sees only what it stored
        retrieved = client.post("/v1/retrieve", json={"query": "planted", "user_id": "default"})
        assert retrieved.status_code == 200
        assert retrieved.json()["results"] == []


def test_routes_without_authentication_follow_the_same_rule(backend: EmbeddedBackend) -> None:
    with serve(backend) as client:
        for path in ("/health", "/openapi.json", "/docs"):
            assert client.get(path).status_code == 200
            refused = client.get(path, headers={"host": "evil.example"})
            assert refused.status_code == 403
            assert "loopback" in refused.json()["detail"]


def test_a_keyed_server_answers_any_host(backend: EmbeddedBackend) -> None:
    # A server started with a key is reachable under any name (a proxy, a LAN address)
    issued = backend.credentials.create(
        tenant_id="local", owner_id=None, role=CredentialRole.OPERATOR
    )
    with serve(backend) as client:
        headers = {"host": "memory.internal:8000", "Authorization": f"Bearer {issued.secret}"}
        stored = client.post("/v1/store", json={"content": "x", "user_id": "a"}, headers=headers)
        assert stored.status_code == 200
        assert client.get("/health", headers={"host": "memory.internal"}).status_code == 200


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "http://localhost.evil.example:8000", "null", "file://"]
)
def test_a_cross_site_origin_is_refused(backend: EmbeddedBackend, origin: str) -> None:
    with serve(backend) as client:
        headers = {"origin": origin}
        store = client.post("/v1/store", json={"content": "x"}, headers=headers)
        retrieve = client.post("/v1/retrieve", json={"query": "x"}, headers=headers)
        mcp = client.post("/mcp", json=MCP_INITIALIZE, headers={**MCP_HEADERS, **headers})
        assert store.status_code == retrieve.status_code == mcp.status_code == 403


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8000", None),
        ("localhost", "http://localhost:3000"),
        ("[::1]:8000", "http://[::1]:8000"),
        ("LOCALHOST:8000", "https://127.0.0.1"),
        ("127.0.0.2:8000", "http://127.0.0.2:8000"),
    ],
)
def test_loopback_names_are_served(backend: EmbeddedBackend, host: str, origin: str | None) -> None:
    with serve(backend) as client:
        headers = {"host": host} | ({"origin": origin} if origin else {})
        assert client.post("/v1/store", json={"content": "x"}, headers=headers).status_code == 200
        mcp = client.post("/mcp", json=MCP_INITIALIZE, headers={**MCP_HEADERS, **headers})
        assert mcp.status_code == 200, mcp.text


def test_revoking_the_last_key_of_a_keyed_start_does_not_open_keyless_access(
    backend: EmbeddedBackend,
) -> None:
    # Given a server started while a key existed
    issued = backend.credentials.create(
        tenant_id="local", owner_id="alice", role=CredentialRole.OWNER
    )
    with serve(backend) as client:
        assert client.post("/v1/store", json={"content": "x"}).status_code == 401
        # When the last key is revoked while it runs
        backend.credentials.revoke(issued.credential.key_id)
        # Then keyless calls stay refused on every surface until a restart
        assert client.post("/v1/store", json={"content": "x"}).status_code == 401
        assert client.post("/v1/retrieve", json={"query": "x"}).status_code == 401
        assert client.post("/mcp", json=MCP_INITIALIZE, headers=MCP_HEADERS).status_code == 401


def test_keyless_access_closes_for_good_once_a_key_is_created(backend: EmbeddedBackend) -> None:
    with serve(backend) as client:
        # Given a keyless start
        assert client.post("/v1/store", json={"content": "x"}).status_code == 200
        # When a key is created, keyless calls stop
        issued = backend.credentials.create(
            tenant_id="local", owner_id="alice", role=CredentialRole.OWNER
        )
        assert client.post("/v1/store", json={"content": "x"}).status_code == 401
        # And revoking that key does not bring them back
        backend.credentials.revoke(issued.credential.key_id)
        assert client.post("/v1/store", json={"content": "x"}).status_code == 401
        assert client.post("/mcp", json=MCP_INITIALIZE, headers=MCP_HEADERS).status_code == 401


def test_a_key_created_and_revoked_unseen_still_closes_keyless_access(
    backend: EmbeddedBackend,
) -> None:
    # Given a keyless start over a directory whose only key was revoked before
    earlier = backend.credentials.create(
        tenant_id="local", owner_id=None, role=CredentialRole.OPERATOR
    )
    backend.credentials.revoke(earlier.credential.key_id)
    with serve(backend) as client:
        assert client.post("/v1/store", json={"content": "x"}).status_code == 200
        # When a key is created and revoked with no request in between
        issued = backend.credentials.create(
            tenant_id="local", owner_id="alice", role=CredentialRole.OWNER
        )
        backend.credentials.revoke(issued.credential.key_id)
        # Then keyless access is closed all the same
        assert client.post("/v1/store", json={"content": "x"}).status_code == 401


class _Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_the_server_logs_once_that_keyless_mode_ended(backend: EmbeddedBackend) -> None:
    # The CLI's banner said no key exists; the log is where the operator learns otherwise.
    captured = _Captured()
    auth_log = logging.getLogger("prme.http.auth")
    auth_log.addHandler(captured)
    try:
        with serve(backend) as client:
            assert client.post("/v1/store", json={"content": "x"}).status_code == 200
            assert captured.records == []
            backend.credentials.create(
                tenant_id="local", owner_id=None, role=CredentialRole.OPERATOR
            )
            for _ in range(2):
                assert client.post("/v1/store", json={"content": "x"}).status_code == 401
    finally:
        auth_log.removeHandler(captured)
    assert [(r.levelno, r.getMessage()) for r in captured.records] == [
        (
            logging.WARNING,
            "Keyless local mode ended: an API key exists, so every request now needs one "
            "(until restart)",
        )
    ]

"""The app's routes are built on first use (`DeferredAPIRoute`): a request builds the route it
is answered by and no other, and the OpenAPI document, which builds them all, is the one the
same app publishes with FastAPI's routes built at registration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel

from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.http import app as app_module
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.deferred_routes import DeferredAPIRoute
from prme.http.dependencies import ApiRuntime
from prme.model.enums import CredentialRole
from tests.harness.engines import TOKEN_COUNTER


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[EmbeddedBackend]:
    opened = open_embedded(tmp_path, embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    yield opened
    opened.close()


def _app(backend: EmbeddedBackend) -> FastAPI:
    return create_app(
        ApiRuntime(engine=backend.engine, credentials=backend.credentials, auth=AuthPolicy())
    )


def _built(app: FastAPI) -> set[str]:
    """Paths of the app's deferred routes that FastAPI has built."""
    return {
        route.path
        for route in app.router.routes
        if isinstance(route, DeferredAPIRoute) and route.__dict__.get("_deferred") is None
    }


def test_a_request_builds_only_the_route_that_answers_it(backend: EmbeddedBackend) -> None:
    key = backend.credentials.create(tenant_id="local", owner_id="alice", role=CredentialRole.OWNER)
    app = _app(backend)
    deferred = [r for r in app.router.routes if isinstance(r, DeferredAPIRoute)]
    assert len(deferred) > 50
    assert _built(app) == set()

    with TestClient(app) as client:
        answer = client.post(
            "/v1/retrieve",
            json={"query": "where do I live?"},
            headers={"Authorization": f"Bearer {key.secret}"},
        )

    assert answer.status_code == 200, answer.text
    assert _built(app) == {"/v1/retrieve"}


def test_the_openapi_document_is_the_one_of_routes_built_at_registration(
    backend: EmbeddedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    with TestClient(_app(backend)) as client:
        deferred: dict[str, Any] = client.get("/openapi.json").json()
    monkeypatch.setattr(app_module, "DeferredAPIRoute", APIRoute)
    eager_app = _app(backend)
    assert not any(isinstance(r, DeferredAPIRoute) for r in eager_app.router.routes)
    with TestClient(eager_app) as client:
        eager: dict[str, Any] = client.get("/openapi.json").json()

    assert deferred == eager


class Reply(BaseModel):
    text: str


def test_a_route_registered_wrongly_fails_on_each_use() -> None:
    app = FastAPI()
    app.router.route_class = DeferredAPIRoute

    @app.get("/empty", status_code=204, response_model=Reply)
    def empty() -> None:
        return None

    (route,) = (r for r in app.router.routes if isinstance(r, DeferredAPIRoute))
    for _ in range(2):  # FastAPI's own check, at the first read instead of at registration
        with pytest.raises(AssertionError, match="must not have a response body"):
            _ = route.response_field

"""The published OpenAPI document: every route of the contract, each with its error responses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from tests.conftest import TOKEN_COUNTER

# Every route of the HTTP contract (../shared/spec/http-api.md) and its method.
CONTRACT_ROUTES = {
    ("post", "/v1/store"),
    ("post", "/v1/ingest"),
    ("post", "/v1/ingest/fast"),
    ("post", "/v1/materializations/process"),
    ("get", "/v1/events/{event_id}"),
    ("get", "/v1/events/{event_id}/nodes"),
    ("get", "/v1/events/{event_id}/processing-status"),
    ("get", "/v1/events/{event_id}/extraction-status"),
    ("get", "/v1/nodes/{node_id}"),
    ("put", "/v1/nodes/{node_id}/promote"),
    ("put", "/v1/nodes/{node_id}/archive"),
    ("put", "/v1/nodes/{node_id}/reinforce"),
    ("post", "/v1/supersedences"),
    ("post", "/v1/retrieve"),
    ("get", "/v1/retrievals/{request_id}"),
    ("post", "/v1/relevance"),
    ("get", "/v1/relevance"),
    ("get", "/v1/relevance/{feedback_id}"),
    ("post", "/v1/answer-citations"),
    ("get", "/v1/answer-citations"),
    ("get", "/v1/answer-citations/{citation_id}"),
    ("get", "/v1/alias-proposals"),
    ("post", "/v1/alias-proposals/{proposal_operation_id}/review"),
    ("post", "/v1/quantities/aggregate"),
    ("post", "/v1/quantities/aggregate-text"),
}


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data: Path = tmp_path_factory.mktemp("openapi")
    backend = open_embedded(data, embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    app = create_app(
        ApiRuntime(engine=backend.engine, credentials=backend.credentials, auth=AuthPolicy())
    )
    with TestClient(app) as client:
        document: dict[str, Any] = client.get("/openapi.json").json()
    backend.close()
    return document


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
    ]


def test_every_contract_route_is_published(schema: dict[str, Any]) -> None:
    published = {(method, path) for method, path, _ in operations(schema)}
    assert published >= CONTRACT_ROUTES, sorted(CONTRACT_ROUTES - published)


def test_every_route_lists_its_error_responses(schema: dict[str, Any]) -> None:
    for method, path, operation in operations(schema):
        declared = set(operation["responses"])
        name = f"{method.upper()} {path}"
        assert "200" in declared, name
        # Every route is authenticated, validates input and may meet an outage.
        assert {"401", "403", "422", "503"} <= declared, name
        if "{" in path:
            assert "404" in declared, f"{name} takes an id but lists no 404"
        headers = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
        if "Idempotency-Key" in headers:
            assert "409" in declared, f"{name} takes an Idempotency-Key but lists no 409"
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")):
                content = response.get("content", {}).get("application/json", {})
                assert "schema" in content, f"{name} {status} has no error body schema"

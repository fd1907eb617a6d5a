"""The published OpenAPI document: every route of the contract with its error responses, and
every schema and field described, with examples that validate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.http.schemas import FastIngestRequest, IngestRequest, RetrieveRequest, StoreRequest
from prme.model.feedback import AnswerCitationInput, RelevanceInput
from prme.model.quantities import QuantityAggregationQuery
from prme.operations import BY_NAME
from tests.harness.engines import TOKEN_COUNTER

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
        entry = BY_NAME.get(operation.get("operationId", ""))
        success = str(entry.http.status) if entry is not None and entry.http is not None else "200"
        assert success in declared, name
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


def undocumented(schema: dict[str, Any]) -> dict[str, set[str]]:
    """Per component schema, its properties without a description ("" for the schema itself)."""
    missing: dict[str, set[str]] = {}
    for name, component in schema["components"]["schemas"].items():
        lacking = {p for p, s in component.get("properties", {}).items() if "description" not in s}
        if "description" not in component:
            lacking.add("")
        if lacking:
            missing[name] = lacking
    return missing


def test_every_schema_and_property_has_a_description(schema: dict[str, Any]) -> None:
    assert undocumented(schema) == {}


EXAMPLED_REQUESTS: list[type[BaseModel]] = [
    StoreRequest,
    IngestRequest,
    FastIngestRequest,
    RetrieveRequest,
    RelevanceInput,
    AnswerCitationInput,
    QuantityAggregationQuery,
]


@pytest.mark.parametrize("model", EXAMPLED_REQUESTS, ids=lambda m: m.__name__)
def test_request_examples_validate(model: type[BaseModel]) -> None:
    examples = model.model_json_schema()["examples"]
    assert examples
    for example in examples:
        # As a request body arrives: JSON text, so dates and UUIDs are strings.
        model.model_validate_json(json.dumps(example))


def test_request_bodies_publish_their_examples(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    for name in (
        "StoreRequest",
        "IngestRequest",
        "FastIngestRequest",
        "RetrieveRequest",
        "RelevanceRequest",
        "AnswerCitationRequest",
        "QuantityAggregationQuery",
    ):
        assert components[name].get("examples"), name


def test_write_and_retrieve_examples_are_accepted_by_their_routes(tmp_path: Path) -> None:
    backend = open_embedded(tmp_path, embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    runtime = ApiRuntime(
        engine=backend.engine,
        credentials=backend.credentials,
        auth=AuthPolicy(open_tenant="local"),
    )
    routes: dict[str, type[BaseModel]] = {
        "/v1/store": StoreRequest,
        "/v1/ingest": IngestRequest,
        "/v1/ingest/fast": FastIngestRequest,
        "/v1/retrieve": RetrieveRequest,
    }
    # Keyless loopback mode: the examples carry no user_id and act for the default owner.
    with TestClient(create_app(runtime), base_url="http://127.0.0.1:8000") as client:
        for path, model in routes.items():
            for example in model.model_json_schema()["examples"]:
                response = client.post(path, json=example)
                assert response.status_code == 200, (path, response.json())
    backend.close()

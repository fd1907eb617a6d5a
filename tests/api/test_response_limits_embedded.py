"""The embedded HTTP app under the same bounds as the API function: a retrieval's size as sent
(measured as Lambda would carry it) stays under PRME_MAX_RESPONSE_BYTES on REST and /mcp, the
schema documents what was left out, and a processing pass says what budget it was given."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx2 import Response

from prme.backends.clock import ManualClock
from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.deadlines import PASS_SHARE_OF_DEADLINE
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.model.enums import CredentialRole
from tests.harness.engines import TOKEN_COUNTER
from tests.harness.lambda_limits import payload_bytes

# Small, so a few records reach it and an error in the measure shows at once.
MAX_RESPONSE_BYTES = 256 * 1024
REQUEST_BUDGET_MS = 25_000
WORST_CASE_TEXT = '"\\\x01\x1f\n\t\x7f中文字😀🙂 '
RECORDS = 12
PRESENTATION = '"中\\😀'


@dataclass
class Served:
    client: TestClient
    headers: dict[str, str]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    backend: EmbeddedBackend = open_embedded(
        tmp_path / "data",
        embedder=HashingEmbedder(),
        clock=ManualClock(),
        token_counter=TOKEN_COUNTER,
    )
    key = backend.credentials.create(tenant_id="local", owner_id="alice", role=CredentialRole.OWNER)
    app = create_app(
        ApiRuntime(
            engine=backend.engine,
            credentials=backend.credentials,
            auth=AuthPolicy(),
            max_response_bytes=MAX_RESPONSE_BYTES,
            request_budget_ms=REQUEST_BUDGET_MS,
        )
    )
    try:
        with TestClient(app) as client:
            yield Served(client, {"Authorization": f"Bearer {key.secret}"})
    finally:
        backend.close()


def _as_lambda_returns(response: Response) -> int:
    """The response's size as the Lambda runtime would send it (Mangum's shape, text body)."""
    return payload_bytes(
        {
            "statusCode": response.status_code,
            "headers": dict(response.headers),
            "body": response.text,
            "isBase64Encoded": False,
        }
    )


def _store_worst_case(served: Served) -> None:
    """Records of only the characters that grow most when escaped, with a speaker, a session,
    metadata and a value binding of the same kind, so every copy of a record's text is sent."""
    for i in range(RECORDS):
        content = f"{i} {PRESENTATION} {WORST_CASE_TEXT * 500}"
        stored = served.client.post(
            "/v1/store",
            json={
                "content": content,
                "speaker": 'Ann "中" \\😀',
                "session_id": 's\\"😀',
                "metadata": {'k"\\😀': WORST_CASE_TEXT * 40},
                "value_bindings": [
                    {
                        "reference": "r1",
                        "kind": "text",
                        "presentation": PRESENTATION,
                        "lookup": "L1",
                    }
                ],
            },
            headers=served.headers,
        )
        assert stored.status_code == 200, stored.text


@pytest.mark.parametrize("context_format", ["reader", "auditable"])
def test_rest_retrieve_stays_under_the_measured_bound(served: Served, context_format: str) -> None:
    _store_worst_case(served)
    response = served.client.post(
        "/v1/retrieve",
        json={
            "query": "中文字 😀",
            "limit": RECORDS,
            "token_budget": 200_000,
            "context_format": context_format,
        },
        headers=served.headers,
    )
    assert response.status_code == 200
    assert _as_lambda_returns(response) <= MAX_RESPONSE_BYTES
    body = response.json()
    assert body["results"]
    assert body["size_limit"]["omitted"] == RECORDS - len(body["results"])
    assert body["size_limit"]["max_response_bytes"] == MAX_RESPONSE_BYTES
    left_out = [e for e in body["bundle"]["excluded"] if e["reason"] == "response_size"]
    assert len(left_out) == body["size_limit"]["omitted"]
    # The context carries only the records returned.
    returned = {r["node_id"] for r in body["results"]}
    assert set(body["bundle"]["context_references"].values()) <= returned
    # The receipt says why each left-out record was not returned.
    receipt = served.client.get(
        f"/v1/retrievals/{body['metrics']['request_id']}", headers=served.headers
    ).json()
    outcomes = {c["node_id"]: c["outcome"] for c in receipt["candidates"]}
    assert {outcomes[e["node_id"]] for e in left_out} == {"response_size"}


@pytest.mark.parametrize("include_context", [True, False])
def test_mcp_retrieve_stays_under_the_measured_bound(served: Served, include_context: bool) -> None:
    _store_worst_case(served)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "memory_retrieve",
            "arguments": {
                "query": "中文字 😀",
                "limit": RECORDS,
                "token_budget": 200_000,
                "include_context": include_context,
            },
        },
    }
    response = served.client.post(
        "/mcp",
        json=call,
        headers={**served.headers, "accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 200
    assert _as_lambda_returns(response) <= MAX_RESPONSE_BYTES
    result: dict[str, Any] = response.json()["result"]
    structured = result["structuredContent"]
    assert structured["results"]
    assert structured["size_limit"]["omitted"] == RECORDS - len(structured["results"])
    # The text is what a model reads: the context (or the results), and what was left out.
    text = result["content"][0]["text"]
    assert text.startswith(
        structured["context"] if include_context else structured["results"][0]["node_id"]
    )
    assert f"{structured['size_limit']['omitted']} more ranked memories left out" in text


def test_a_retrieve_that_fits_says_nothing_about_size(served: Served) -> None:
    served.client.post("/v1/store", json={"content": "I moved to Lisbon."}, headers=served.headers)
    body = served.client.post(
        "/v1/retrieve", json={"query": "Lisbon"}, headers=served.headers
    ).json()
    assert len(body["results"]) == 1
    assert body["size_limit"] is None


def test_the_schema_documents_the_size_limit_and_the_budget_given(served: Served) -> None:
    schemas = served.client.get("/openapi.json").json()["components"]["schemas"]
    size_limit = schemas["RetrieveResponse"]["properties"]["size_limit"]
    assert "byte limit" in size_limit["description"]
    notice = schemas["ResponseSizeLimit"]["properties"]
    assert {"reason", "omitted", "max_response_bytes", "message"} <= set(notice)
    report = schemas["MaterializationResponse"]["properties"]
    assert {"budget_ms", "budget_lowered"} <= set(report)


def test_a_budget_ms_over_the_request_budget_is_lowered_and_said(served: Served) -> None:
    for route in ("/v1/materializations/process", "/v1/extractions/process"):
        body = served.client.post(route, json={"budget_ms": 900_000}, headers=served.headers)
        assert body.status_code == 200
        report = body.json()
        assert 0 < report["budget_ms"] <= REQUEST_BUDGET_MS * PASS_SHARE_OF_DEADLINE
        assert report["budget_lowered"] is True

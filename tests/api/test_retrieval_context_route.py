"""GET /v1/retrievals/{request_id}/context and the client method: the saved context rebuilt,
under the receipt's owner rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prme.client import MemoryClient
from tests.harness.http import Api


def retrieval(api: Api) -> dict[str, Any]:
    for text in ("I moved to Lisbon in May.", "I started learning Portuguese in June."):
        stored = api.client.post("/v1/store", json={"content": text}, headers=api.alice)
        assert stored.status_code == 200, stored.text
    response = api.client.post(
        "/v1/retrieve", json={"query": "Where did I move?"}, headers=api.alice
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_the_route_rebuilds_the_context_for_its_owner_only(api: Api) -> None:
    body = retrieval(api)
    route = f"/v1/retrievals/{body['metrics']['request_id']}/context"
    rebuilt = api.client.get(route, headers=api.alice)
    assert rebuilt.status_code == 200, rebuilt.text
    assert rebuilt.json()["matches"] is True
    assert rebuilt.json()["context"] == body["bundle"]["context"]
    assert rebuilt.json()["references"] == body["bundle"]["context_references"]
    # Another owner's key, an unknown id and a malformed one: as on the receipt route.
    assert api.client.get(route, headers=api.bob).json()["error"] == "not_found"
    unknown = "/v1/retrievals/00000000-0000-4000-8000-000000000000/context"
    assert api.client.get(unknown, headers=api.alice).status_code == 404
    malformed = api.client.get("/v1/retrievals/not-a-uuid/context", headers=api.alice)
    assert malformed.status_code == 422


def test_the_client_rebuilds_a_context_in_a_directory(tmp_path: Path) -> None:
    with MemoryClient(tmp_path / "memory") as memory:
        memory.store(content="Our cabin by the lake has two rooms.")
        response = memory.retrieve(query="the cabin")
        rebuilt = memory.get_retrieval_context(response.metrics.request_id)
    assert rebuilt.matches and rebuilt.context == response.bundle.context
    assert list(rebuilt.references.values()) == [r.node_id for r in response.results]

"""Managing memory over HTTP, the client and MCP: node and event listings, deleting one
memory, per-owner counts; status codes, hostile query input and the OpenAPI document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from prme.client import MemoryClient
from prme.engine.identity import Principal
from prme.engine.service import MemoryEngine
from prme.errors import NotFoundError
from prme.mcp.server import build_mcp_server
from prme.settings import Settings
from tests.harness.http import TENANT, Api


def _store(api: Api, content: str, **fields: Any) -> dict[str, Any]:
    response = api.client.post("/v1/store", json={"content": content, **fields}, headers=api.alice)
    assert response.status_code == 200, response.text
    stored: dict[str, Any] = response.json()
    return stored


def _pages(api: Api, path: str, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    after: str | None = None
    for _ in range(20):
        query = {**params, **({"after_id": after} if after else {})}
        response = api.client.get(path, params=query, headers=api.alice)
        assert response.status_code == 200, response.text
        page = response.json()
        items.extend(page["items"])
        after = page["next_after_id"]
        if after is None:
            return items
    raise AssertionError("the listing never ended")


def test_list_delete_and_count_over_http(api: Api) -> None:
    stored = [
        _store(api, f"Alice memory {i}", node_type=kind, session_id="s1" if i else "s0")
        for i, kind in enumerate(["fact", "note", "fact", "note"])
    ]
    node_ids = sorted(s["node_id"] for s in stored)
    nodes = _pages(api, "/v1/nodes", limit=3)
    assert [n["id"] for n in nodes] == node_ids
    facts = _pages(api, "/v1/nodes", node_type="fact", limit=1)
    assert sorted(n["id"] for n in facts) == sorted([stored[0]["node_id"], stored[2]["node_id"]])
    events = _pages(api, "/v1/events", session_id="s0")
    assert [e["id"] for e in events] == [stored[0]["event_id"]]

    doomed = stored[1]
    deleted = api.client.delete(f"/v1/events/{doomed['event_id']}", headers=api.alice)
    assert deleted.status_code == 200, deleted.text
    body = deleted.json()
    assert body["deleted_node_ids"] == [doomed["node_id"]]
    assert "Alice memory" not in deleted.text
    assert api.client.get(f"/v1/events/{doomed['event_id']}", headers=api.alice).status_code == 404
    assert api.client.get(f"/v1/nodes/{doomed['node_id']}", headers=api.alice).status_code == 404
    # A repeated delete answers with the same record.
    again = api.client.delete(f"/v1/events/{doomed['event_id']}", headers=api.alice)
    assert (again.status_code, again.json()) == (200, body)
    # Another owner's key finds nothing to delete.
    other = stored[0]["event_id"]
    assert api.client.delete(f"/v1/events/{other}", headers=api.bob).status_code == 404
    assert api.client.get(f"/v1/events/{other}", headers=api.alice).status_code == 200

    stats = api.client.get("/v1/stats", headers=api.alice)
    assert stats.status_code == 200
    assert stats.json() == {
        "events": 3,
        "nodes": 3,
        "nodes_by_lifecycle_state": {"tentative": 3},
        "nodes_by_type": {"fact": 2, "note": 1},
        "pending_materializations": 0,
        "pending_extractions": 0,
    }


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/nodes", {"after_id": "not-a-cursor"}),
        ("/v1/nodes", {"after_id": "' OR 1=1 --"}),
        ("/v1/nodes", {"limit": 0}),
        ("/v1/nodes", {"limit": 1001}),
        ("/v1/nodes", {"node_type": "everything"}),
        ("/v1/nodes", {"lifecycle_state": "gone"}),
        ("/v1/nodes", {"session_id": ""}),
        ("/v1/nodes", {"surprise": "1"}),
        ("/v1/events", {"after_id": "0"}),
        ("/v1/events", {"limit": -1}),
        ("/v1/events", {"role": "admin"}),
        ("/v1/events", {"since": "yesterday"}),
        ("/v1/events", {"since": "2024-01-01T00:00:00"}),
    ],
)
def test_hostile_listing_queries_are_refused(api: Api, path: str, params: dict[str, Any]) -> None:
    response = api.client.get(path, params=params, headers=api.alice)
    assert response.status_code == 422, response.text


def test_a_malformed_event_id_is_refused_and_an_unknown_one_not_found(api: Api) -> None:
    assert api.client.delete("/v1/events/not-a-uuid", headers=api.alice).status_code == 422
    unknown = "/v1/events/0b8f6a52-4c1e-4c2d-9a57-2f1d7e9c3b10"
    assert api.client.delete(unknown, headers=api.alice).status_code == 404
    assert api.client.delete(unknown).status_code == 401


@pytest.mark.parametrize("api", ["embedded"], indirect=True)
def test_openapi_documents_the_managing_routes(api: Api) -> None:
    paths = api.client.get("/openapi.json").json()["paths"]
    assert paths["/v1/nodes"]["get"]["operationId"] == "list_nodes"
    assert paths["/v1/events"]["get"]["operationId"] == "list_events"
    assert paths["/v1/stats"]["get"]["operationId"] == "get_stats"
    delete = paths["/v1/events/{event_id}"]["delete"]
    assert delete["operationId"] == "delete_memory"
    assert {"200", "404", "422", "503"} <= set(delete["responses"])
    listed = {p["name"] for p in paths["/v1/nodes"]["get"]["parameters"]}
    assert {"limit", "after_id", "node_type", "lifecycle_state", "scope", "session_id"} <= listed


def test_the_client_lists_deletes_and_counts(tmp_path: Path) -> None:
    with MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing")) as client:
        first = client.store("Remember the blue door", user_id="alice")
        second = client.store("Remember the red door", node_type="fact", user_id="alice")
        assert first.node_id is not None and second.node_id is not None
        page = client.list_nodes(limit=1, user_id="alice")
        assert len(page.items) == 1 and page.next_after_id is not None
        rest = client.list_nodes(limit=5, after_id=page.next_after_id, user_id="alice")
        assert sorted([page.items[0].id, *(n.id for n in rest.items)]) == sorted(
            [first.node_id, second.node_id]
        )
        assert [n.id for n in client.list_nodes(node_type="fact", user_id="alice").items] == [
            second.node_id
        ]
        assert len(client.list_events(role="user", user_id="alice").items) == 2
        deletion = client.delete_memory(first.event_id, user_id="alice")
        assert deletion.deleted_node_ids == [first.node_id]
        with pytest.raises(NotFoundError):
            client.get_event(first.event_id, user_id="alice")
        with pytest.raises(NotFoundError):
            client.delete_memory(second.event_id, user_id="bob")
        assert client.get_stats(user_id="alice").events == 1


def _tool(engine: MemoryEngine, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    server = build_mcp_server(engine, lambda: Principal.owner(TENANT, "alice"))

    async def main() -> dict[str, Any]:
        result = await server.call_tool(name, arguments)
        content = getattr(result, "structured_content", None)
        assert isinstance(content, dict), result
        return {"is_error": getattr(result, "is_error", False), **content}

    return anyio.run(main)


@pytest.mark.parametrize("api", ["embedded"], indirect=True)
def test_mcp_lists_and_forgets(api: Api) -> None:
    engine: MemoryEngine = api.client.app.state.runtime.engine  # type: ignore[attr-defined]
    kept = _store(api, "The spare key is under the mat")
    doomed = _store(api, "My PIN is 4471")
    listed = _tool(engine, "memory_list", {"limit": 1})
    assert not listed["is_error"] and len(listed["items"]) == 1
    assert listed["next_after_id"] is not None
    forgot = _tool(engine, "memory_forget", {"event_id": doomed["event_id"]})
    assert forgot["deleted_node_ids"] == [doomed["node_id"]]
    remaining = _tool(engine, "memory_list", {})
    assert [n["id"] for n in remaining["items"]] == [kept["node_id"]]
    bad = _tool(engine, "memory_list", {"after_id": "not-a-cursor"})
    assert bad["is_error"]

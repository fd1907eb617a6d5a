"""Erasing a user over HTTP and through the client: operator keys only, an explicit confirmation,
the receipt, and nothing of the user afterwards by any route; not an MCP tool."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from prme.client import MemoryClient
from prme.engine.identity import Principal
from prme.errors import InvalidRequestError
from prme.mcp.server import build_mcp_server
from prme.settings import Settings
from tests.harness.http import Api


def _store(api: Api, content: str, key: str | None = None) -> dict[str, str]:
    headers = {**api.alice, **({"Idempotency-Key": key} if key else {})}
    response = api.client.post("/v1/store", json={"content": content}, headers=headers)
    assert response.status_code == 200, response.text
    stored: dict[str, str] = response.json()
    return stored


def test_an_operator_erases_a_user_and_no_route_finds_anything_of_them(api: Api) -> None:
    key = "0b6f4a4e-2c7a-4c8e-9a7b-5d2f3c1e0a99"
    stored = _store(api, "Alice keeps bees on the roof", key)
    bob = api.client.post("/v1/store", json={"content": "Bob keeps bees"}, headers=api.bob).json()
    retrieved = api.client.post("/v1/retrieve", json={"query": "bees"}, headers=api.alice).json()
    request_id = retrieved["metrics"]["request_id"]
    c, op = api.client, api.operator

    refused = [
        c.delete("/v1/owner", params={"user_id": "alice"}, headers=op),
        c.delete("/v1/owner", params={"user_id": "alice", "confirm": "bob"}, headers=op),
        c.delete("/v1/owner", params={"confirm": "alice"}, headers=api.alice),
    ]
    assert [r.status_code for r in refused] == [422, 422, 403]
    assert c.get(f"/v1/events/{stored['event_id']}", headers=api.alice).status_code == 200

    erased = c.delete("/v1/owner", params={"user_id": "alice", "confirm": "alice"}, headers=op)

    assert erased.status_code == 200, erased.text
    receipt = erased.json()
    assert receipt["complete"] is True
    assert receipt["removed"]["events"] == 1 and receipt["removed"]["api_keys"] == 1
    assert receipt["removed"]["retrieval_receipts"] == 1
    assert receipt["removed"]["idempotency_records"] == 1
    assert "alice" not in erased.text and "bees" not in erased.text
    # Alice's key is gone with her; the operator finds nothing of her by any route.
    assert c.get("/v1/stats", headers=api.alice).status_code == 401
    as_op = {"user_id": "alice"}
    for path in (
        f"/v1/events/{stored['event_id']}",
        f"/v1/nodes/{stored['node_id']}",
        f"/v1/retrievals/{request_id}",
    ):
        assert c.get(path, params=as_op, headers=op).status_code == 404, path
    assert c.get("/v1/nodes", params=as_op, headers=op).json()["items"] == []
    assert c.get("/v1/events", params=as_op, headers=op).json()["items"] == []
    assert c.get("/v1/stats", params=as_op, headers=op).json()["events"] == 0
    assert c.get("/v1/alias-proposals", params=as_op, headers=op).json()["items"] == []
    replayed = c.post(
        "/v1/store",
        json={"content": "Alice keeps bees on the roof", "user_id": "alice"},
        headers={**op, "Idempotency-Key": key},
    ).json()
    assert replayed["event_id"] != stored["event_id"]
    # Bob is untouched.
    assert c.get(f"/v1/events/{bob['event_id']}", headers=api.bob).status_code == 200


def test_the_client_erases_with_a_confirmation(tmp_path: Path) -> None:
    with MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing")) as client:
        client.store("Carol's passport number is in the drawer", user_id="carol")
        client.store("Dave likes chess", user_id="dave")
        with pytest.raises(InvalidRequestError):
            client.erase_owner(user_id="carol", confirm="dave")

        receipt = client.erase_owner(user_id="carol", confirm="carol")

        assert receipt.complete and receipt.removed.events == 1
        assert client.get_stats(user_id="carol").events == 0
        assert client.get_stats(user_id="dave").events == 1


def test_erase_is_no_mcp_tool_in_any_tool_set(api: Api) -> None:
    engine = api.client.app.state.runtime.engine  # type: ignore[attr-defined]
    server = build_mcp_server(engine, lambda: Principal.operator("local"), tools="full")
    names = {tool.name for tool in asyncio.run(server.list_tools())}
    assert names and not any("erase" in name for name in names)

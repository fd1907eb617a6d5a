"""GET /v1/events/{event_id}/extraction over HTTP, the client and MCP: the saved extraction
record of a source, what it superseded, and 404 for anything not an owner's completed one."""

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

UNKNOWN = "0b8f6a52-4c1e-4c2d-9a57-2f1d7e9c3b10"


def say(api: Api, text: str, headers: dict[str, str], **fields: Any) -> dict[str, Any]:
    body = {"content": text, "wait_for_extraction": True, **fields}
    response = api.client.post("/v1/ingest", json=body, headers=headers)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_the_saved_extraction_names_artifacts_nodes_and_what_was_superseded(api: Api) -> None:
    lisbon = say(api, "I live in Lisbon.", api.alice)
    berlin = say(api, "I moved from Lisbon to Berlin.", api.alice)

    response = api.client.get(f"/v1/events/{berlin['event_id']}/extraction", headers=api.alice)

    assert response.status_code == 200, response.text
    record = response.json()
    assert record["event_id"] == berlin["event_id"]
    assert record["extractor"] == "rules/1"
    (claim,) = record["extraction"]["claims"]
    assert (claim["object"], claim["replaces_object"], claim["polarity"]) == (
        "Berlin",
        "Lisbon",
        "affirmed",
    )
    # The one-sentence claim rides on the message's own note, which replaced Lisbon's.
    assert record["annotated_node_ids"] == [berlin["node_id"]]
    (superseded,) = record["superseded"]
    assert (superseded["old_node_id"], superseded["new_node_id"]) == (
        lisbon["node_id"],
        berlin["node_id"],
    )
    assert superseded["edge_id"] in record["edge_ids"]
    old = api.client.get(f"/v1/nodes/{lisbon['node_id']}", headers=api.alice).json()
    assert old["lifecycle_state"] == "superseded"


def test_unknown_foreign_unextracted_and_malformed_events(api: Api) -> None:
    bobs = say(api, "I live in Oslo.", api.bob)
    stored = api.client.post("/v1/store", json={"content": "A note"}, headers=api.alice).json()
    pending = api.client.post(
        "/v1/ingest", json={"content": "I live in Rome."}, headers=api.alice
    ).json()

    def status(event_id: str, headers: dict[str, str] | None = None) -> int:
        path = f"/v1/events/{event_id}/extraction"
        return api.client.get(
            path, headers=headers if headers is not None else api.alice
        ).status_code

    assert status(UNKNOWN) == 404
    assert status(bobs["event_id"]) == 404  # another owner's event does not exist for alice
    assert status(bobs["event_id"], api.bob) == 200
    assert status(stored["event_id"]) == 404  # stored, never extracted
    assert status(pending["event_id"]) == 404  # extraction not completed yet
    assert status("not-a-uuid") == 422
    assert status(UNKNOWN, {}) == 401
    body = api.client.get(f"/v1/events/{UNKNOWN}/extraction", headers=api.alice).json()
    assert body["error"] == "not_found"


def test_the_client_reads_the_saved_extraction(tmp_path: Path) -> None:
    with MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing")) as client:
        result = client.ingest("I now work at Acme.", wait_for_extraction=True, user_id="alice")

        record = client.get_event_extraction(result.event_id, user_id="alice")

        assert record.extraction is not None
        assert [c.object for c in record.extraction.claims] == ["Acme"]
        with pytest.raises(NotFoundError):
            client.get_event_extraction(result.event_id, user_id="bob")


@pytest.mark.parametrize("api", ["embedded"], indirect=True)
def test_the_mcp_tool_reads_the_saved_extraction(api: Api) -> None:
    engine: MemoryEngine = api.client.app.state.runtime.engine  # type: ignore[attr-defined]
    said = say(api, "I switched from tea to coffee.", api.alice)
    server = build_mcp_server(engine, lambda: Principal.owner(TENANT, "alice"), tools="full")

    async def call(arguments: dict[str, Any]) -> dict[str, Any]:
        result = await server.call_tool("memory_get_event_extraction", arguments)
        content = getattr(result, "structured_content", None)
        assert isinstance(content, dict), result
        return {"is_error": getattr(result, "is_error", False), **content}

    found = anyio.run(call, {"event_id": said["event_id"]})
    missing = anyio.run(call, {"event_id": UNKNOWN})

    assert not found["is_error"]
    assert found["extraction"]["claims"][0]["replaces_object"] == "tea"
    assert missing["is_error"]

"""The reads the memory inspector signs in and lists with, over HTTP, the clients and MCP:
`GET /v1/me`, and the text and time filters of `GET /v1/nodes` and `GET /v1/events`."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp_types import CallToolResult

from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.client import MemoryClient
from prme.embedding.hashing import HashingEmbedder
from prme.engine.identity import Principal
from prme.errors import InvalidRequestError
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.mcp.server import build_mcp_server
from prme.model.caller import CallerIdentity
from prme.model.enums import CredentialRole
from prme.model.listings import MAX_SEARCH_TEXT_CHARS
from prme.settings import Settings
from tests.harness.engines import TOKEN_COUNTER
from tests.harness.http import TENANT, Api, bearer
from tests.harness.live_server import live_server


def _store(api: Api, content: str, headers: dict[str, str], **fields: Any) -> dict[str, Any]:
    response = api.client.post("/v1/store", json={"content": content, **fields}, headers=headers)
    assert response.status_code == 200, response.text
    stored: dict[str, Any] = response.json()
    return stored


def _ids(api: Api, path: str, headers: dict[str, str], **params: Any) -> list[str]:
    ids: list[str] = []
    after: str | None = None
    for _ in range(50):
        query = {**params, **({"after_id": after} if after else {})}
        response = api.client.get(path, params=query, headers=headers)
        assert response.status_code == 200, response.text
        page = response.json()
        ids.extend(item["id"] for item in page["items"])
        after = page["next_after_id"]
        if after is None:
            return ids
    raise AssertionError("the listing never ended")


def test_me_says_who_each_key_is_and_never_its_secret(api: Api) -> None:
    issued = api.credentials.create(tenant_id=TENANT, owner_id="carol", role=CredentialRole.OWNER)
    operator = api.credentials.create(tenant_id=TENANT, owner_id=None, role=CredentialRole.OPERATOR)

    owner_view = api.client.get("/v1/me", headers=bearer(issued.secret))
    assert owner_view.status_code == 200, owner_view.text
    assert owner_view.json() == {
        "tenant_id": TENANT,
        "role": "owner",
        "keyless": False,
        "owner_id": "carol",
        "default_owner_id": "carol",
        "key_id": issued.credential.key_id,
    }
    operator_view = api.client.get("/v1/me", headers=bearer(operator.secret)).json()
    assert operator_view == {
        "tenant_id": TENANT,
        "role": "operator",
        "keyless": False,
        "owner_id": None,
        "default_owner_id": None,
        "key_id": operator.credential.key_id,
    }
    for view in (owner_view.text, str(operator_view)):
        assert issued.secret not in view
        assert operator.secret not in view
        assert issued.credential.key_hash not in view
    other = api.client.get("/v1/me", headers=api.other_tenant).json()
    assert (other["tenant_id"], other["owner_id"]) == ("globex", "alice")


@pytest.mark.parametrize("api", ["embedded"], indirect=True)
def test_me_without_a_valid_key_is_401(api: Api) -> None:
    issued = api.credentials.create(tenant_id=TENANT, owner_id="dave", role=CredentialRole.OWNER)
    api.credentials.revoke(issued.credential.key_id)
    for headers in ({}, bearer("prme_not_a_key"), bearer(issued.secret), {"Authorization": "x"}):
        response = api.client.get("/v1/me", headers=headers)
        assert response.status_code == 401, response.text
        assert response.json()["error"] == "authentication"
    assert api.client.get("/v1/me", params={"user_id": "bob"}, headers=api.alice).status_code == 422


def test_me_on_a_keyless_local_server_is_the_default_operator(tmp_path: Path) -> None:
    backend: EmbeddedBackend = open_embedded(
        tmp_path / "d", embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER
    )
    try:
        policy = AuthPolicy.at_startup(backend.credentials, local_tenant="local")
        runtime = ApiRuntime(engine=backend.engine, credentials=backend.credentials, auth=policy)
        with TestClient(create_app(runtime), base_url="http://127.0.0.1:8000") as client:
            assert client.get("/v1/me").json() == {
                "tenant_id": "local",
                "role": "operator",
                "keyless": True,
                "owner_id": None,
                "default_owner_id": "default",
                "key_id": None,
            }
            # Once a key exists keyless access ends, and so does this answer.
            backend.credentials.create(tenant_id="local", owner_id="a", role=CredentialRole.OWNER)
            assert client.get("/v1/me").status_code == 401
    finally:
        backend.close()


def test_the_client_reads_who_it_is(tmp_path: Path) -> None:
    with MemoryClient(tmp_path / "m", settings=Settings(embedder="hashing")) as client:
        me = client.get_caller()
    assert (me.role.value, me.keyless, me.key_id) == ("operator", True, None)
    assert me.default_owner_id is not None


def test_the_remote_client_reads_its_key_and_searches(tmp_path: Path) -> None:
    with (
        live_server(tmp_path / "served") as server,
        MemoryClient(server.url, api_key=server.operator_key) as client,
    ):
        me = client.get_caller()
        assert type(me) is CallerIdentity
        assert (me.tenant_id, me.role.value, me.keyless, me.owner_id) == (
            "local",
            "operator",
            False,
            None,
        )
        assert me.key_id is not None
        assert server.operator_key not in me.model_dump_json()
        stored = client.store("Ana's locker code is 4711", event_time=JAN, user_id="ana")
        client.store("Ana likes tea", user_id="ana")
        found = client.list_nodes(text="LOCKER", until=JAN + timedelta(days=1), user_id="ana")
        assert [n.id for n in found.items] == [stored.node_id]
        assert (
            client.list_nodes(text="locker", since=JAN + timedelta(days=1), user_id="ana").items
            == []
        )
        events = client.list_events(text="locker code", user_id="ana")
        assert [e.id for e in events.items] == [stored.event_id]
        with pytest.raises(InvalidRequestError):
            client.list_events(text="x\x00", user_id="ana")


def test_listings_search_text_and_node_time_over_http(api: Api) -> None:
    tea = _store(api, "Alice drinks GREEN tea", api.alice, event_time="2024-03-01T10:00:00Z")
    _store(api, "Alice drinks coffee", api.alice, event_time="2024-01-01T10:00:00Z")
    percent = _store(api, "Alice is 100% sure", api.alice, event_time="2024-02-01T10:00:00Z")
    _store(api, "Bob drinks green tea", api.bob)

    assert _ids(api, "/v1/nodes", api.alice, text="Green Tea", limit=1) == [tea["node_id"]]
    assert _ids(api, "/v1/events", api.alice, text="green TEA") == [tea["event_id"]]
    assert _ids(api, "/v1/nodes", api.alice, text="%") == [percent["node_id"]]
    assert _ids(api, "/v1/nodes", api.alice, text="_") == []
    dated = _ids(
        api, "/v1/nodes", api.alice, since="2024-02-01T10:00:00Z", until="2024-03-01T10:00:00Z"
    )
    assert dated == [percent["node_id"]]
    both = _ids(api, "/v1/nodes", api.alice, text="drinks", since="2024-02-01T00:00:00+00:00")
    assert both == [tea["node_id"]]
    bob_tea = _ids(api, "/v1/nodes", api.bob, text="green tea")
    assert tea["node_id"] not in bob_tea
    assert len(bob_tea) == 1
    # An operator key searches the user it names, and only that one.
    assert _ids(api, "/v1/nodes", api.operator, text="green tea", user_id="alice") == [
        tea["node_id"]
    ]


JAN = datetime(2024, 1, 1, tzinfo=UTC)

HOSTILE_TEXT = [
    "",
    "t" * (MAX_SEARCH_TEXT_CHARS + 1),
    "tea\x00",
    "tea\x1b[2J",
    "tea\x7f",
    "tea\nwith a line break",
]


@pytest.mark.parametrize("api", ["embedded"], indirect=True)
def test_a_hostile_search_text_is_422_and_not_echoed(api: Api) -> None:
    for path in ("/v1/nodes", "/v1/events"):
        for text in HOSTILE_TEXT:
            response = api.client.get(path, params={"text": text}, headers=api.alice)
            assert response.status_code == 422, (path, text, response.text)
            assert [d["loc"] for d in response.json()["detail"]] == [["query", "text"]]
            if text:
                assert text not in response.text
                assert "tea" not in response.text


@pytest.mark.parametrize("api", ["embedded"], indirect=True)
def test_a_query_that_is_not_utf8_is_refused(api: Api) -> None:
    # Read as text, the bytes would become U+FFFD and search for something nobody sent.
    _store(api, "a note about tea", api.alice)
    for query in (
        "text=tea%ED%A0%80",  # a lone surrogate encoded as bytes: not UTF-8
        "text=caf%E9",  # Latin-1
        "session_id=%FF",
        "te%FFxt=tea",
    ):
        for path in ("/v1/nodes", "/v1/events"):
            response = api.client.get(f"{path}?{query}", headers=api.alice)
            assert response.status_code == 422, (query, response.text)
            assert response.json()["detail"][0]["loc"][0] == "query"
    assert api.client.get("/v1/nodes?text=caf%C3%A9", headers=api.alice).status_code == 200


@pytest.mark.parametrize("text", ["tea\ud800", "tea\x00", "tea\x07", "t" * 201])
def test_the_client_and_mcp_refuse_a_hostile_text(tmp_path: Path, text: str) -> None:
    with MemoryClient(tmp_path / "m", settings=Settings(embedder="hashing")) as client:
        with pytest.raises(InvalidRequestError):
            client.list_nodes(text=text)
        with pytest.raises(InvalidRequestError):
            client.list_events(text=text)
        client.store("a memory with tea")
        assert [n.content for n in client.list_nodes(text="TEA").items] == ["a memory with tea"]
        assert len(client.list_events(text="tea").items) == 1
    backend = open_embedded(tmp_path / "d", embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    try:
        server = build_mcp_server(
            backend.engine,
            lambda: Principal.operator("local", default_owner_id="default"),
            tools="full",
        )
        result = asyncio.run(server.call_tool("memory_list", {"text": text}))
        assert isinstance(result, CallToolResult)
        assert result.structured_content is not None
        assert result.structured_content["error"]["status"] == 422
        found = asyncio.run(server.call_tool("memory_list", {"text": "nothing stored"}))
        assert isinstance(found, CallToolResult)
        assert found.structured_content == {"items": [], "next_after_id": None}
    finally:
        backend.close()


def _edges(api: Api, node_id: str) -> set[tuple[str, str, str, bool]]:
    response = api.client.get(f"/v1/nodes/{node_id}/edges", headers=api.alice)
    assert response.status_code == 200, response.text
    return {
        (e["edge_type"], e["source_node_id"], e["target_node_id"], e["verified"])
        for e in response.json()
    }


def _history(api: Api, node_id: str) -> list[dict[str, Any]]:
    """Every operation of a node's provenance, a page of two at a time."""
    operations: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(20):
        params: dict[str, str | int] = {"operation_limit": 2}
        if cursor:
            params["operation_cursor"] = cursor
        response = api.client.get(
            f"/v1/nodes/{node_id}/provenance", params=params, headers=api.alice
        )
        assert response.status_code == 200, response.text
        page = response.json()
        operations.extend(page["operations"])
        cursor = page["next_operation_cursor"]
        if cursor is None:
            return operations
    raise AssertionError("the history never ended")


def test_a_memorys_history_and_edges_are_read_from_the_documented_routes(api: Api) -> None:
    """The routes docs/managing-memory.md sends a page author to for one memory: its
    provenance lists every journal record that moved it (condition, contradiction,
    supersedence, alias review) oldest first with ids and times; its edges hold the links."""
    conditional = _store(
        api,
        "Alice will fly to Oslo",
        api.alice,
        epistemic_type="conditional",
        metadata={"condition": "the flight is booked"},
    )["node_id"]
    rival = _store(api, "Alice will drive to Oslo", api.alice)["node_id"]
    newer = _store(api, "Alice will take the train to Oslo", api.alice)["node_id"]
    # Each move a minute after the one before, as in life: the history is in time order.
    clock = api.client.app.state.runtime.engine.deps.clock  # type: ignore[attr-defined]
    clock.advance(minutes=1)
    condition = api.client.put(
        f"/v1/nodes/{conditional}/condition", json={"state": "true"}, headers=api.alice
    )
    assert condition.status_code == 200, condition.text
    clock.advance(minutes=1)
    marked = api.client.post(
        "/v1/contradictions", json={"node_a_id": conditional, "node_b_id": rival}, headers=api.alice
    )
    assert marked.status_code == 200, marked.text
    clock.advance(minutes=1)
    replaced = api.client.post(
        "/v1/supersedences",
        json={"old_node_id": conditional, "new_node_id": newer},
        headers=api.alice,
    )
    assert replaced.status_code == 200, replaced.text

    history = _history(api, conditional)
    assert [op["operation"] for op in history] == [
        "direct_store",
        "evaluate_condition",
        "mark_contradiction",
        "supersede",
    ]
    assert all(op["verified"] and op["record_id"] and op["created_at"] for op in history)
    assert len({op["created_at"] for op in history}) == len(history)
    links = {(kind, source, target) for kind, source, target, _ in _edges(api, conditional)}
    assert ("supersedes", newer, conditional) in links
    assert {("contradicts", conditional, rival), ("contradicts", rival, conditional)} & links
    node = api.client.get(f"/v1/nodes/{conditional}", headers=api.alice).json()
    assert node["lifecycle_state"] == "superseded"

    # A verified alias: the accepted proposal's review is in both nodes' histories.
    short = _store(api, "IBM", api.alice, node_type="entity")["node_id"]
    long = _store(api, "International Business Machines", api.alice, node_type="entity")["node_id"]
    engine = api.client.app.state.runtime.engine  # type: ignore[attr-defined]
    assert engine.propose_aliases(None).proposals_created == 1
    [proposal] = api.client.get("/v1/alias-proposals", headers=api.alice).json()["items"]
    review = api.client.post(
        f"/v1/alias-proposals/{proposal['proposal_operation_id']}/review",
        json={"decision": "accepted", "reviewer_id": "human:alice", "reason": "same company"},
        headers=api.alice,
    )
    assert review.status_code == 200, review.text
    for node_id in (short, long):
        assert [e[0] for e in _edges(api, node_id) if e[3]] == ["alias_of"]
        # The review that made the link is the node's history; the proposal itself is read
        # from GET /v1/alias-proposals (it names its nodes inside its payload).
        operations = [op["operation"] for op in _history(api, node_id)]
        assert operations == ["direct_store", "alias_review"]

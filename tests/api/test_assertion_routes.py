"""POST /v1/assertions/aggregate and /state over HTTP and their MCP tools through the MCP SDK:
owners, tenants, and the 4xx rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp_types import CallToolResult

from prme.client import MemoryClient
from prme.engine.identity import Principal
from prme.engine.service import MemoryEngine
from prme.errors import InvalidRequestError
from prme.mcp.server import build_mcp_server
from prme.model.assertions import AssertionAggregation, AssertionState
from prme.settings import Settings
from tests.harness.http import TENANT, Api
from tests.harness.live_server import live_server

AGGREGATE = "/v1/assertions/aggregate"
STATE = "/v1/assertions/state"
LIVE = {"subject": "I", "predicate": "visited"}


def say(api: Api, text: str, headers: dict[str, str]) -> None:
    body = {"content": text, "wait_for_extraction": True}
    response = api.client.post("/v1/ingest", json=body, headers=headers)
    assert response.status_code == 200, response.text


def counts(body: dict[str, Any]) -> dict[str, int]:
    return {g["key"]["object"]: g["count"] for g in body["groups"]}


@pytest.fixture
def seeded(api: Api) -> Api:
    for text in ("I visited Lisbon.", "I visited Berlin.", "I visited Berlin."):
        say(api, text, api.alice)
    say(api, "I visited Rome.", api.other_tenant)
    say(api, "I visited Oslo.", api.bob)
    return api


def test_aggregation_and_state_read_the_owners_claims(seeded: Api) -> None:
    api = seeded
    query = {"subjects": ["i"], "predicates": ["Visited"], "group_by": ["object"]}
    response = api.client.post(AGGREGATE, json={"query": query}, headers=api.alice)
    assert response.status_code == 200, response.text
    body = response.json()
    assert counts(body) == {"berlin": 2, "lisbon": 1}
    assert (body["claim_nodes"], body["counted"], body["groups_truncated"]) == (3, 3, False)
    assert body["groups"][0]["samples"][0]["object"] == "Berlin"
    assert body["stored_set_exhaustive"] is True
    other = api.client.post(AGGREGATE, json={"query": {}}, headers=api.other_tenant).json()
    assert other["counted"] == 1
    bob = api.client.post(
        AGGREGATE, json={"user_id": "bob", "query": {"group_by": ["object"]}}, headers=api.operator
    ).json()
    assert counts(bob) == {"oslo": 1}
    response = api.client.post(STATE, json={"query": LIVE}, headers=api.alice)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ambiguous" and body["value"] is None
    assert {c["object"] for c in body["candidates"]} == {"Lisbon", "Berlin"}
    assert body["timeline_count"] == 3
    assert (body["subject_key"], body["predicate_key"]) == ("i", "visited")


def test_an_owner_without_claims_gets_empty_answers_not_404(api: Api) -> None:
    aggregation = api.client.post(AGGREGATE, json={"query": {}}, headers=api.alice)
    assert aggregation.status_code == 200
    assert (aggregation.json()["groups"], aggregation.json()["claim_nodes"]) == ([], 0)
    fact = api.client.post(STATE, json={"query": LIVE}, headers=api.alice)
    assert fact.status_code == 200
    assert (fact.json()["status"], fact.json()["timeline"]) == ("unknown", [])


def test_another_user_id_with_an_owner_key_is_403_and_no_key_is_401(api: Api) -> None:
    for path, query in ((AGGREGATE, {}), (STATE, LIVE)):
        named = api.client.post(path, json={"user_id": "bob", "query": query}, headers=api.alice)
        assert named.status_code == 403
        assert api.client.post(path, json={"query": query}).status_code == 401
        assert api.client.post(path, json={"query": query}, headers=api.operator).status_code == 422


INVALID_QUERIES: list[dict[str, Any]] = [
    {"colour": "red"},
    {"group_by": []},
    {"group_by": ["object", "object"]},
    {"group_by": ["unit"]},
    {"subjects": []},
    {"objects": ["  "]},
    {"polarities": ["maybe"]},
    {"valid_at": "2024-01-01T00:00:00"},
    {"knowledge_at": "2024-01-01"},
    {"event_time_from": "2024-02-01T00:00:00Z", "event_time_to": "2024-01-01T00:00:00Z"},
    {"lifecycle_states": ["superseded"]},
    {"retrieval_mode": "fuzzy"},
    {"group_limit": 0},
    {"group_limit": 1001},
    {"sample_limit": 51},
    {"scopes": ["nowhere"]},
]
INVALID_STATE_BODIES: list[dict[str, Any]] = [
    {},
    {"query": LIVE, "extra": 1},
    {"query": {"subject": "I"}},
    {"query": {**LIVE, "predicate": " "}},
    {"query": {**LIVE, "valid_at": "2024-01-01T00:00:00"}},
    {"query": {**LIVE, "knowledge_at": "yesterday"}},
    {"query": {**LIVE, "limit": 0}},
    {"query": {**LIVE, "limit": 1001}},
    {"query": {**LIVE, "scope": "nowhere"}},
    {"query": {**LIVE, "group_by": ["object"]}},
]


# Validation happens before any backend is read: one backend is enough.
@pytest.mark.parametrize("api", ["embedded"], indirect=True)
def test_invalid_requests_are_422(api: Api) -> None:
    for query in INVALID_QUERIES:
        response = api.client.post(AGGREGATE, json={"query": query}, headers=api.alice)
        assert response.status_code == 422, query
        assert isinstance(response.json()["detail"], list)
    assert api.client.post(AGGREGATE, json={}, headers=api.alice).status_code == 422
    for body in INVALID_STATE_BODIES:
        assert api.client.post(STATE, json=body, headers=api.alice).status_code == 422, body


@pytest.mark.parametrize("api", ["embedded"], indirect=True)
def test_explicit_mode_may_name_inactive_states(api: Api) -> None:
    query = {"retrieval_mode": "explicit", "lifecycle_states": ["superseded", "archived"]}
    response = api.client.post(AGGREGATE, json={"query": query}, headers=api.alice)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("api", ["embedded"], indirect=True)
def test_openapi_declares_the_error_statuses(api: Api) -> None:
    paths = api.client.get("/openapi.json").json()["paths"]
    for path in (AGGREGATE, STATE):
        responses = paths[path]["post"]["responses"]
        assert {"200", "401", "403", "422", "503"} <= set(responses)
        assert paths[path]["post"]["tags"] == ["assertions"]


def test_mcp_tools_through_the_sdk(seeded: Api) -> None:
    engine: MemoryEngine = seeded.client.app.state.runtime.engine  # type: ignore[attr-defined]
    server = build_mcp_server(engine, lambda: Principal.owner(TENANT, "alice"), tools="full")

    def payload(result: CallToolResult) -> dict[str, Any]:
        assert isinstance(result.structured_content, dict), result
        return result.structured_content

    async def main() -> None:
        async with Client(server) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert listed["memory_aggregate_assertions"].annotations is not None
            assert listed["memory_aggregate_assertions"].annotations.read_only_hint is True
            counted = await client.call_tool(
                "memory_aggregate_assertions", {"predicates": ["visited"], "group_by": ["object"]}
            )
            assert not counted.is_error
            assert counts(payload(counted)) == {"berlin": 2, "lisbon": 1}
            fact = await client.call_tool("memory_get_assertion_state", LIVE)
            assert payload(fact)["status"] == "ambiguous"
            bad = await client.call_tool(
                "memory_aggregate_assertions", {"valid_at": "2024-01-01T00:00:00"}
            )
            assert bad.is_error and payload(bad)["error"]["status"] == 422
            foreign = await client.call_tool(
                "memory_get_assertion_state", {**LIVE, "user_id": "bob"}
            )
            assert foreign.is_error and payload(foreign)["error"]["status"] == 403

    anyio.run(main)


@pytest.mark.slow
def test_local_and_remote_clients_answer_alike(tmp_path: Path) -> None:
    """Both client methods in a directory and against `prme serve`: same models, same values,
    and a dict query rejected before anything is sent."""
    answers: list[tuple[Any, ...]] = []
    with live_server(tmp_path / "served") as server:
        remote = MemoryClient(server.url, api_key=server.operator_key)
        local = MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing"))
        for memory, user in ((local, None), (remote, "dana")):
            with memory:
                for text in ("I visited Lisbon.", "I visited Berlin."):
                    memory.ingest(text, user_id=user, wait_for_extraction=True)
                counted = memory.aggregate_assertions({"group_by": ["object"]}, user_id=user)
                fact = memory.get_assertion_state(LIVE, user_id=user)
                assert isinstance(counted, AssertionAggregation)
                assert isinstance(fact, AssertionState)
                answers.append((counts(counted.model_dump()), fact.status, fact.candidate_count))
                with pytest.raises(InvalidRequestError):
                    memory.get_assertion_state({"subject": "I"}, user_id=user)
    assert answers[0] == answers[1] == ({"berlin": 1, "lisbon": 1}, "ambiguous", 2)

"""Owner isolation on every HTTP route and MCP tool, generated from the app's own route list.

Each route and tool is called with alice's owner key naming bob (403) and with bob's ids
(404); the others are called as alice and must not show anything of bob's. A route or tool
that the tables below do not know fails the test, so a new one cannot be left out silently.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from prme.engine.identity import Principal
from prme.engine.service import MemoryEngine
from prme.mcp.server import build_mcp_server
from tests.harness.http import TENANT, Api


@dataclass(frozen=True)
class BobsRecords:
    """One record of every kind bob owns: what a foreign-id call names."""

    event_id: str
    node_id: str
    other_node_id: str
    request_id: str
    feedback_id: str
    citation_id: str
    proposal_operation_id: str
    import_id: str
    profile_id: str
    change_id: str

    def path_ids(self) -> dict[str, str]:
        """Path parameter name -> bob's id; a route with another parameter fails the test."""
        return {
            "event_id": self.event_id,
            "node_id": self.node_id,
            "request_id": self.request_id,
            "feedback_id": self.feedback_id,
            "citation_id": self.citation_id,
            "proposal_operation_id": self.proposal_operation_id,
            "import_id": self.import_id,
            "profile_id": self.profile_id,
        }

    def all_ids(self) -> list[str]:
        return [
            self.event_id,
            self.node_id,
            self.other_node_id,
            self.request_id,
            self.feedback_id,
            self.citation_id,
            self.proposal_operation_id,
            self.import_id,
            self.profile_id,
            self.change_id,
        ]


Body = Callable[[BobsRecords], dict[str, Any]]

# A holdout evaluation that recommends the weights it scored.
EVALUATION = {
    "holdout_size": 20,
    "metric": "ndcg@10",
    "baseline_metric": 0.5,
    "proposal_metric": 0.6,
    "gain": 0.1,
    "recommended": True,
    "input_checksum": "0" * 64,
}


@dataclass(frozen=True)
class Case:
    """How to call one route: its smallest valid body and where the owner is named.

    `foreign`: the route reads or changes a record named by id (path or body), so bob's ids
    under alice's key must be 404. Otherwise alice's own call must succeed and show none of
    bob's ids."""

    owner_in: Literal["query", "body"]
    body: Body | None = None
    foreign: bool = False
    # The status of alice's own call when it succeeds.
    success: int = 200


def _no_body(_: BobsRecords) -> dict[str, Any]:
    return {}


def _labels(bob: BobsRecords) -> dict[str, Any]:
    return {"request_id": bob.request_id, "labels": {bob.node_id: True}}


def _citation(bob: BobsRecords) -> dict[str, Any]:
    return {
        "request_id": bob.request_id,
        "answer_id": "answer-1",
        "cited_node_ids": [],
        "method": "model_reported",
    }


def _supersedence(bob: BobsRecords) -> dict[str, Any]:
    return {"old_node_id": bob.node_id, "new_node_id": bob.other_node_id}


def _contradiction(bob: BobsRecords) -> dict[str, Any]:
    return {"node_a_id": bob.node_id, "node_b_id": bob.other_node_id}


def _resolution(bob: BobsRecords) -> dict[str, Any]:
    return {"winner_id": bob.node_id, "loser_id": bob.other_node_id}


def _rollback(bob: BobsRecords) -> dict[str, Any]:
    return {"change_id": bob.change_id, "scopes": [], "profile_id": bob.profile_id}


def _rejection(_: BobsRecords) -> dict[str, Any]:
    return {"decision": "rejected", "reviewer_id": "human:alice", "reason": "not the same"}


ROUTES: dict[tuple[str, str], Case] = {
    ("POST", "/v1/store"): Case("body", lambda _: {"content": "Alice likes tea"}),
    ("POST", "/v1/ingest"): Case("body", lambda _: {"content": "Alice moved to Oslo"}),
    ("POST", "/v1/ingest/fast"): Case("body", lambda _: {"items": [{"content": "A note"}]}),
    ("POST", "/v1/extractions/process"): Case("body", _no_body),
    ("POST", "/v1/materializations/process"): Case("body", _no_body),
    ("POST", "/v1/retrieve"): Case("body", lambda _: {"query": "What does bob like?"}),
    ("GET", "/v1/events/{event_id}"): Case("query", foreign=True),
    ("DELETE", "/v1/events/{event_id}"): Case("query", foreign=True),
    ("GET", "/v1/events"): Case("query"),
    ("GET", "/v1/nodes"): Case("query"),
    ("GET", "/v1/stats"): Case("query"),
    ("GET", "/v1/export"): Case("query"),
    ("POST", "/v1/import"): Case("body", lambda _: {"version": 1, "records": []}),
    ("GET", "/v1/events/{event_id}/nodes"): Case("query", foreign=True),
    ("GET", "/v1/events/{event_id}/processing-status"): Case("query", foreign=True),
    ("GET", "/v1/events/{event_id}/extraction-status"): Case("query", foreign=True),
    ("POST", "/v1/events/{event_id}/retry-extraction"): Case("query", foreign=True),
    ("GET", "/v1/nodes/{node_id}"): Case("query", foreign=True),
    ("GET", "/v1/nodes/{node_id}/edges"): Case("query", foreign=True),
    ("PUT", "/v1/nodes/{node_id}/promote"): Case("query", foreign=True),
    ("PUT", "/v1/nodes/{node_id}/archive"): Case("query", foreign=True),
    ("PUT", "/v1/nodes/{node_id}/reinforce"): Case("query", foreign=True),
    ("POST", "/v1/supersedences"): Case("body", _supersedence, foreign=True),
    ("GET", "/v1/retrievals/{request_id}"): Case("query", foreign=True),
    ("GET", "/v1/retrievals/{request_id}/replay"): Case("query", foreign=True),
    ("POST", "/v1/retrievals/{request_id}/resolve-tool-arguments"): Case(
        "body", lambda _: {"arguments": {"city": "Oslo"}}, foreign=True
    ),
    ("POST", "/v1/relevance"): Case("body", _labels, foreign=True),
    ("GET", "/v1/relevance"): Case("query"),
    ("GET", "/v1/relevance/{feedback_id}"): Case("query", foreign=True),
    ("POST", "/v1/answer-citations"): Case("body", _citation, foreign=True),
    ("GET", "/v1/answer-citations"): Case("query"),
    ("GET", "/v1/answer-citations/{citation_id}"): Case("query", foreign=True),
    ("GET", "/v1/alias-proposals"): Case("query"),
    ("POST", "/v1/alias-proposals/{proposal_operation_id}/review"): Case(
        "body", _rejection, foreign=True
    ),
    ("POST", "/v1/quantities/aggregate"): Case("body", lambda _: {"query": {}}),
    ("POST", "/v1/imports"): Case(
        "body", lambda _: {"items": [{"content": "A note"}]}, success=202
    ),
    ("GET", "/v1/imports/{import_id}"): Case("query", foreign=True),
    ("POST", "/v1/imports/uploads"): Case("body", lambda _: {"size_bytes": 10}, success=201),
    # Bob's import, started with alice's key: none of hers has that id.
    ("POST", "/v1/imports/{import_id}/start"): Case("query", foreign=True),
    # Bob's import, named by alice's key: no upload of hers is open under that id.
    ("PUT", "/v1/imports/{import_id}/upload"): Case("query", _no_body, foreign=True),
    ("POST", "/v1/quantities/aggregate-text"): Case(
        "body", lambda _: {"question": "How much did I raise?"}
    ),
    ("PUT", "/v1/nodes/{node_id}/condition"): Case(
        "query", lambda _: {"state": "true"}, foreign=True
    ),
    ("POST", "/v1/contradictions"): Case("body", _contradiction, foreign=True),
    ("POST", "/v1/contradictions/resolve"): Case("body", _resolution, foreign=True),
    ("GET", "/v1/nodes/{node_id}/provenance"): Case("query", foreign=True),
    ("GET", "/v1/nodes/{node_id}/neighborhood"): Case("query", foreign=True),
    ("GET", "/v1/nodes/{node_id}/chain"): Case("query", foreign=True),
    ("POST", "/v1/assertions/aggregate"): Case("body", lambda _: {"query": {}}),
    ("POST", "/v1/assertions/state"): Case(
        "body", lambda _: {"query": {"subject": "Bob", "predicate": "likes"}}
    ),
    ("GET", "/v1/events/{event_id}/extraction"): Case("query", foreign=True),
    ("POST", "/v1/organize"): Case("body", lambda _: {"budget_ms": 2000}),
    ("GET", "/v1/retrievals/{request_id}/context"): Case("query", foreign=True),
    ("GET", "/v1/retrievals"): Case("query"),
    ("GET", "/v1/nodes/{node_id}/retrievals"): Case("query", foreign=True),
    # Answers 200 with the ids it was given listed as missing, so bob's ids in the body would
    # read as a leak here: tests/api/test_node_batch_route.py names bob's ids to it instead.
    ("POST", "/v1/nodes/batch-get"): Case(
        "body", lambda _: {"node_ids": ["0b8f6a52-4c1e-4c2d-9a57-2f1d7e9c3b10"]}
    ),
    # Alice has judged nothing: bob's judgments must not make up her count (400, not enough).
    ("POST", "/v1/learning/evaluate"): Case("body", _no_body, success=400),
    ("POST", "/v1/learning/profiles"): Case(
        "body", lambda b: {"weights": {}, "baseline_profile_id": b.profile_id}, foreign=True
    ),
    ("GET", "/v1/learning/profiles"): Case("query"),
    ("GET", "/v1/learning/profiles/active"): Case("query"),
    ("GET", "/v1/learning/profiles/history"): Case("query"),
    ("GET", "/v1/learning/profiles/{profile_id}"): Case("query", foreign=True),
    ("POST", "/v1/learning/profiles/{profile_id}/activate"): Case("body", _no_body, foreign=True),
    # Bob's change id names no change of alice's slot, which never changed: stale (409).
    ("POST", "/v1/learning/profiles/deactivate"): Case(
        "body", lambda b: {"change_id": b.change_id, "scopes": []}, success=409
    ),
    ("POST", "/v1/learning/profiles/rollback"): Case("body", _rollback, foreign=True),
}

# Routes that act for no owner: health, and the operator-only key routes, which refuse every
# owner key (tests/api/test_key_routes.py holds them to that, and to their tenant).
OWNERLESS_ROUTES = {
    ("GET", "/health"),
    ("POST", "/v1/keys"),
    ("GET", "/v1/keys"),
    ("DELETE", "/v1/keys/{key_id}"),
    # Operator-only too (an owner key is refused before anything is read); a caller's tenant is
    # the only one it can name (tests/engine/test_erase_owner.py, tests/api/test_erase_routes.py).
    ("DELETE", "/v1/owner"),
    # The key's tenant's limits and use: no owner's records, no user_id; another tenant's use
    # never shows (tests/api/test_tenant_limits.py).
    ("GET", "/v1/limits"),
    # Operator-only, summing the key's own tenant (tests/api/test_usage_routes.py).
    ("GET", "/v1/usage"),
    # The caller's own key read back: no owner's records (tests/api/test_caller_route.py).
    ("GET", "/v1/me"),
}

TOOLS: dict[str, Case] = {
    "memory_store": Case("body", lambda _: {"content": "Alice likes tea"}),
    "memory_ingest": Case("body", lambda _: {"content": "Alice moved to Oslo"}),
    "memory_ingest_fast": Case("body", lambda _: {"items": [{"content": "A note"}]}),
    "memory_process_materializations": Case("body", _no_body),
    "memory_retrieve": Case("body", lambda _: {"query": "What does bob like?"}),
    "memory_resolve_tool_arguments": Case(
        "body", lambda b: {"request_id": b.request_id, "arguments": {"city": "Oslo"}}, True
    ),
    "memory_get_event": Case("body", lambda b: {"event_id": b.event_id}, foreign=True),
    "memory_get_node": Case("body", lambda b: {"node_id": b.node_id}, foreign=True),
    "memory_list": Case("body", _no_body),
    "memory_forget": Case("body", lambda b: {"event_id": b.event_id}, foreign=True),
    "memory_supersede": Case("body", _supersedence, foreign=True),
    "memory_promote": Case("body", lambda b: {"node_id": b.node_id}, foreign=True),
    "memory_archive": Case("body", lambda b: {"node_id": b.node_id}, foreign=True),
    "memory_reinforce": Case("body", lambda b: {"node_id": b.node_id}, foreign=True),
    "memory_record_relevance": Case("body", _labels, foreign=True),
    "memory_record_answer_citations": Case("body", _citation, foreign=True),
    "memory_get_retrieval_receipt": Case(
        "body", lambda b: {"request_id": b.request_id}, foreign=True
    ),
    "memory_list_alias_proposals": Case("body", _no_body),
    "memory_review_alias_proposal": Case(
        "body",
        lambda b: {"proposal_operation_id": b.proposal_operation_id, **_rejection(b)},
        foreign=True,
    ),
    "memory_aggregate_quantities": Case("body", lambda _: {"question": "How much did I raise?"}),
    "memory_evaluate_condition": Case(
        "body", lambda b: {"node_id": b.node_id, "state": "true"}, foreign=True
    ),
    "memory_mark_contradiction": Case("body", _contradiction, foreign=True),
    "memory_resolve_contradiction": Case("body", _resolution, foreign=True),
    "memory_get_provenance": Case("body", lambda b: {"node_id": b.node_id}, foreign=True),
    "memory_get_neighborhood": Case("body", lambda b: {"node_id": b.node_id}, foreign=True),
    "memory_get_chain": Case("body", lambda b: {"node_id": b.node_id}, foreign=True),
    "memory_aggregate_assertions": Case("body", _no_body),
    "memory_get_assertion_state": Case("body", lambda _: {"subject": "Bob", "predicate": "likes"}),
    "memory_get_event_extraction": Case("body", lambda b: {"event_id": b.event_id}, foreign=True),
    "memory_organize": Case("body", lambda _: {"budget_ms": 2000}),
    "memory_evaluate_learning": Case("body", _no_body, success=400),
    "memory_create_ranking_profile": Case(
        "body", lambda b: {"weights": {}, "baseline_profile_id": b.profile_id}, foreign=True
    ),
    "memory_get_ranking_profile": Case("body", lambda b: {"profile_id": b.profile_id}, True),
    "memory_list_ranking_profiles": Case("body", _no_body),
    "memory_get_active_ranking_profile": Case("body", _no_body),
    "memory_list_ranking_profile_history": Case("body", _no_body),
    "memory_activate_ranking_profile": Case(
        "body", lambda b: {"profile_id": b.profile_id}, foreign=True
    ),
    "memory_deactivate_ranking_profile": Case(
        "body", lambda b: {"change_id": b.change_id}, success=409
    ),
    "memory_rollback_ranking_profile": Case("body", _rollback, foreign=True),
}


def owner_routes(app: FastAPI) -> dict[tuple[str, str], APIRoute]:
    """Every (method, path) of the app's API routes, except the ownerless ones."""
    found: dict[tuple[str, str], APIRoute] = {}
    for route in app.routes:
        if isinstance(route, APIRoute):
            for method in route.methods or ():
                if (method, route.path) not in OWNERLESS_ROUTES:
                    found[(method, route.path)] = route
    return found


def bobs_records(api: Api) -> BobsRecords:
    """Bob's event, nodes, receipt, relevance, citation and alias proposal, made over HTTP."""
    c, bob = api.client, api.bob

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = c.post(path, json=body, headers=bob)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    stored = post("/v1/store", {"content": "Bob likes green tea with honey"})
    post("/v1/store", {"content": "IBM", "node_type": "entity"})
    other = post("/v1/store", {"content": "International Business Machines", "node_type": "entity"})
    retrieval = post("/v1/retrieve", {"query": "What tea does bob like?"})
    request_id = retrieval["metrics"]["request_id"]
    assert retrieval["results"][0]["node_id"] == stored["node_id"]
    labels = {"request_id": request_id, "labels": {stored["node_id"]: True}}
    feedback = post("/v1/relevance", labels)
    citation = post(
        "/v1/answer-citations",
        {
            "request_id": request_id,
            "answer_id": "a1",
            "cited_node_ids": [stored["node_id"]],
            "method": "model_reported",
        },
    )
    engine: MemoryEngine = c.app.state.runtime.engine  # type: ignore[attr-defined]
    assert engine.propose_aliases(None).proposals_created == 1
    listed = c.get("/v1/alias-proposals", headers=bob).json()["items"]
    submitted = c.post("/v1/imports", json={"items": [{"content": "Bob's note"}]}, headers=bob)
    assert submitted.status_code == 202, submitted.text
    profile = post("/v1/learning/profiles", {"weights": {"rrf_k": 30}, "evaluation": EVALUATION})
    activated = post(f"/v1/learning/profiles/{profile['profile_id']}/activate", {})
    return BobsRecords(
        event_id=stored["event_id"],
        node_id=stored["node_id"],
        other_node_id=other["node_id"],
        request_id=request_id,
        feedback_id=feedback["feedback_id"],
        citation_id=citation["citation_id"],
        proposal_operation_id=listed[0]["proposal_operation_id"],
        import_id=submitted.json()["import_id"],
        profile_id=profile["profile_id"],
        change_id=activated["change_id"],
    )


def call_route(api: Api, route: tuple[str, str], bob: BobsRecords, *, user_id: str | None) -> Any:
    method, path = route
    case = ROUTES[route]
    names = [name for _, name, _, _ in string.Formatter().parse(path) if name]
    unknown = [n for n in names if n not in bob.path_ids()]
    assert not unknown, f"{method} {path}: no id of bob's for path parameters {unknown}"
    url = path.format(**{n: bob.path_ids()[n] for n in names})
    body = case.body(bob) if case.body is not None else None
    params: dict[str, str] = {}
    if user_id is not None:
        if case.owner_in == "body":
            assert body is not None
            body = {**body, "user_id": user_id}
        else:
            params["user_id"] = user_id
    return api.client.request(method, url, json=body, params=params, headers=api.alice)


def leaked(bob: BobsRecords, text: str) -> list[str]:
    return [record_id for record_id in bob.all_ids() if record_id in text]


def bobs_view(api: Api, bob: BobsRecords) -> list[Any]:
    """What bob sees of the records an intrusion could change."""
    c = api.client
    return [
        c.get(f"/v1/nodes/{bob.node_id}", headers=api.bob).json(),
        c.get(f"/v1/nodes/{bob.other_node_id}", headers=api.bob).json(),
        c.get("/v1/alias-proposals", headers=api.bob).json(),
        c.get("/v1/relevance", headers=api.bob).json(),
        c.get("/v1/answer-citations", headers=api.bob).json(),
        c.get("/v1/learning/profiles/history", headers=api.bob).json(),
    ]


def test_every_route_is_in_the_isolation_table(api: Api) -> None:
    app: FastAPI = api.client.app  # type: ignore[assignment]
    routes = set(owner_routes(app))
    assert sorted(routes - set(ROUTES)) == [], "add these routes to ROUTES"
    assert sorted(set(ROUTES) - routes) == [], "these ROUTES entries no longer exist"


def test_no_route_lets_an_owner_key_reach_another_owner(api: Api) -> None:
    bob = bobs_records(api)
    before = bobs_view(api, bob)
    app: FastAPI = api.client.app  # type: ignore[assignment]
    failures: list[str] = []
    for method, path in sorted(owner_routes(app)):
        case = ROUTES[(method, path)]
        named = call_route(api, (method, path), bob, user_id="bob")
        if named.status_code != 403:
            failures.append(f"{method} {path} naming bob: {named.status_code}")
        own = call_route(api, (method, path), bob, user_id=None)
        expected = 404 if case.foreign else case.success
        if own.status_code != expected:
            failures.append(f"{method} {path} as alice: {own.status_code}, not {expected}")
        if leaks := leaked(bob, own.text):
            failures.append(f"{method} {path} as alice shows bob's ids {leaks}")
    assert failures == []
    assert bobs_view(api, bob) == before


def call_tool(engine: MemoryEngine, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One MCP tool call as alice's owner key, through the SDK server's own dispatch."""
    server = build_mcp_server(engine, lambda: Principal.owner(TENANT, "alice"), tools="full")

    async def main() -> dict[str, Any]:
        result = await server.call_tool(name, arguments)
        content = getattr(result, "structured_content", None)
        assert isinstance(content, dict), result
        return {"is_error": getattr(result, "is_error", False), **content}

    return anyio.run(main)


def tool_names(engine: MemoryEngine) -> set[str]:
    server = build_mcp_server(engine, lambda: Principal.owner(TENANT, "alice"), tools="full")
    return {tool.name for tool in anyio.run(server.list_tools)}


def test_no_mcp_tool_lets_an_owner_key_reach_another_owner(api: Api) -> None:
    bob = bobs_records(api)
    before = bobs_view(api, bob)
    engine: MemoryEngine = api.client.app.state.runtime.engine  # type: ignore[attr-defined]
    tools = tool_names(engine)
    assert sorted(tools - set(TOOLS)) == [], "add these tools to TOOLS"
    assert sorted(set(TOOLS) - tools) == [], "these TOOLS entries no longer exist"
    failures: list[str] = []
    for name in sorted(tools):
        case = TOOLS[name]
        assert case.body is not None
        named = call_tool(engine, name, {**case.body(bob), "user_id": "bob"})
        if named.get("error", {}).get("status") != 403:
            failures.append(f"{name} naming bob: {named}")
        own = call_tool(engine, name, case.body(bob))
        status = own.get("error", {}).get("status") if own["is_error"] else 200
        expected = 404 if case.foreign else case.success
        if status != expected:
            failures.append(f"{name} as alice: {status}, not {expected}")
        if leaks := leaked(bob, json.dumps(own)):
            failures.append(f"{name} as alice shows bob's ids {leaks}")
    assert failures == []
    assert bobs_view(api, bob) == before


@pytest.mark.parametrize("table", [ROUTES, TOOLS])
def test_every_foreign_case_names_one_of_bobs_records(table: dict[Any, Case]) -> None:
    """A foreign case whose body names none of bob's ids would pass without testing anything."""
    bob = BobsRecords(*(f"bob-{i}" for i in range(10)))
    for key, case in table.items():
        if case.foreign:
            named = json.dumps(case.body(bob)) if case.body else ""
            assert leaked(bob, named) or "{" in str(key), key

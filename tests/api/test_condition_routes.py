"""PUT /v1/nodes/{id}/condition, POST /v1/contradictions and POST /v1/contradictions/resolve
over HTTP: status codes, error bodies, replays and what retrieval shows."""

from __future__ import annotations

import uuid
from typing import Any

from tests.harness.http import Api

CONDITION = {"condition": "Ana booked the Friday flight"}


def post(api: Api, path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    return api.client.post(path, json=body, headers=headers)


def stored(api: Api, content: str, headers: dict[str, str] | None = None, **body: Any) -> Any:
    response = post(api, "/v1/store", {"content": content, **body}, headers or api.alice)
    assert response.status_code == 200, response.text
    return response.json()


def put_condition(
    api: Api, node_id: str, body: dict[str, Any], key: str | None = None, **params: str
) -> Any:
    headers = {**api.alice, **({"Idempotency-Key": key} if key else {})}
    return api.client.put(
        f"/v1/nodes/{node_id}/condition", json=body, headers=headers, params=params
    )


def retrieved(api: Api, query: str, **body: Any) -> list[dict[str, Any]]:
    response = post(api, "/v1/retrieve", {"query": query, **body}, api.alice)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def test_a_conditional_store_needs_its_condition_and_the_reserved_key_stays_the_engines(
    api: Api,
) -> None:
    missing = post(
        api, "/v1/store", {"content": "Pick Ana up", "epistemic_type": "conditional"}, api.alice
    )
    assert missing.status_code == 422
    forged = post(
        api,
        "/v1/store",
        {"content": "Pick Ana up", "metadata": {"prme_condition_v1": {"state": "true"}}},
        api.alice,
    )
    assert forged.status_code == 422
    node = stored(api, "Pick Ana up", epistemic_type="conditional", metadata=CONDITION)
    read = api.client.get(f"/v1/nodes/{node['node_id']}", headers=api.alice).json()
    assert read["metadata"]["prme_condition_v1"]["state"] == "unknown"
    assert read["metadata"]["condition"] == CONDITION["condition"]


def test_condition_route_codes_replays_and_retrieval(api: Api) -> None:
    node_id = stored(
        api, "Pick Ana up at the airport", epistemic_type="conditional", metadata=CONDITION
    )["node_id"]
    evidence = stored(api, "Ana: flight booked for Friday")["event_id"]
    bobs = stored(api, "Bob's flight is booked", api.bob)
    assert node_id not in [r["node_id"] for r in retrieved(api, "airport Ana pick up")]

    # Validation: 422 before anything is read.
    for body in (
        {"state": "maybe"},
        {},
        {"state": "true", "confidence": 1},
        {"state": "true", "evidence_id": "not-a-uuid"},
        {"state": "true", "evaluation_method": "oracle"},
        {"state": "true", "reason": ""},
        {"state": "true", "reason": "x" * 4001},
        {"state": "true", "evaluated_at": "2025-01-01T08:00:00"},
    ):
        answer = put_condition(api, node_id, body)
        assert answer.status_code == 422, body
    assert put_condition(api, "not-a-uuid", {"state": "true"}).status_code == 422
    # Another owner's node or evidence: 404, as for an unknown id.
    for node, body in (
        (bobs["node_id"], {"state": "true"}),
        (node_id, {"state": "true", "evidence_id": bobs["event_id"]}),
        (str(uuid.uuid4()), {"state": "true"}),
    ):
        answer = put_condition(api, node, body)
        assert answer.status_code == 404, body
        assert answer.json()["error"] == "not_found"
    # A memory that is not conditional has no condition.
    plain = stored(api, "Ana likes window seats")["node_id"]
    assert put_condition(api, plain, {"state": "true"}).status_code == 422

    key = str(uuid.uuid4())
    body = {"state": "true", "evidence_id": evidence, "evaluation_method": "tool"}
    first = put_condition(api, node_id, body, key)
    assert first.status_code == 200, first.text
    assert first.json()["metadata"]["prme_condition_v1"]["state"] == "true"
    assert evidence in first.json()["evidence_refs"]
    replay = put_condition(api, node_id, body, key)
    assert (replay.status_code, replay.json()) == (200, first.json())
    reused = put_condition(api, node_id, {"state": "false"}, key)
    assert reused.status_code == 409
    assert reused.json()["error"] == "conflict"

    post(api, "/v1/materializations/process", {}, api.alice)
    assert node_id in [r["node_id"] for r in retrieved(api, "airport Ana pick up")]

    assert api.client.put(f"/v1/nodes/{node_id}/archive", headers=api.alice).status_code == 200
    assert put_condition(api, node_id, {"state": "false"}).status_code == 409


def test_contradiction_routes_codes_replays_and_flagged_results(api: Api) -> None:
    porto = stored(api, "Ana lives in Porto")["node_id"]
    lisbon = stored(api, "Ana lives in Lisbon")["node_id"]
    project = stored(api, "Ana lives in Braga", scope="project")["node_id"]
    evidence = stored(api, "Ana said she still lives in Porto")["event_id"]
    bobs = stored(api, "Bob lives in Faro", api.bob)

    def mark(body: dict[str, Any]) -> Any:
        return post(api, "/v1/contradictions", body, api.alice)

    assert mark({"node_a_id": porto}).status_code == 422
    assert mark({"node_a_id": porto, "node_b_id": "nope"}).status_code == 422
    assert mark({"node_a_id": porto, "node_b_id": lisbon, "why": "x"}).status_code == 422
    assert mark({"node_a_id": porto, "node_b_id": porto}).status_code == 422
    assert mark({"node_a_id": porto, "node_b_id": project}).status_code == 422
    assert mark({"node_a_id": porto, "node_b_id": bobs["node_id"]}).status_code == 404
    foreign_evidence = {"node_a_id": porto, "node_b_id": lisbon, "evidence_id": bobs["event_id"]}
    assert mark(foreign_evidence).status_code == 404

    body = {"node_a_id": porto, "node_b_id": lisbon, "evidence_id": evidence}
    first = mark(body)
    assert first.status_code == 200, first.text
    assert [(n["id"], n["lifecycle_state"]) for n in first.json()] == [
        (porto, "contested"),
        (lisbon, "contested"),
    ]
    replay = mark(body)
    assert replay.status_code == 200
    assert [n["id"] for n in replay.json()] == [porto, lisbon]
    other_evidence = mark({"node_a_id": porto, "node_b_id": lisbon})
    assert other_evidence.status_code == 422
    edges = api.client.get(f"/v1/nodes/{porto}/edges", headers=api.alice).json()
    assert [e["edge_type"] for e in edges].count("contradicts") == 1

    results = {r["node_id"]: r for r in retrieved(api, "Where does Ana live?")}
    assert (results[porto]["conflict_flag"], results[porto]["contradicts_id"]) == (True, lisbon)
    assert (results[lisbon]["conflict_flag"], results[lisbon]["contradicts_id"]) == (True, porto)

    def resolve(body: dict[str, Any]) -> Any:
        return post(api, "/v1/contradictions/resolve", body, api.alice)

    assert resolve({"winner_id": lisbon, "loser_id": project}).status_code == 422
    assert resolve({"winner_id": lisbon, "loser_id": bobs["node_id"]}).status_code == 404
    settled = resolve({"winner_id": lisbon, "loser_id": porto})
    assert settled.status_code == 200, settled.text
    assert [(n["id"], n["lifecycle_state"]) for n in settled.json()] == [
        (lisbon, "stable"),
        (porto, "deprecated"),
    ]
    again = resolve({"winner_id": lisbon, "loser_id": porto})
    assert (again.status_code, again.json()) == (200, settled.json())
    # A deprecated memory cannot be contested again (an illegal move: 409), while the exact
    # replay of the settled pair still answers the nodes as they are.
    faro = stored(api, "Ana lives in Faro")["node_id"]
    conflict = mark({"node_a_id": porto, "node_b_id": faro})
    assert (conflict.status_code, conflict.json()["error"]) == (409, "invalid_transition")
    replayed = mark({"node_a_id": lisbon, "node_b_id": porto, "evidence_id": evidence})
    assert [n["lifecycle_state"] for n in replayed.json()] == ["stable", "deprecated"]
    post(api, "/v1/materializations/process", {}, api.alice)
    assert porto not in [r["node_id"] for r in retrieved(api, "Where does Ana live?")]

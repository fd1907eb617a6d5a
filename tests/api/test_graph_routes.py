"""GET /v1/nodes/{id}/provenance, /neighborhood and /chain over HTTP: shapes, paging, codes."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import pytest

from tests.harness.http import Api

GRAPH_READS = ("provenance", "neighborhood", "chain")


def stored(api: Api, content: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    api.client.app.state.runtime.engine.deps.clock.advance(seconds=1)  # type: ignore[attr-defined]
    response = api.client.post("/v1/store", json={"content": content}, headers=headers or api.alice)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def superseded(api: Api, old: str, new: str) -> None:
    api.client.app.state.runtime.engine.deps.clock.advance(seconds=1)  # type: ignore[attr-defined]
    response = api.client.post(
        "/v1/supersedences", json={"old_node_id": old, "new_node_id": new}, headers=api.alice
    )
    assert response.status_code == 200, response.text


def read(api: Api, node_id: str, what: str, **params: Any) -> Any:
    return api.client.get(f"/v1/nodes/{node_id}/{what}", params=params, headers=api.alice)


def test_provenance_pages_the_history_and_summarises_the_evidence(api: Api) -> None:
    first = stored(api, "I live in Lisbon")
    second = stored(api, "I live in Berlin now")
    superseded(api, first["node_id"], second["node_id"])

    response = read(api, first["node_id"], "provenance")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["node"]["id"] == first["node_id"]
    [evidence] = body["evidence"]
    assert evidence["event_id"] == first["event_id"]
    assert evidence["content_sha256"] == hashlib.sha256(b"I live in Lisbon").hexdigest()
    assert "content" not in evidence
    assert [o["operation"] for o in body["operations"]] == ["direct_store", "supersede"]
    assert all(o["verified"] for o in body["operations"])
    assert body["next_operation_cursor"] is None

    page_1 = read(api, first["node_id"], "provenance", operation_limit=1).json()
    assert [o["operation"] for o in page_1["operations"]] == ["direct_store"]
    page_2 = read(
        api,
        first["node_id"],
        "provenance",
        operation_limit=1,
        operation_cursor=page_1["next_operation_cursor"],
    ).json()
    assert [o["operation"] for o in page_2["operations"]] == ["supersede"]
    assert page_2["next_operation_cursor"] is None


def test_neighborhood_and_chain_answer_with_their_limits(api: Api) -> None:
    first = stored(api, "My phone is a Nokia")
    second = stored(api, "My phone is a Pixel")
    superseded(api, first["node_id"], second["node_id"])

    near = read(api, first["node_id"], "neighborhood", max_hops=1).json()
    assert [(n["node"]["id"], n["hops"], n["edge_types"]) for n in near["neighbors"]] == [
        (second["node_id"], 1, ["supersedes"])
    ]
    assert near["node_limit"] == 200 and near["truncated"] is False

    chain = read(api, first["node_id"], "chain").json()
    assert chain["direction"] == "forward"
    assert [n["id"] for n in chain["nodes"]] == [first["node_id"], second["node_id"]]
    back = read(api, second["node_id"], "chain", direction="backward").json()
    assert [n["id"] for n in back["nodes"]] == [second["node_id"], first["node_id"]]


@pytest.mark.parametrize("what", GRAPH_READS)
def test_a_foreign_or_unknown_node_is_404_and_a_malformed_id_422(api: Api, what: str) -> None:
    bobs = stored(api, "Bob's own note", headers=api.bob)
    for node_id in (bobs["node_id"], str(uuid.uuid4())):
        response = read(api, node_id, what)
        assert response.status_code == 404, response.text
        assert response.json()["error"] == "not_found"
        assert bobs["node_id"] not in response.text or node_id != bobs["node_id"]
    assert read(api, "not-a-uuid", what).status_code == 422
    # Bob's key reads his own node.
    own = api.client.get(f"/v1/nodes/{bobs['node_id']}/{what}", headers=api.bob)
    assert own.status_code == 200, own.text


@pytest.mark.parametrize(
    ("what", "params"),
    [
        ("provenance", {"operation_limit": 0}),
        ("provenance", {"operation_limit": 1001}),
        ("provenance", {"operation_cursor": "not a cursor"}),
        ("provenance", {"limit": 5}),
        ("neighborhood", {"max_hops": 0}),
        ("neighborhood", {"max_hops": 4}),
        ("chain", {"direction": "sideways"}),
    ],
)
def test_out_of_range_and_unknown_parameters_are_422(
    api: Api, what: str, params: dict[str, Any]
) -> None:
    node_id = stored(api, "A note")["node_id"]
    response = read(api, node_id, what, **params)
    assert response.status_code == 422, response.text
    [problem] = response.json()["detail"]
    assert problem["loc"] == ["query", next(iter(params))]

"""GET /v1/retrievals and GET /v1/nodes/{id}/retrievals over HTTP: paging, owners, codes."""

from __future__ import annotations

import uuid
from typing import Any

from tests.harness.http import Api

# Untrusted query text comes back as sent, as JSON text.
HOSTILE = "<script>alert(1)</script> what tea?"


def advance(api: Api) -> None:
    api.client.app.state.runtime.engine.deps.clock.advance(seconds=1)  # type: ignore[attr-defined]


def post(api: Api, path: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    advance(api)
    response = api.client.post(path, json=body, headers=headers)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def retrieved(api: Api, query: str, headers: dict[str, str], **options: Any) -> str:
    body = post(api, "/v1/retrieve", {"query": query, **options}, headers)
    request_id: str = body["metrics"]["request_id"]
    return request_id


def test_pages_cover_every_receipt_once_newest_first_and_never_another_owners(
    api: Api,
) -> None:
    post(api, "/v1/store", {"content": "Alice likes oolong tea"}, api.alice)
    post(api, "/v1/store", {"content": "Bob likes green tea"}, api.bob)
    mine = [retrieved(api, f"tea {n}", api.alice) for n in range(4)]
    mine.append(retrieved(api, HOSTILE, api.alice))
    bobs = retrieved(api, "tea", api.bob)

    seen: list[dict[str, Any]] = []
    cursor = None
    for _ in range(10):
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        response = api.client.get("/v1/retrievals", params=params, headers=api.alice)
        assert response.status_code == 200, response.text
        page = response.json()
        assert len(page["retrievals"]) <= 2
        seen += page["retrievals"]
        cursor = page["next_cursor"]
        if cursor is None:
            break

    assert [r["request_id"] for r in seen] == mine[::-1]
    assert bobs not in {r["request_id"] for r in seen}
    assert seen[0]["query"] == HOSTILE
    assert seen[0]["returned_count"] >= 1 and seen[0]["candidate_count"] >= 1
    assert seen[0]["context_format"] in {"reader", "auditable"}
    # An operator names the owner; the same listing answers.
    response = api.client.get("/v1/retrievals", params={"user_id": "bob"}, headers=api.operator)
    assert [r["request_id"] for r in response.json()["retrievals"]] == [bobs]


def test_listing_refuses_what_it_cannot_read(api: Api) -> None:
    get = api.client.get
    assert get("/v1/retrievals", headers=api.operator).status_code == 422
    assert get("/v1/retrievals", params={"user_id": "bob"}, headers=api.alice).status_code == 403
    for params in ({"limit": 0}, {"limit": 101}, {"cursor": "nope"}, {"colour": "red"}):
        response = get("/v1/retrievals", params=params, headers=api.alice)
        assert response.status_code == 422, params
    response = get("/v1/retrievals", params={"since": "2025-01-01T00:00:00"}, headers=api.alice)
    assert response.status_code == 422


def test_a_node_lists_the_retrievals_that_ranked_it(api: Api) -> None:
    tea = post(api, "/v1/store", {"content": "Alice likes oolong tea"}, api.alice)
    post(api, "/v1/store", {"content": "Alice plays chess on Sundays"}, api.alice)
    shown = retrieved(api, "oolong tea", api.alice)
    left_out = retrieved(api, "chess on Sundays", api.alice, limit=1)

    response = api.client.get(
        f"/v1/nodes/{tea['node_id']}/retrievals", params={"scan_limit": 1}, headers=api.alice
    )
    assert response.status_code == 200, response.text
    first = response.json()
    assert first["scanned"] == 1 and first["next_cursor"] is not None
    rest = api.client.get(
        f"/v1/nodes/{tea['node_id']}/retrievals",
        params={"cursor": first["next_cursor"]},
        headers=api.alice,
    ).json()
    found = {r["request_id"]: r for r in first["retrievals"] + rest["retrievals"]}
    assert found[shown]["outcome"] == "returned" and found[shown]["context_ref"] is not None
    assert found[left_out]["outcome"] != "returned" and found[left_out]["context_ref"] is None
    assert rest["next_cursor"] is None


def test_a_foreign_unknown_or_malformed_node_is_refused(api: Api) -> None:
    bobs = post(api, "/v1/store", {"content": "Bob likes green tea"}, api.bob)
    retrieved(api, "tea", api.bob)
    for node_id in (bobs["node_id"], str(uuid.uuid4())):
        response = api.client.get(f"/v1/nodes/{node_id}/retrievals", headers=api.alice)
        assert response.status_code == 404
        assert response.json()["error"] == "not_found"
    response = api.client.get("/v1/nodes/not-a-uuid/retrievals", headers=api.alice)
    assert response.status_code == 422
    response = api.client.get(
        f"/v1/nodes/{bobs['node_id']}/retrievals", params={"scan_limit": 201}, headers=api.bob
    )
    assert response.status_code == 422

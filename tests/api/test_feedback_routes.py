"""The relevance, answer-citation and replay routes: status codes, auth and paging over HTTP."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from prme.retrieval.receipts import RetrievalReceipt
from tests.harness.http import Api


def saved_retrieval(api: Api) -> dict[str, Any]:
    for text in ("I moved to Lisbon in May.", "I started learning Portuguese in June."):
        stored = api.client.post("/v1/store", json={"content": text}, headers=api.alice)
        assert stored.status_code == 200, stored.text
    response = api.client.post(
        "/v1/retrieve", json={"query": "Where did I move?"}, headers=api.alice
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["metrics"]["receipt_persisted"] is True
    return body


def test_relevance_round_trip_over_http(api: Api) -> None:
    retrieval = saved_retrieval(api)
    request_id = retrieval["metrics"]["request_id"]
    node_id = retrieval["results"][0]["node_id"]
    feedback_id = str(uuid.uuid4())
    body = {
        "feedback_id": feedback_id,
        "request_id": request_id,
        "labels": {node_id: True},
        "surface": "results",
        "method": "explicit_user",
    }
    first = api.client.post("/v1/relevance", json=body, headers=api.alice)
    assert first.status_code == 200, first.text
    assert first.json()["labels"] == {node_id: True}
    again = api.client.post("/v1/relevance", json=body, headers=api.alice)
    assert again.json() == first.json()
    conflicting = api.client.post(
        "/v1/relevance", json={**body, "labels": {node_id: False}}, headers=api.alice
    )
    assert conflicting.status_code == 400

    read = api.client.get(f"/v1/relevance/{feedback_id}", headers=api.alice)
    assert read.status_code == 200 and read.json() == first.json()
    page = api.client.get("/v1/relevance", params={"limit": 10}, headers=api.alice)
    assert [r["feedback_id"] for r in page.json()["items"]] == [feedback_id]
    assert page.json()["next_after_id"] is None
    operator = api.client.get("/v1/relevance", params={"user_id": "alice"}, headers=api.operator)
    assert [r["feedback_id"] for r in operator.json()["items"]] == [feedback_id]
    # Another owner, another tenant: the record does not exist for them.
    for headers in (api.bob, api.other_tenant):
        assert api.client.get(f"/v1/relevance/{feedback_id}", headers=headers).status_code == 404
        assert api.client.get("/v1/relevance", headers=headers).json()["items"] == []


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"labels": {}}, 422),
        ({"labels": "LABEL_IS_YES"}, 422),
        ({"request_id": "not-a-uuid"}, 422),
        ({"labels": {"not-a-uuid": True}}, 422),
        ({"surface": "sidebar"}, 422),
        ({"method": "guess"}, 422),
        ({"namespace": "x"}, 422),
        ({"labels": "UNKNOWN_NODE"}, 400),
        ({"request_id": "UNKNOWN"}, 404),
        ({"user_id": "bob"}, 403),
    ],
)
def test_relevance_rejections_write_nothing(api: Api, change: dict[str, Any], status: int) -> None:
    retrieval = saved_retrieval(api)
    node_id = retrieval["results"][0]["node_id"]
    body: dict[str, Any] = {
        "feedback_id": str(uuid.uuid4()),
        "request_id": retrieval["metrics"]["request_id"],
        "labels": {node_id: True},
    }
    body.update(change)
    if body["labels"] == "LABEL_IS_YES":
        body["labels"] = {node_id: "yes"}
    if body["labels"] == "UNKNOWN_NODE":
        body["labels"] = {str(uuid.uuid4()): True}
    if body["request_id"] == "UNKNOWN":
        body["request_id"] = str(uuid.uuid4())
    response = api.client.post("/v1/relevance", json=body, headers=api.alice)
    assert response.status_code == status, response.text
    assert api.client.get("/v1/relevance", headers=api.alice).json()["items"] == []


def test_a_foreign_receipt_is_not_found(api: Api) -> None:
    retrieval = saved_retrieval(api)
    body = {
        "request_id": retrieval["metrics"]["request_id"],
        "labels": {retrieval["results"][0]["node_id"]: True},
    }
    for headers in (api.bob, api.other_tenant):
        assert api.client.post("/v1/relevance", json=body, headers=headers).status_code == 404
    citation = {
        "request_id": retrieval["metrics"]["request_id"],
        "answer_id": "a-1",
        "cited_node_ids": [],
        "method": "model_reported",
    }
    assert (
        api.client.post("/v1/answer-citations", json=citation, headers=api.bob).status_code == 404
    )


def test_answer_citations_over_http(api: Api) -> None:
    retrieval = saved_retrieval(api)
    entry = retrieval["bundle"]["entries"][0]
    citation_id = str(uuid.uuid4())
    body = {
        "citation_id": citation_id,
        "request_id": retrieval["metrics"]["request_id"],
        "answer_id": "assistant-message-42",
        "cited_node_ids": [entry["node_id"]],
        "answer_sha256": "1f3c2b1a" + "0" * 56,
        "method": "application_verified",
    }
    first = api.client.post("/v1/answer-citations", json=body, headers=api.alice)
    assert first.status_code == 200, first.text
    assert first.json()["context_sha256"] == retrieval["bundle"]["context_sha256"]
    assert api.client.post("/v1/answer-citations", json=body, headers=api.alice).json() == (
        first.json()
    )
    changed = api.client.post(
        "/v1/answer-citations", json={**body, "answer_id": "other"}, headers=api.alice
    )
    assert changed.status_code == 409
    assert (
        api.client.post(
            "/v1/answer-citations", json={**body, "answer_sha256": "XYZ"}, headers=api.alice
        ).status_code
        == 422
    )
    assert (
        api.client.post(
            "/v1/answer-citations",
            json={**body, "citation_id": str(uuid.uuid4()), "cited_node_ids": [str(uuid.uuid4())]},
            headers=api.alice,
        ).status_code
        == 400
    )
    read = api.client.get(f"/v1/answer-citations/{citation_id}", headers=api.alice)
    assert read.json() == first.json()
    assert api.client.get("/v1/answer-citations/not-a-uuid", headers=api.alice).status_code == 422
    assert api.client.get(f"/v1/answer-citations/{citation_id}", headers=api.bob).status_code == 404
    page = api.client.get("/v1/answer-citations", headers=api.alice).json()
    assert [r["citation_id"] for r in page["items"]] == [citation_id]


def test_receipts_replay_from_the_route(api: Api) -> None:
    retrieval = saved_retrieval(api)
    request_id = retrieval["metrics"]["request_id"]
    saved = api.client.get(f"/v1/retrievals/{request_id}", headers=api.alice)
    assert saved.status_code == 200
    # The route returns everything replay needs: the ranking recomputes without the store.
    receipt = RetrievalReceipt.model_validate_json(saved.text)
    assert receipt.replay_ranking() == receipt.saved_ranking()
    assert receipt.returned_node_ids == [r["node_id"] for r in retrieval["results"]]
    replay = api.client.get(f"/v1/retrievals/{request_id}/replay", headers=api.alice)
    assert replay.status_code == 200
    assert replay.json()["matches"] is True
    assert replay.json()["replayed_ranking"] == receipt.replay_ranking()
    assert api.client.get(f"/v1/retrievals/{request_id}/replay", headers=api.bob).status_code == 404


def test_tool_arguments_resolve_against_the_saved_retrieval(api: Api) -> None:
    stored = api.client.post(
        "/v1/store",
        json={
            "content": "Current City: Salt Lake City(Utah)",
            "value_bindings": [
                {
                    "reference": "city-1",
                    "kind": "city",
                    "presentation": "Salt Lake City(Utah)",
                    "lookup": "Salt Lake City",
                }
            ],
        },
        headers=api.alice,
    )
    assert stored.status_code == 200, stored.text
    retrieval = api.client.post(
        "/v1/retrieve", json={"query": "Which city?"}, headers=api.alice
    ).json()
    request_id = retrieval["metrics"]["request_id"]
    route = f"/v1/retrievals/{request_id}/resolve-tool-arguments"
    body = {"arguments": {"city": "Salt Lake City(Utah)", "other": "Salt Lake"}}
    resolved = api.client.post(route, json=body, headers=api.alice)
    assert resolved.status_code == 200, resolved.text
    assert resolved.json()["arguments"] == {"city": "Salt Lake City", "other": "Salt Lake"}
    assert [u["path"] for u in resolved.json()["replacements"]] == ["/city"]
    # The binding only counts for the retrieval that exposed it, and only for its owner.
    assert api.client.post(route, json=body, headers=api.bob).status_code == 404
    assert api.client.post(route, json={"arguments": [1]}, headers=api.alice).status_code == 422
    assert api.client.post(route, json={**body, "x": 1}, headers=api.alice).status_code == 422

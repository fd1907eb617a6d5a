"""GET /v1/relevance and GET /v1/answer-citations with `request_id` over HTTP on both
backends, and the client methods' `request_id` in a directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prme.client import MemoryClient
from tests.harness.http import Api


def post(api: Api, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.client.post(path, json=body, headers=api.alice)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_each_listing_takes_a_retrievals_request_id(api: Api) -> None:
    post(api, "/v1/store", {"content": "Alice drinks green tea"})
    first = post(api, "/v1/retrieve", {"query": "green tea"})
    second = post(api, "/v1/retrieve", {"query": "tea"})
    ids = {}
    for name, retrieval in (("first", first), ("second", second)):
        request_id = retrieval["metrics"]["request_id"]
        node_id = retrieval["results"][0]["node_id"]
        judged = post(api, "/v1/relevance", {"request_id": request_id, "labels": {node_id: True}})
        cited = post(
            api,
            "/v1/answer-citations",
            {
                "request_id": request_id,
                "answer_id": f"answer-{name}",
                "cited_node_ids": [],
                "method": "human_verified",
            },
        )
        ids[name] = (request_id, judged["feedback_id"], cited["citation_id"])

    request_id, feedback_id, citation_id = ids["second"]
    judgments = api.client.get(
        "/v1/relevance", params={"request_id": request_id}, headers=api.alice
    ).json()
    citations = api.client.get(
        "/v1/answer-citations", params={"request_id": request_id, "limit": 5}, headers=api.alice
    ).json()

    assert [r["feedback_id"] for r in judgments["items"]] == [feedback_id]
    assert [c["citation_id"] for c in citations["items"]] == [citation_id]
    assert judgments["next_after_id"] is None
    # Bob's key naming alice's retrieval lists nothing of hers.
    bobs = api.client.get("/v1/relevance", params={"request_id": request_id}, headers=api.bob)
    assert bobs.json() == {"items": [], "next_after_id": None}
    malformed = api.client.get(
        "/v1/answer-citations", params={"request_id": "nope"}, headers=api.alice
    )
    assert malformed.status_code == 422


def test_the_client_lists_one_retrievals_records(tmp_path: Path) -> None:
    with MemoryClient(tmp_path / "memory") as client:
        client.store("Alice drinks green tea")
        first = client.retrieve("green tea")
        second = client.retrieve("tea")
        for retrieval in (first, second):
            client.record_relevance(
                retrieval.metrics.request_id, {retrieval.results[0].node_id: True}
            )

        listed = client.list_relevance(request_id=second.metrics.request_id)

    assert [r.request_id for r in listed.items] == [second.metrics.request_id]

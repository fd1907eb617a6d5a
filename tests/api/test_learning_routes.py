"""POST /v1/learning/evaluate over HTTP: an evaluation of the owner's judgments, validation
(422), the refusal with too few judgments (400 not_enough_judgments) and owner scoping."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness.http import Api

EVALUATE = "/v1/learning/evaluate"
HOBBIES = ["sailing", "violin", "pottery", "chess", "baking", "rowing", "tango", "karate"]


def post(api: Api, path: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    response = api.client.post(path, json=body, headers=headers)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def judge(api: Api, headers: dict[str, str], retrievals: int) -> None:
    """Notes about hobbies; one retrieval per question, its note judged relevant."""
    note_of = {
        hobby: post(api, "/v1/store", {"content": f"I go to {hobby} class on Mondays"}, headers)[
            "node_id"
        ]
        for hobby in HOBBIES
    }
    for n in range(retrievals):
        hobby = HOBBIES[n % len(HOBBIES)]
        retrieval = post(api, "/v1/retrieve", {"query": f"{hobby} class", "limit": 5}, headers)
        labels = {note_of[hobby]: True}
        post(
            api,
            "/v1/relevance",
            {"request_id": retrieval["metrics"]["request_id"], "labels": labels},
            headers,
        )


def test_an_owner_evaluates_learning_from_its_own_judgments(api: Api) -> None:
    # 40, not 30: the holdout follows random request ids, and 30 split in half left fewer
    # than 10 to fit about once in 50 runs.
    judge(api, api.alice, 40)
    body = post(api, EVALUATE, {"holdout_share": 0.5}, api.alice)
    assert body["relevance_records"] == 40 and body["judged_retrievals"] == 40
    assert body["train_size"] + body["holdout_size"] == 40
    assert body["metric"] == "ndcg@10" and len(body["input_checksum"]) == 64
    assert isinstance(body["recommended"], bool)
    # Bob's evaluation sees none of alice's judgments.
    refused = api.client.post(EVALUATE, json={}, headers=api.bob)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "not_enough_judgments"
    assert "0 judged retrievals are usable" in refused.json()["detail"]
    assert api.client.post(EVALUATE, json={"user_id": "alice"}, headers=api.bob).status_code == 403


@pytest.mark.parametrize(
    "body",
    [
        {"holdout_share": 0.9},
        {"holdout_share": 0.0},
        {"max_records": 0},
        {"max_records": 5001},
        {"scopes": []},
        {"scopes": ["galaxy"]},
        {"learning_rate": 0.1},
    ],
)
def test_bad_input_is_refused_with_422(api: Api, body: dict[str, Any]) -> None:
    response = api.client.post(EVALUATE, json=body, headers=api.alice)
    assert response.status_code == 422, response.text

"""POST /v1/organize over HTTP: the run's report, validation (422) and owner scoping (403)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness.http import Api

ORGANIZE = "/v1/organize"


def store(api: Api, content: str, headers: dict[str, str]) -> str:
    response = api.client.post("/v1/store", json={"content": content}, headers=headers)
    assert response.status_code == 200, response.text
    node_id: str = response.json()["node_id"]
    return node_id


def test_organize_reports_each_job_and_supersedes_a_duplicate(api: Api) -> None:
    first = store(api, "I take the 8:15 train", api.alice)
    second = store(api, "I take the 8:15 train", api.alice)
    bobs = store(api, "I take the 8:15 train", api.bob)
    response = api.client.post(ORGANIZE, json={"jobs": ["dedup"]}, headers=api.alice)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["jobs_run"] == ["dedup"] and body["complete"] is True
    assert body["per_job"]["dedup"] == {
        "scanned": 2,
        "changed": 1,
        "complete": True,
        "cursor": None,
    }
    assert isinstance(body["duration_ms"], int)
    states = {
        node_id: api.client.get(f"/v1/nodes/{node_id}", headers=api.alice).json()["lifecycle_state"]
        for node_id in (first, second)
    }
    assert sorted(states.values()) == ["superseded", "tentative"]
    bobs_state = api.client.get(f"/v1/nodes/{bobs}", headers=api.bob).json()["lifecycle_state"]
    assert bobs_state == "tentative"
    # Every job by default, in the organizer's order.
    everything = api.client.post(ORGANIZE, json={}, headers=api.alice).json()
    assert everything["jobs_run"] == [
        "promote",
        "decay",
        "archive",
        "deprecate",
        "dedup",
        "ttl_sweep",
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"jobs": ["compact"]},  # no such job
        {"jobs": []},
        {"budget_ms": "5000"},  # a strict integer
        {"budget_ms": 0},
        {"budget_ms": 60_001},
        {"budget_ms": 1.5},
        {"cadence": "daily"},  # unknown field
    ],
)
def test_invalid_requests_are_422(api: Api, body: dict[str, Any]) -> None:
    response = api.client.post(ORGANIZE, json=body, headers=api.alice)
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"][0] == "body"


def test_owner_scoping(api: Api) -> None:
    assert api.client.post(ORGANIZE, json={}).status_code == 401
    naming_bob = api.client.post(ORGANIZE, json={"user_id": "bob"}, headers=api.alice)
    assert naming_bob.status_code == 403
    # An operator key names the owner it acts for.
    as_operator = api.client.post(ORGANIZE, json={"user_id": "bob"}, headers=api.operator)
    assert as_operator.status_code == 200, as_operator.text

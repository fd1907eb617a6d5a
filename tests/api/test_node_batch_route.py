"""POST /v1/nodes/batch-get over HTTP on both backends: owner scoping (a foreign id is only
missing), the operator naming a user, the body rules (422), and one request per call against
the tenant's rate."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from prme.client import MemoryClient
from prme.model.node_batch import MAX_NODE_BATCH
from tests.harness.http import Api
from tests.harness.limits import LimitedApi

PATH = "/v1/nodes/batch-get"


def stored(api: Api, headers: dict[str, str], content: str) -> str:
    response = api.client.post("/v1/store", json={"content": content}, headers=headers)
    assert response.status_code == 200, response.text
    node_id: str = response.json()["node_id"]
    return node_id


def test_an_owner_reads_its_nodes_and_another_owners_ids_are_only_missing(api: Api) -> None:
    alices = stored(api, api.alice, "Alice likes tea")
    bobs = stored(api, api.bob, "Bob keeps bees in the attic")

    answer = api.client.post(PATH, json={"node_ids": [bobs, alices]}, headers=api.alice)

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert [item["id"] for item in body["items"]] == [alices]
    assert body["items"][0] == api.client.get(f"/v1/nodes/{alices}", headers=api.alice).json()
    assert body["missing_ids"] == [bobs]
    assert "bees" not in answer.text
    # Naming bob with alice's owner key is refused, as on every route.
    named = api.client.post(PATH, json={"node_ids": [bobs], "user_id": "bob"}, headers=api.alice)
    assert named.status_code == 403
    # The tenant's operator reads bob's node by naming him.
    operator = api.client.post(
        PATH, json={"node_ids": [bobs, alices], "user_id": "bob"}, headers=api.operator
    )
    assert [item["content"] for item in operator.json()["items"]] == ["Bob keeps bees in the attic"]
    assert operator.json()["missing_ids"] == [alices]
    # Another tenant's alice does not see this tenant's alice.
    other = api.client.post(PATH, json={"node_ids": [alices]}, headers=api.other_tenant)
    assert other.json() == {"items": [], "missing_ids": [alices]}


@pytest.mark.parametrize(
    "body",
    [
        {"node_ids": []},
        {"node_ids": [str(uuid.uuid4()) for _ in range(MAX_NODE_BATCH + 1)]},
        {"node_ids": ["not-a-uuid"]},
        {"node_ids": ["0b8f6a52-4c1e-4c2d-9a57-2f1d7e9c3b10"] * 2},
        {"node_ids": [str(uuid.uuid4())], "limit": 5},
        {},
    ],
    ids=["empty", "too-many", "malformed", "repeated", "unknown-field", "no-ids"],
)
def test_a_body_out_of_shape_is_422(api: Api, body: dict[str, Any]) -> None:
    answer = api.client.post(PATH, json=body, headers=api.alice)

    assert answer.status_code == 422, answer.text
    assert all(error["loc"][0] == "body" for error in answer.json()["detail"])


def test_a_full_batch_is_one_request_against_the_rate(limited_api: LimitedApi) -> None:
    api = limited_api
    api.set_limits("acme", requests_per_second=1, burst=2)
    full = {"node_ids": [str(uuid.uuid4()) for _ in range(MAX_NODE_BATCH)]}

    first = api.client.post(PATH, json=full, headers=api.alice)
    second = api.client.post(PATH, json=full, headers=api.alice)
    third = api.client.post(PATH, json=full, headers=api.alice)

    assert [first.status_code, second.status_code] == [200, 200]
    assert len(first.json()["missing_ids"]) == MAX_NODE_BATCH
    assert third.status_code == 429
    assert third.json()["error"] == "rate_limited"


def test_the_client_method_reads_in_a_directory(tmp_path: Any) -> None:
    with MemoryClient(tmp_path / "memory") as client:
        tea = client.store("I like tea").node_id
        assert tea is not None
        unknown = str(uuid.uuid4())

        batch = client.get_nodes([unknown, tea])

    assert [item.content for item in batch.items] == ["I like tea"]
    assert batch.missing_ids == [unknown]

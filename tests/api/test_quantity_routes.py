"""POST /v1/quantities/aggregate and /aggregate-text over HTTP: owners, tenants and 4xx rules."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness.http import Api

AGGREGATE = "/v1/quantities/aggregate"
AGGREGATE_TEXT = "/v1/quantities/aggregate-text"


def say(api: Api, text: str, headers: dict[str, str], **fields: Any) -> None:
    body = {"content": text, "wait_for_extraction": True, **fields}
    response = api.client.post("/v1/ingest", json=body, headers=headers)
    assert response.status_code == 200, response.text


def dollars(body: dict[str, Any]) -> str | None:
    groups = [g for g in body["groups"] if g["unit"] == "$"]
    return groups[0]["total"] if groups else None


@pytest.fixture
def seeded(api: Api) -> Api:
    for text in ("I raised $1,200 for the shelter.", "I raised $300 at the bake sale."):
        say(api, text, api.alice)
    say(api, "We raised $300 together.", api.alice)
    say(api, "I raised $5,000 for the gala.", api.other_tenant)
    say(api, "I raised $70 for the club.", api.bob)
    return api


def test_structured_aggregation(seeded: Api) -> None:
    api = seeded
    query = {"subjects": ["I"], "predicate_prefixes": ["raised"], "group_by": ["unit"]}
    response = api.client.post(AGGREGATE, json={"query": query}, headers=api.alice)
    assert response.status_code == 200, response.text
    body = response.json()
    assert dollars(body) == "1500"
    (group,) = body["groups"]
    assert (group["count"], group["event_count"], group["minimum"], group["maximum"]) == (
        2,
        2,
        "300",
        "1200",
    )
    assert body["query"]["subjects"] == ["I"]
    assert body["exclusions"] == {"filtered": 1}  # the "We" amount
    assert body["stored_set_exhaustive"] is True
    assert body["unit_conversion"] == "none"
    assert body["consistency"] == "complete_for_unchanged_store"
    assert body["extraction_coverage"] == "unknown"


def test_question_route_returns_plan_and_aggregation(seeded: Api) -> None:
    api = seeded
    response = api.client.post(
        AGGREGATE_TEXT, json={"question": "How much did we raise?"}, headers=api.alice
    )
    assert response.status_code == 200, response.text
    body = response.json()
    plan = body["plan"]
    assert plan["status"] == "ready"
    assert plan["query"]["subjects"] == ["we"]
    assert plan["query"]["predicate_prefixes"] == ["raised"]
    assert plan["assumptions"]
    assert dollars(body["aggregation"]) == "300"


def test_unsupported_question_returns_the_plan_and_no_aggregation(seeded: Api) -> None:
    api = seeded
    response = api.client.post(
        AGGREGATE_TEXT,
        json={"question": "How much did I raise for the shelter last year?"},
        headers=api.alice,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["aggregation"] is None
    assert body["plan"]["status"] == "unsupported"
    assert body["plan"]["reason"]
    assert body["plan"]["query"] is None


def test_other_tenant_and_other_owner_data_is_never_counted(seeded: Api) -> None:
    api = seeded
    body = {"query": {"group_by": ["unit"]}}
    alice = api.client.post(AGGREGATE, json=body, headers=api.alice).json()
    assert dollars(alice) == "1800"
    assert alice["quantity_nodes"] == 3
    other = api.client.post(AGGREGATE, json=body, headers=api.other_tenant).json()
    assert dollars(other) == "5000"
    assert other["quantity_nodes"] == 1
    text = {"question": "How much did I raise?", "user_id": "bob"}
    bob = api.client.post(AGGREGATE_TEXT, json=text, headers=api.operator).json()
    assert dollars(bob["aggregation"]) == "70"


def test_another_user_id_with_an_owner_key_is_403(api: Api) -> None:
    for path, body in (
        (AGGREGATE, {"user_id": "bob", "query": {}}),
        (AGGREGATE_TEXT, {"user_id": "bob", "question": "How much did I raise?"}),
    ):
        response = api.client.post(path, json=body, headers=api.alice)
        assert response.status_code == 403


def test_missing_key_is_401(api: Api) -> None:
    assert api.client.post(AGGREGATE, json={"query": {}}).status_code == 401
    assert (
        api.client.post(AGGREGATE_TEXT, json={"question": "How much did I raise?"}).status_code
        == 401
    )


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": {}, "extra": 1},
        {"query": {"colour": "red"}},
        {"query": {"group_by": ["subject"]}},
        {"query": {"group_by": ["unit", "unit"]}},
        {"query": {"subjects": []}},
        {"query": {"units": ["  "]}},
        {"query": {"event_time_from": "2024-01-01T00:00:00"}},
        {
            "query": {
                "event_time_from": "2024-02-01T00:00:00Z",
                "event_time_to": "2024-01-01T00:00:00Z",
            }
        },
        {"query": {"sample_limit": 101}},
        {"query": {"group_limit": 0}},
        {"query": {"scopes": ["nowhere"]}},
        {"user_id": "", "query": {}},
    ],
)
def test_invalid_aggregation_requests_are_422(api: Api, body: dict[str, Any]) -> None:
    assert api.client.post(AGGREGATE, json=body, headers=api.alice).status_code == 422


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"question": ""},
        {"question": "   "},
        {"question": "x" * 501},
        {"question": "How much did I raise?", "mode": "fuzzy"},
        {"question": 5},
    ],
)
def test_invalid_question_requests_are_422(api: Api, body: dict[str, Any]) -> None:
    assert api.client.post(AGGREGATE_TEXT, json=body, headers=api.alice).status_code == 422


def test_operator_must_name_a_user(api: Api) -> None:
    response = api.client.post(AGGREGATE, json={"query": {}}, headers=api.operator)
    assert response.status_code == 422


def test_openapi_declares_the_error_statuses(api: Api) -> None:
    paths = api.client.get("/openapi.json").json()["paths"]
    for path in (AGGREGATE, AGGREGATE_TEXT):
        responses = paths[path]["post"]["responses"]
        assert {"200", "401", "403", "422", "503"} <= set(responses)

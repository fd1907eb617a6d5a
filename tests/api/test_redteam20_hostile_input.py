"""Red-team tests over HTTP: inputs the schemas of issue 20's routes allow but the code may
not digest (extreme times, control characters, bounds, forged cursors) answer 2xx or 4xx with
an error body, never a 500."""

from __future__ import annotations

from typing import Any

from tests.harness.http import Api
from tests.harness.redteam20 import CONDITION, put_condition, stored

EXTREME_TIMES = (
    "9999-12-31T23:59:59-23:59",  # past year 9999 once in UTC
    "0001-01-01T00:00:00+23:59",  # before year 1 once in UTC
    "9999-12-31T23:59:59.999999+00:00",
)


def _ok_or_client_error(response: Any) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert "error" in response.json() or "detail" in response.json()


def test_condition_evaluations_at_extreme_times_and_with_control_characters(api: Api) -> None:
    node_id = stored(api, "Pick Ana up", epistemic_type="conditional", metadata=CONDITION)[
        "node_id"
    ]
    for when in EXTREME_TIMES:
        _ok_or_client_error(
            put_condition(api, node_id, {"state": "true", "evaluated_at": when, "reason": "x"})
        )
        _ok_or_client_error(api.client.get(f"/v1/nodes/{node_id}", headers=api.alice))
        _ok_or_client_error(api.client.get(f"/v1/nodes/{node_id}/provenance", headers=api.alice))
    reason = ("\x07\x1b[31m\u202e\ufeff\U0001f600" * 500)[:4000]
    _ok_or_client_error(put_condition(api, node_id, {"state": "false", "reason": reason}))
    retrieved = api.client.post(
        "/v1/retrieve", json={"query": "Pick Ana up", "mode": "explicit"}, headers=api.alice
    )
    assert retrieved.status_code == 200


def test_assertion_reads_at_extreme_times(api: Api) -> None:
    stored(api, "I live in Lisbon.")
    for when in EXTREME_TIMES:
        fact = {"subject": "I", "predicate": "live"}
        for path, body in (
            ("/v1/assertions/state", {"query": {**fact, "valid_at": when}}),
            ("/v1/assertions/state", {"query": {**fact, "knowledge_at": when}}),
            ("/v1/assertions/aggregate", {"query": {"knowledge_at": when}}),
            ("/v1/assertions/aggregate", {"query": {"valid_at": when}}),
            ("/v1/assertions/aggregate", {"query": {"event_time_from": when}}),
        ):
            response = api.client.post(path, json=body, headers=api.alice)
            _ok_or_client_error(response)
            assert response.status_code != 422 or "query" in response.text


def test_graph_reads_with_forged_cursors_and_bounds(api: Api) -> None:
    node_id = stored(api, "Ana lives in Porto.")["node_id"]
    for cursor in ("", "x" * 5000, "\x00", "9999-12-31T23:59:59+00:00|" + "f" * 36, "%23%25#"):
        _ok_or_client_error(
            api.client.get(
                f"/v1/nodes/{node_id}/provenance",
                params={"operation_cursor": cursor},
                headers=api.alice,
            )
        )
    for hops in ("0", "1", "3", "4", "-1", "99999999999999999999"):
        _ok_or_client_error(
            api.client.get(
                f"/v1/nodes/{node_id}/neighborhood", params={"max_hops": hops}, headers=api.alice
            )
        )
    for direction in ("forward", "backward", "both", "sideways"):
        _ok_or_client_error(
            api.client.get(
                f"/v1/nodes/{node_id}/chain", params={"direction": direction}, headers=api.alice
            )
        )

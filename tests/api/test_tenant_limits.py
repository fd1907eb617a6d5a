"""Per-tenant limits over HTTP on both backends: 429 and 403 bodies, Retry-After, nothing
written when refused, one tenant's limit never touching another, and GET /v1/limits."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from prme.model.limits import TenantLimits
from tests.harness.http import MCP_HEADERS
from tests.harness.limits import LimitedApi

WINDOW_END = "2026-03-01T12:00:04Z"  # a 4 s window holding START (12:00:00.5)
NEXT_DAY = "2026-03-02T00:00:00Z"


def store(api: LimitedApi, headers: dict[str, str], content: str, **body: Any) -> Any:
    return api.client.post("/v1/store", json={"content": content, **body}, headers=headers)


def used(api: LimitedApi, headers: dict[str, str]) -> dict[str, Any]:
    report = api.client.get("/v1/limits", headers=headers).json()
    return {usage["limit"]: usage["used"] for usage in report["limits"]}


def test_requests_past_the_rate_answer_429_with_the_limit_and_retry_after(
    limited_api: LimitedApi,
) -> None:
    api = limited_api
    api.set_limits("acme", requests_per_second=1, burst=4)
    for _ in range(4):
        assert api.client.get("/v1/stats", headers=api.alice).status_code == 200

    refused = api.client.get("/v1/stats", headers=api.alice)

    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "4"  # 3.5 s to the window's end, rounded up
    body = refused.json()
    assert body.pop("detail")
    assert body == {
        "error": "rate_limited",
        "limit": "requests_per_second",
        "limit_value": 1,
        "resets_at": WINDOW_END,
    }
    # The operator key of the same tenant shares the tenant's window.
    assert api.client.get("/v1/stats?user_id=bob", headers=api.operator).status_code == 429
    # Another tenant at the same moment is untouched.
    assert api.client.get("/v1/stats", headers=api.carol).status_code == 200
    # The window ends when the body said it would.
    api.clock.set(datetime(2026, 3, 1, 12, 0, 4, tzinfo=UTC))
    assert api.client.get("/v1/stats", headers=api.alice).status_code == 200


def test_a_refused_store_writes_nothing(limited_api: LimitedApi) -> None:
    api = limited_api
    api.set_limits("acme", requests_per_second=1, burst=1)
    assert store(api, api.alice, "I live in Lisbon").status_code == 200

    refused = store(api, api.alice, "I live in Porto")

    assert refused.status_code == 429
    assert api.events("acme", "alice") == 1
    assert used(api, api.alice)["stored_records"] == 1


def test_a_store_past_the_stored_records_answers_403_and_writes_nothing(
    limited_api: LimitedApi,
) -> None:
    api = limited_api
    api.set_limits("acme", stored_records=2)
    first = store(api, api.alice, "I live in Lisbon").json()
    assert store(api, api.alice, "I work in Porto").status_code == 200

    refused = store(api, api.alice, "I was born in Faro")

    assert refused.status_code == 403
    assert "Retry-After" not in refused.headers
    body = refused.json()
    assert body.pop("detail")
    assert body == {
        "error": "quota_exceeded",
        "limit": "stored_records",
        "limit_value": 2,
        "resets_at": None,
    }
    assert api.events("acme", "alice") == 2
    # The quota is the tenant's: another of its owners is refused too, another tenant is not.
    operator_store = store(api, api.operator, "Bob likes tea", user_id="bob")
    assert operator_store.status_code == 403
    assert api.events("acme", "bob") == 0
    assert store(api, api.carol, "Carol likes tea").status_code == 200
    # Deleting a memory makes room again.
    deleted = api.client.delete(f"/v1/events/{first['event_id']}", headers=api.alice)
    assert deleted.status_code == 200
    assert used(api, api.alice)["stored_records"] == 1
    assert store(api, api.alice, "I was born in Faro").status_code == 200


def test_stored_bytes_count_the_sources_content_whatever_the_route(limited_api: LimitedApi) -> None:
    api = limited_api
    api.set_limits("acme", stored_bytes=20)
    assert store(api, api.alice, "x" * 15).status_code == 200

    refused = store(api, api.alice, "y" * 6)
    batch = api.client.post(
        "/v1/ingest/fast",
        json={"items": [{"content": "ab"}, {"content": "cdefg"}]},
        headers=api.alice,
    )

    assert refused.status_code == 403
    assert refused.json()["limit"] == "stored_bytes"
    assert batch.status_code == 403
    assert api.events("acme", "alice") == 1
    assert used(api, api.alice)["stored_bytes"] == 15
    assert store(api, api.alice, "é" * 2).status_code == 200  # 4 bytes in UTF-8
    assert used(api, api.alice)["stored_bytes"] == 19


def test_a_write_that_fails_gives_its_reservation_back(limited_api: LimitedApi) -> None:
    api = limited_api
    api.set_limits("acme", stored_records=1)
    # Admitted, then refused by the engine: the value binding is not in the content.
    failed = store(
        api,
        api.alice,
        "I fly to Lyon",
        value_bindings=[
            {"reference": "c1", "kind": "city", "presentation": "Paris", "lookup": "P"}
        ],
    )
    assert failed.status_code == 422
    assert used(api, api.alice)["stored_records"] == 0
    assert store(api, api.alice, "I fly to Lyon").status_code == 200


def test_retrievals_past_the_days_count_answer_429_until_the_next_utc_day(
    limited_api: LimitedApi,
) -> None:
    api = limited_api
    api.set_limits("acme", retrievals_per_day=1)
    store(api, api.alice, "I live in Lisbon")
    retrieve = {"query": "Where do I live?"}
    assert api.client.post("/v1/retrieve", json=retrieve, headers=api.alice).status_code == 200

    refused = api.client.post("/v1/retrieve", json=retrieve, headers=api.alice)

    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == str(12 * 3600)  # 11 h 59 min 59.5 s, rounded up
    body = refused.json()
    assert (body["error"], body["limit"], body["limit_value"], body["resets_at"]) == (
        "rate_limited",
        "retrievals_per_day",
        1,
        NEXT_DAY,
    )
    # Stores and reads are not retrievals; other tenants keep their own count.
    assert store(api, api.alice, "I work in Porto").status_code == 200
    assert api.client.post("/v1/retrieve", json=retrieve, headers=api.carol).status_code == 200
    api.clock.set(datetime(2026, 3, 2, tzinfo=UTC))
    assert api.client.post("/v1/retrieve", json=retrieve, headers=api.alice).status_code == 200


def test_the_limits_route_shows_each_limit_its_use_and_reset(limited_api: LimitedApi) -> None:
    api = limited_api
    api.set_limits("acme", requests_per_second=5, burst=20, stored_records=10, retrievals_per_day=9)
    store(api, api.alice, "I live in Lisbon")
    api.client.post("/v1/retrieve", json={"query": "Where?"}, headers=api.alice)

    report = api.client.get("/v1/limits", headers=api.operator).json()

    assert report["tenant_id"] == "acme"
    assert (report["overridden"], report["burst"]) == (True, 20)
    by_name = {usage["limit"]: usage for usage in report["limits"]}
    assert by_name["requests_per_second"] == {
        "limit": "requests_per_second",
        "limit_value": 5,
        "used": 2,  # the store and the retrieval; reading the limits is not counted
        "window_seconds": 4.0,
        "resets_at": WINDOW_END,
    }
    assert by_name["stored_records"]["used"] == 1
    assert by_name["stored_records"]["limit_value"] == 10
    assert by_name["stored_bytes"] == {
        "limit": "stored_bytes",
        "limit_value": None,
        "used": len("I live in Lisbon"),
        "window_seconds": None,
        "resets_at": None,
    }
    assert (by_name["retrievals_per_day"]["used"], by_name["retrievals_per_day"]["resets_at"]) == (
        1,
        NEXT_DAY,
    )
    # An owner key reads the same; another tenant sees its own defaults and nothing of acme's.
    assert api.client.get("/v1/limits", headers=api.alice).json() == report
    other = api.client.get("/v1/limits", headers=api.carol).json()
    assert (other["tenant_id"], other["overridden"]) == ("globex", False)
    assert {u["limit"]: u["used"] for u in other["limits"]}["stored_records"] == 0


def test_mcp_tools_are_admitted_too_and_their_errors_name_the_code(
    limited_api: LimitedApi,
) -> None:
    api = limited_api
    api.set_limits("acme", stored_records=0)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "memory_store", "arguments": {"content": "I live in Lisbon"}},
    }

    answer = api.client.post("/mcp", json=call, headers={**api.alice, **MCP_HEADERS})

    result = answer.json()["result"]
    assert result["isError"] is True
    error = result["structuredContent"]["error"]
    assert error["code"] == "quota_exceeded"
    assert (error["status"], error["limit"], error["limit_value"]) == (403, "stored_records", 0)
    assert api.events("acme", "alice") == 0


def test_limits_out_of_range_are_refused_by_the_model() -> None:
    import pytest
    from pydantic import ValidationError

    for bad in (
        {"requests_per_second": 0},
        {"requests_per_second": -1},
        {"requests_per_second": 10**6},
        {"burst": 0},
        {"stored_records": -1},
        {"stored_bytes": 10**20},
        {"retrievals_per_day": -5},
    ):
        with pytest.raises(ValidationError):
            TenantLimits.model_validate(bad)
    # Zero is a real limit for counts (a suspended tenant), not "unlimited".
    assert TenantLimits(stored_records=0, retrievals_per_day=0).stored_records == 0

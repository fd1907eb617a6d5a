"""GET /v1/usage on every backend: operator keys only, the key's own tenant only, sums that
count a retried write once, a user filter, and the same report through the client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prme.client import MemoryClient
from prme.model.enums import CredentialRole
from prme.settings import Settings
from tests.harness.http import Api, bearer

KEY = "2f1e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b"


def totals(response: Any) -> dict[str, tuple[int, dict[str, int]]]:
    assert response.status_code == 200, response.text
    return {t["kind"]: (t["operations"], t["units"]) for t in response.json()["totals"]}


def test_operators_read_their_tenants_usage_and_owner_keys_are_refused(api: Api) -> None:
    c = api.client
    for _ in range(2):  # a retry after a lost answer: the same Idempotency-Key
        stored = c.post(
            "/v1/store",
            json={"content": "Alice keeps bees"},
            headers={**api.alice, "Idempotency-Key": KEY},
        )
        assert stored.status_code == 200, stored.text
    c.post("/v1/store", json={"content": "Bob plays chess"}, headers=api.bob)
    retrieved = c.post("/v1/retrieve", json={"query": "bees"}, headers=api.alice).json()
    c.post("/v1/store", json={"content": "Another tenant's secret"}, headers=api.other_tenant)
    globex_operator = bearer(
        api.credentials.create(
            tenant_id="globex", owner_id=None, role=CredentialRole.OPERATOR
        ).secret
    )

    for refused in (
        c.get("/v1/usage", headers=api.alice),
        c.get("/v1/usage", params={"user_id": "alice"}, headers=api.alice),
    ):
        assert refused.status_code == 403
        assert refused.json()["error"] == "permission_denied"

    tenant = totals(c.get("/v1/usage", headers=api.operator))
    assert tenant["store"][0] == 2
    assert tenant["store"][1]["bytes_in"] == len("Alice keeps bees") + len("Bob plays chess")
    assert tenant["retrieve"] == (
        1,
        {
            "records": len(retrieved["results"]),
            "tokens": retrieved["metrics"]["tokens_used"],
            "bytes_in": 0,
            "bytes_out": len(retrieved["bundle"]["context"].encode()),
            "embeddings": 1,
            "extractor_calls": 0,
        },
    )
    bob = totals(c.get("/v1/usage", params={"user_id": "bob"}, headers=api.operator))
    assert bob == {
        "store": (1, {**tenant["store"][1], "records": 1, "bytes_in": 15, "embeddings": 1})
    }
    # Another tenant's operator sees its own tenant's usage and nothing of this one.
    other = c.get("/v1/usage", headers=globex_operator)
    assert totals(other) == {"store": (1, {**bob["store"][1], "bytes_in": 23})}
    assert "bees" not in other.text


def test_a_report_takes_a_range_and_a_period_and_refuses_an_empty_range(api: Api) -> None:
    c = api.client
    c.post("/v1/store", json={"content": "Alice keeps bees"}, headers=api.alice)
    monthly = c.get("/v1/usage", params={"period": "month"}, headers=api.operator)
    assert monthly.status_code == 200, monthly.text
    (row,) = monthly.json()["totals"]
    assert (len(row["period"]), row["kind"], row["operations"]) == (7, "store", 1)
    empty = c.get(
        "/v1/usage",
        params={"start": "2026-12-02T00:00:00Z", "end": "2026-12-01T00:00:00Z"},
        headers=api.operator,
    )
    assert empty.status_code == 422
    naive = c.get("/v1/usage", params={"start": "2026-12-01T00:00:00"}, headers=api.operator)
    assert naive.status_code == 422


def test_the_client_reads_the_usage_of_its_directory(tmp_path: Path) -> None:
    with MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing")) as client:
        client.store("Carol keeps bees", user_id="carol")
        client.store("Dave likes chess", user_id="dave")
        report = client.get_usage(user_id="carol")
        assert [(t.kind, t.operations, t.units.bytes_in) for t in report.totals] == [
            ("store", 1, len("Carol keeps bees"))
        ]
        assert sum(t.operations for t in client.get_usage().totals) == 2

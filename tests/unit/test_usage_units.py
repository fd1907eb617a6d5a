"""A usage entry stays one small DynamoDB item: one write unit per metered operation, whatever
the kind, even for the longest tenant and owner ids."""

from __future__ import annotations

from benchmarks.dynamodb_units import item_size, write_units
from benchmarks.usage_units import measure
from prme.backends.aws.dynamodb_usage import DynamoDbUsageLog
from prme.model.records import OwnerKey
from prme.model.usage import UsageEntry, UsageUnits, entry_time_of


def test_every_kind_of_entry_is_one_write_unit() -> None:
    rows = measure()
    assert {row["kind"] for row in rows} >= {"store", "retrieve", "materialize", "extract"}
    assert {row["write_units"] for row in rows} == {1}


def test_the_item_keeps_no_user_id_and_spreads_by_day_and_shard() -> None:
    owner = OwnerKey(tenant_id="acme#prod", owner_id="alice@example.com")
    at = entry_time_of("2026-12-02T10:00:00.000000Z")
    items = [
        DynamoDbUsageLog(None, "t", shards=2).item_of(
            UsageEntry.of(
                "store", owner, f"key-{n}", at=at, expires_at=at, units=UsageUnits(records=1)
            )
        )
        for n in range(20)
    ]
    assert all("alice" not in str(item) for item in items)
    assert {item["pk"]["S"] for item in items} == {
        "USAGE#acme%23prod#2026-12-02#0",
        "USAGE#acme%23prod#2026-12-02#1",
    }
    assert max(write_units(item_size(item)) for item in items) == 1

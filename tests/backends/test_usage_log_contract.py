"""The `UsageLog` port on every adapter (dictionary fake, SQLite, DynamoDB on the local AWS):
entries are kept once per id, summed per period and kind, per tenant and optionally per owner."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from prme.backends.aws.dynamodb_usage import DynamoDbUsageLog
from prme.backends.embedded.sqlite_usage import SqliteUsageLog
from prme.backends.memory import InMemoryUsageLog
from prme.model.records import OwnerKey
from prme.model.usage import UsageEntry, UsageQuery, UsageTotal, UsageUnits
from prme.ports import UsageLog

ALICE = OwnerKey(tenant_id="t1", owner_id="alice")
BOB = OwnerKey(tenant_id="t1", owner_id="bob")
OTHER_TENANT = OwnerKey(tenant_id="t2", owner_id="alice")
DAY = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite", "dynamodb"])
def usage_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[UsageLog]:
    if request.param == "memory":
        yield InMemoryUsageLog()
    elif request.param == "sqlite":
        log = SqliteUsageLog(tmp_path / "usage.sqlite3")
        yield log
        log.close()
    else:
        client, table = request.getfixturevalue("dynamodb_table")
        yield DynamoDbUsageLog(client, table)


def entry(kind: str, owner: OwnerKey, subject: str, at: datetime = DAY, **units: int) -> UsageEntry:
    return UsageEntry.of(
        kind,
        owner,
        subject,
        at=at,
        expires_at=at + timedelta(days=400),
        units=UsageUnits(**units),
    )


def whole(period: Any = "day", owner: OwnerKey | None = None) -> UsageQuery:
    from prme.model.usage import owner_usage_reference

    # A few days: DynamoDB sums a range with one query per day and shard.
    return UsageQuery(
        start=datetime(2026, 11, 29, tzinfo=UTC),
        end=datetime(2026, 12, 2, tzinfo=UTC),
        period=period,
        owner_ref=None if owner is None else owner_usage_reference(owner.tenant_id, owner.owner_id),
    )


def test_entries_are_summed_per_day_and_kind(usage_log: UsageLog) -> None:
    usage_log.record(
        [
            entry("store", ALICE, "k1", records=1, bytes_in=10, embeddings=1),
            entry("store", BOB, "k2", records=1, bytes_in=5),
            entry("retrieve", ALICE, "r1", records=3, tokens=40, bytes_out=200, embeddings=1),
            entry("store", ALICE, "k3", DAY + timedelta(days=1), records=1, bytes_in=7),
        ]
    )
    assert usage_log.totals("t1", whole()) == [
        UsageTotal(
            period="2026-11-30",
            kind="retrieve",
            operations=1,
            units=UsageUnits(records=3, tokens=40, bytes_out=200, embeddings=1),
        ),
        UsageTotal(
            period="2026-11-30",
            kind="store",
            operations=2,
            units=UsageUnits(records=2, bytes_in=15, embeddings=1),
        ),
        UsageTotal(
            period="2026-12-01",
            kind="store",
            operations=1,
            units=UsageUnits(records=1, bytes_in=7),
        ),
    ]


def test_an_entry_recorded_again_counts_once_and_keeps_its_first_units(
    usage_log: UsageLog,
) -> None:
    usage_log.record([entry("materialize", ALICE, "w1", records=1, embeddings=1)])
    usage_log.record([entry("materialize", ALICE, "w1", records=1, embeddings=1)])
    # A work item processed again finds its node built: the same entry id with other units.
    usage_log.record([entry("materialize", ALICE, "w1", DAY + timedelta(minutes=5), embeddings=1)])
    assert usage_log.totals("t1", whole()) == [
        UsageTotal(
            period="2026-11-30",
            kind="materialize",
            operations=1,
            units=UsageUnits(records=1, embeddings=1),
        )
    ]


def test_tenants_are_apart_and_an_owner_filter_sums_one_owner(usage_log: UsageLog) -> None:
    usage_log.record(
        [
            entry("store", ALICE, "same-key", records=1),
            entry("store", OTHER_TENANT, "same-key", records=1, bytes_in=99),
            entry("store", BOB, "b", records=1, bytes_in=3),
        ]
    )
    # Owners pick their Idempotency-Keys on their own: the same key is another entry.
    usage_log.record([entry("store", BOB, "same-key", records=1, bytes_in=4)])
    (other,) = usage_log.totals("t2", whole())
    assert (other.operations, other.units.bytes_in) == (1, 99)
    (bob,) = usage_log.totals("t1", whole(owner=BOB))
    assert (bob.operations, bob.units.bytes_in) == (2, 7)
    (tenant,) = usage_log.totals("t1", whole())
    assert (tenant.operations, tenant.units.bytes_in) == (3, 7)
    assert usage_log.totals("t3", whole()) == []


def test_a_month_sums_its_days_and_the_range_is_start_inclusive_end_exclusive(
    usage_log: UsageLog,
) -> None:
    usage_log.record(
        [
            entry("retrieve", ALICE, "r1", datetime(2026, 11, 29, tzinfo=UTC), tokens=1),
            entry("retrieve", ALICE, "r2", datetime(2026, 11, 30, 23, 59, tzinfo=UTC), tokens=2),
            entry("retrieve", ALICE, "r3", datetime(2026, 12, 1, tzinfo=UTC), tokens=4),
        ]
    )
    assert [
        (t.period, t.operations, t.units.tokens) for t in usage_log.totals("t1", whole("month"))
    ] == [
        ("2026-11", 2, 3),
        ("2026-12", 1, 4),
    ]
    november = UsageQuery(
        start=datetime(2026, 11, 29, tzinfo=UTC),
        end=datetime(2026, 12, 1, tzinfo=UTC),
        period="month",
    )
    assert [(t.period, t.units.tokens) for t in usage_log.totals("t1", november)] == [
        ("2026-11", 3)
    ]
    later = UsageQuery(
        start=datetime(2026, 11, 29, 0, 0, 1, tzinfo=UTC),
        end=datetime(2026, 11, 30, 23, 59, tzinfo=UTC),
    )
    assert usage_log.totals("t1", later) == []

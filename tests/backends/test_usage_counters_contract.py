"""The usage counters and tenant limits ports: one contract suite over the fake, SQLite and
DynamoDB (tests/backends holds the suites that run every adapter of a port)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import pytest

from prme.backends.memory.limit_counters import MemoryTenantLimits, MemoryUsageCounters
from prme.model.limits import CounterKey, TenantLimits
from prme.ports import TenantLimitsStore, UsageCounters

EXPIRY = datetime(2030, 1, 1, tzinfo=UTC)


class LimitsPorts(UsageCounters, TenantLimitsStore, Protocol):
    pass


class _FakePorts(MemoryUsageCounters, MemoryTenantLimits):
    def __init__(self) -> None:
        MemoryUsageCounters.__init__(self)
        MemoryTenantLimits.__init__(self)


@pytest.fixture(params=["memory", "embedded", "aws"])
def ports(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LimitsPorts]:
    if request.param == "memory":
        yield _FakePorts()
    elif request.param == "embedded":
        from prme.backends.embedded.sqlite_limits import SqliteLimits

        store = SqliteLimits(tmp_path / "limits.sqlite3")
        yield store
        store.close()
    else:
        from prme.backends.aws.dynamodb_limits import DynamoDbLimits

        client, table = request.getfixturevalue("dynamodb_table")
        yield DynamoDbLimits(client, table)
        client.delete_table(TableName=table)


def key(tenant: str = "acme", name: str = "requests:1") -> CounterKey:
    return CounterKey(tenant_id=tenant, name=name)


def test_a_counter_starts_at_zero_and_adds(ports: LimitsPorts) -> None:
    assert ports.add_within(key(), {"count": 1}, {"count": 3}, expires_at=EXPIRY) == {"count": 1}
    assert ports.add_within(key(), {"count": 2}, {"count": 3}, expires_at=EXPIRY) == {"count": 3}
    assert ports.read_counters([key()]) == {key(): {"count": 3}}


def test_an_add_that_would_pass_its_cap_is_refused_and_changes_nothing(
    ports: LimitsPorts,
) -> None:
    ports.add_within(key(), {"count": 2}, {"count": 3}, expires_at=EXPIRY)
    assert ports.add_within(key(), {"count": 2}, {"count": 3}, expires_at=EXPIRY) is None
    # Larger than the cap from an empty counter: refused too.
    assert ports.add_within(key(name="other"), {"count": 4}, {"count": 3}, expires_at=None) is None
    assert ports.read_counters([key(), key(name="other")]) == {key(): {"count": 2}}


def test_fields_of_one_counter_are_added_together_or_not_at_all(ports: LimitsPorts) -> None:
    stored = key(name="stored")
    caps = {"records": 10, "bytes": 100}
    assert ports.add_within(stored, {"records": 1, "bytes": 60}, caps, expires_at=None) == {
        "records": 1,
        "bytes": 60,
    }
    # Records would fit, bytes would not: neither is added.
    assert ports.add_within(stored, {"records": 1, "bytes": 50}, caps, expires_at=None) is None
    # A cap on one field only; the other grows freely.
    assert ports.add_within(stored, {"records": 5, "bytes": 500}, {"records": 10}, expires_at=None)
    assert ports.read_counters([stored]) == {stored: {"records": 6, "bytes": 560}}


def test_negative_adds_take_away_and_need_no_cap(ports: LimitsPorts) -> None:
    stored = key(name="stored")
    ports.add_within(stored, {"records": 3}, {}, expires_at=None)
    assert ports.add_within(stored, {"records": -2}, {}, expires_at=None) == {"records": 1}
    assert ports.add_within(key(name="fresh"), {"records": -1}, {}, expires_at=None) == {
        "records": -1
    }


def test_counters_are_kept_apart_by_tenant_and_name_whatever_they_contain(
    ports: LimitsPorts,
) -> None:
    one, two = key("a#b", "c"), key("a", "b#c")
    ports.add_within(one, {"count": 1}, {}, expires_at=None)
    ports.add_within(two, {"count": 5}, {}, expires_at=None)
    missing = key("nobody", "c")
    assert ports.read_counters([one, two, missing]) == {one: {"count": 1}, two: {"count": 5}}


def test_a_tenants_limits_are_put_read_and_removed(ports: LimitsPorts) -> None:
    assert ports.get_tenant_limits("acme") is None
    limits = TenantLimits(requests_per_second=5, burst=10, stored_records=0)
    ports.put_tenant_limits("acme", limits)
    ports.put_tenant_limits("acme#x", TenantLimits(retrievals_per_day=7))
    assert ports.get_tenant_limits("acme") == limits
    assert ports.delete_tenant_limits("acme") is True
    assert ports.delete_tenant_limits("acme") is False
    assert ports.get_tenant_limits("acme") is None
    assert ports.get_tenant_limits("acme#x") == TenantLimits(retrievals_per_day=7)


def test_concurrent_adds_never_pass_the_cap(ports: LimitsPorts) -> None:
    """Many callers at once (as many Lambda instances are): exactly `cap` adds succeed."""
    cap, callers, each = 25, 8, 10
    counter = key(name="requests:race")

    def hammer(_: int) -> int:
        admitted = 0
        for _ in range(each):
            if ports.add_within(counter, {"count": 1}, {"count": cap}, expires_at=EXPIRY):
                admitted += 1
        return admitted

    with ThreadPoolExecutor(max_workers=callers) as pool:
        admitted = sum(pool.map(hammer, range(callers)))
    assert admitted == cap
    assert ports.read_counters([counter]) == {counter: {"count": cap}}


def test_the_dynamodb_counter_sets_the_tables_ttl_on_windows(
    request: pytest.FixtureRequest,
) -> None:
    """A window's counter carries the table's TTL attribute, so DynamoDB removes it."""
    from prme.backends.aws import resources
    from prme.backends.aws.dynamodb_limits import DynamoDbLimits, counter_key

    client, table = request.getfixturevalue("dynamodb_table")
    DynamoDbLimits(client, table).add_within(key(), {"count": 1}, {}, expires_at=EXPIRY)
    item: dict[str, Any] = client.get_item(TableName=table, Key=counter_key(key()))["Item"]
    assert item[resources.TTL_ATTRIBUTE] == {"N": str(int(EXPIRY.timestamp()))}
    client.delete_table(TableName=table)


def test_a_counter_of_another_family_or_window_length_outlives_a_new_days_counter(
    ports: LimitsPorts,
) -> None:
    """Counters expire by their own key: adding to a later day's counter leaves a window
    counter that expires sooner (and the same day's other counters) in place."""
    window = key(name="requests:4000:1")
    ports.add_within(window, {"count": 1}, {}, expires_at=datetime(2026, 3, 1, tzinfo=UTC))
    ports.add_within(
        key(name="retrievals:2026-03-09"),
        {"count": 1},
        {},
        expires_at=datetime(2026, 3, 11, tzinfo=UTC),
    )
    assert ports.read_counters([window]) == {window: {"count": 1}}

"""LimitGate on the port fakes and a settable clock: the request window, the day's retrievals,
stored reservations and releases, the limits cache, and what each input stores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from prme.backends.clock import ManualClock
from prme.backends.memory.limit_counters import MemoryTenantLimits, MemoryUsageCounters
from prme.engine.limits import LIMITS_CACHE, LimitGate
from prme.errors import QuotaExceededError, RateLimitedError
from prme.model.inputs import FastIngestInput, FastIngestItem, IngestInput, StoreInput
from prme.model.limits import Limited, LimitName, StoredAmount, TenantLimits, stored_amount
from prme.model.portability import ImportBatch

START = datetime(2026, 3, 1, 12, 0, 0, 500_000, tzinfo=UTC)


def gate(defaults: TenantLimits | None = None) -> tuple[LimitGate, ManualClock]:
    clock = ManualClock(START)
    return (
        LimitGate(MemoryTenantLimits(), MemoryUsageCounters(), defaults or TenantLimits(), clock),
        clock,
    )


def used(g: LimitGate, tenant: str, name: LimitName) -> int | None:
    return next(u.used for u in g.report(tenant).limits if u.limit is name)


def test_a_window_admits_its_burst_then_refuses_until_it_ends() -> None:
    g, clock = gate(TenantLimits(requests_per_second=2))  # burst 4 over a 2 s window
    for _ in range(4):
        g.admit("acme", Limited.REQUEST)
    with pytest.raises(RateLimitedError) as refused:
        g.admit("acme", Limited.REQUEST)
    assert refused.value.resets_at == datetime(2026, 3, 1, 12, 0, 2, tzinfo=UTC)
    assert refused.value.retry_after_s == 2  # 1.5 s, rounded up
    g.admit("globex", Limited.REQUEST)  # another tenant's window
    clock.set(datetime(2026, 3, 1, 12, 0, 2, tzinfo=UTC))
    g.admit("acme", Limited.REQUEST)
    assert used(g, "acme", LimitName.REQUESTS_PER_SECOND) == 1


def test_retrievals_count_per_utc_day_and_other_uses_do_not_take_them() -> None:
    g, clock = gate(TenantLimits(retrievals_per_day=2))
    g.admit("acme", Limited.STORE, StoredAmount(records=1, bytes=3))
    g.admit("acme", Limited.REQUEST)
    g.admit("acme", Limited.RETRIEVAL)
    g.admit("acme", Limited.RETRIEVAL)
    with pytest.raises(RateLimitedError) as refused:
        g.admit("acme", Limited.RETRIEVAL)
    assert refused.value.limit == "retrievals_per_day"
    assert refused.value.resets_at == datetime(2026, 3, 2, tzinfo=UTC)
    clock.set(datetime(2026, 3, 2, 0, 0, 0, tzinfo=UTC))
    g.admit("acme", Limited.RETRIEVAL)
    assert used(g, "acme", LimitName.RETRIEVALS_PER_DAY) == 1


def test_stored_amounts_are_reserved_whole_and_released() -> None:
    g, _ = gate(TenantLimits(stored_records=3, stored_bytes=100))
    g.admit("acme", Limited.STORE, StoredAmount(records=2, bytes=60))
    with pytest.raises(QuotaExceededError) as over_bytes:
        g.admit("acme", Limited.STORE, StoredAmount(records=1, bytes=41))
    assert (over_bytes.value.limit, over_bytes.value.limit_value) == ("stored_bytes", 100)
    with pytest.raises(QuotaExceededError) as over_records:
        g.admit("acme", Limited.STORE, StoredAmount(records=2, bytes=1))
    assert over_records.value.limit == "stored_records"
    # Neither refusal reserved anything; a release makes room.
    assert used(g, "acme", LimitName.STORED_RECORDS) == 2
    g.release("acme", StoredAmount(records=1, bytes=30))
    g.admit("acme", Limited.STORE, StoredAmount(records=2, bytes=70))
    assert (used(g, "acme", LimitName.STORED_RECORDS), used(g, "acme", LimitName.STORED_BYTES)) == (
        3,
        100,
    )


def test_exempt_calls_count_nowhere_and_unlimited_rates_write_no_counter() -> None:
    g, _ = gate(TenantLimits(requests_per_second=1, burst=1))
    g.admit("acme", Limited.EXEMPT)
    g.admit("acme", Limited.EXEMPT)
    g.admit("acme", Limited.REQUEST)
    unlimited, _ = gate()
    unlimited.admit("acme", Limited.REQUEST)
    assert used(unlimited, "acme", LimitName.REQUESTS_PER_SECOND) is None


def test_a_providers_change_applies_once_the_cache_expires() -> None:
    store, counters = MemoryTenantLimits(), MemoryUsageCounters()
    clock = ManualClock(START)
    serving = LimitGate(store, counters, TenantLimits(), clock)
    provider = LimitGate(store, counters, TenantLimits(), clock)
    assert serving.limits_of("acme") == (TenantLimits(), False)
    provider.set_limits("acme", TenantLimits(stored_records=0))
    assert serving.limits_of("acme") == (TenantLimits(), False)  # still cached
    clock.advance(seconds=LIMITS_CACHE.total_seconds())
    assert serving.limits_of("acme") == (TenantLimits(stored_records=0), True)


def test_what_each_input_stores() -> None:
    assert stored_amount(StoreInput(content="héllo")) == StoredAmount(records=1, bytes=6)
    assert stored_amount(IngestInput(content="abc")) == StoredAmount(records=1, bytes=3)
    batch = FastIngestInput(items=[FastIngestItem(content="ab"), FastIngestItem(content="cde")])
    assert stored_amount(batch) == StoredAmount(records=2, bytes=5)
    records = [
        {"kind": "event", "content": "abcd"},
        {"kind": "node", "content": "not a source"},
        {"kind": "event", "content": "ef"},
    ]
    assert stored_amount(ImportBatch(version=1, records=records)) == StoredAmount(
        records=2, bytes=6
    )
    assert stored_amount("a query") is None
    assert StoredAmount(records=4, bytes=100).scaled(1) == StoredAmount(records=1, bytes=25)

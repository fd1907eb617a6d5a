"""Red-team finding on LimitGate: limits the model accepts but the gate cannot compute."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from prme.backends.clock import ManualClock
from prme.backends.memory.limit_counters import MemoryTenantLimits, MemoryUsageCounters
from prme.engine.limits import LimitGate
from prme.model.limits import Limited, TenantLimits


@pytest.mark.xfail(
    strict=True,
    reason="redteam: TenantLimits admits a burst up to 10**15, but a window of burst / rate "
    "seconds past year 9999 raises OverflowError on every request of the tenant (a 500)",
)
def test_a_burst_the_model_accepts_never_crashes_admission() -> None:
    counters = MemoryUsageCounters()
    gate = LimitGate(
        MemoryTenantLimits(),
        counters,
        TenantLimits(),
        ManualClock(datetime(2026, 3, 1, tzinfo=UTC)),
    )
    # A careless provider: a huge burst over a rate of one a second, values the model allows.
    gate.set_limits("acme", TenantLimits(requests_per_second=1, burst=10**12))

    gate.admit("acme", Limited.REQUEST)

    report = gate.report("acme")
    assert report.burst == 10**12

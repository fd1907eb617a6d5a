"""Red-team finding on LimitGate: limits the model accepted but the gate could not compute (a
huge burst over a small rate made a window ending past year 9999, a 500 on every request)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from prme.backends.clock import ManualClock
from prme.backends.memory.limit_counters import MemoryTenantLimits, MemoryUsageCounters
from prme.engine.limits import LimitGate
from prme.model.limits import MAX_WINDOW_SECONDS, Limited, TenantLimits


def test_a_window_longer_than_a_day_is_refused_when_the_limits_are_set() -> None:
    with pytest.raises(ValidationError, match="window"):
        TenantLimits(requests_per_second=1, burst=10**12)


def test_the_longest_window_allowed_still_admits() -> None:
    gate = LimitGate(
        MemoryTenantLimits(),
        MemoryUsageCounters(),
        TenantLimits(),
        ManualClock(datetime(9999, 12, 30, tzinfo=UTC)),
    )
    gate.set_limits("acme", TenantLimits(requests_per_second=1, burst=MAX_WINDOW_SECONDS))

    gate.admit("acme", Limited.REQUEST)

    assert gate.report("acme").burst == MAX_WINDOW_SECONDS

"""Per-tenant limits: admitting a request before any work (rate, stored quota, retrievals per
day), keeping the stored counts, and the report a tenant reads.

The request rate is a fixed window per tenant: a window of burst / rate seconds admits `burst`
requests, counted by one conditional add on a shared counter (one small write per request,
one DynamoDB UpdateItem). A token bucket needs min() and multiplication inside the update,
which a DynamoDB update expression lacks, so it would take a read and a write, or two writes
when idle. The window's cost: at a window's edge a tenant can send up to two bursts close
together; over any window the average stays at the rate.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from prme.errors import QuotaExceededError, RateLimitedError
from prme.model.limits import (
    CounterKey,
    Limited,
    LimitName,
    LimitsReport,
    LimitUsage,
    StoredAmount,
    TenantLimits,
)
from prme.ports import Clock, TenantLimitsStore, UsageCounters

STORED = "stored"
RECORDS, BYTES, COUNT = "records", "bytes", "count"
# How long a process keeps a tenant's limits before reading them again: a provider's change
# applies within this time, and a request costs no read of the limits record.
LIMITS_CACHE = timedelta(seconds=30)
# Counters outlive their window a little, so the report can still read the one just ended.
_WINDOW_KEPT = timedelta(minutes=5)
_DAY_KEPT = timedelta(days=2)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _seconds_until(later: datetime, now: datetime) -> int:
    return max(1, math.ceil((later - now).total_seconds()))


@dataclass(frozen=True)
class _Window:
    key: CounterKey
    ends_at: datetime


# How long a released deletion is remembered: past any retry of the delete that freed it.
_RELEASE_KEPT = timedelta(days=30)


class LimitGate:
    """The one admission check of every counted operation, on any backend."""

    def __init__(
        self,
        overrides: TenantLimitsStore,
        counters: UsageCounters,
        defaults: TenantLimits,
        clock: Clock,
    ) -> None:
        self._overrides = overrides
        self._counters = counters
        self._defaults = defaults
        self._clock = clock
        self._cache: dict[str, tuple[datetime, TenantLimits, bool]] = {}
        self._lock = threading.Lock()

    # -- the limits of a tenant --

    def limits_of(self, tenant_id: str) -> tuple[TenantLimits, bool]:
        """The tenant's limits and whether the provider set them (else the defaults)."""
        now = self._clock.now()
        with self._lock:
            cached = self._cache.get(tenant_id)
        if cached is not None and now < cached[0]:
            return cached[1], cached[2]
        own = self._overrides.get_tenant_limits(tenant_id)
        limits, overridden = (own, True) if own is not None else (self._defaults, False)
        with self._lock:
            self._cache[tenant_id] = (now + LIMITS_CACHE, limits, overridden)
        return limits, overridden

    def set_limits(self, tenant_id: str, limits: TenantLimits) -> None:
        """The provider's limits for a tenant, replacing the defaults (provider CLI only)."""
        self._overrides.put_tenant_limits(tenant_id, limits)
        with self._lock:
            self._cache.pop(tenant_id, None)

    def clear_limits(self, tenant_id: str) -> bool:
        removed = self._overrides.delete_tenant_limits(tenant_id)
        with self._lock:
            self._cache.pop(tenant_id, None)
        return removed

    # -- admission --

    def admit(self, tenant_id: str, use: Limited, stored: StoredAmount | None = None) -> None:
        """Count one request of `use` against the tenant's limits, or refuse it: raises
        RateLimitedError (429) or QuotaExceededError (403) and nothing is counted for the
        refused part. A STORE's amount is added to the stored counts here, before its write:
        `release` gives it back when the write does not happen."""
        if use is Limited.EXEMPT:
            return
        limits, _ = self.limits_of(tenant_id)
        now = self._clock.now()
        self._take_request(tenant_id, limits, now)
        if use is Limited.RETRIEVAL:
            self._take_retrieval(tenant_id, limits, now)
        elif use is Limited.STORE and stored is not None:
            self._take_stored(tenant_id, limits, stored)

    def release(self, tenant_id: str, amount: StoredAmount, *, once: str | None = None) -> None:
        """Take deleted (or never written) records and bytes off the stored counts.

        `once` names what freed them (a deletion's journal record): callers that answer the
        same deletion (concurrent or repeated deletes of one memory) release it only once."""
        if not (amount.records or amount.bytes):
            return
        if once is not None:
            marker = CounterKey(tenant_id=tenant_id, name=f"released:{once}")
            first = self._counters.add_within(
                marker, {COUNT: 1}, {COUNT: 1}, expires_at=self._clock.now() + _RELEASE_KEPT
            )
            if first is None:
                return
        if amount.records or amount.bytes:
            self._counters.add_within(
                CounterKey(tenant_id=tenant_id, name=STORED),
                {RECORDS: -amount.records, BYTES: -amount.bytes},
                {},
                expires_at=None,
            )

    def _window(self, tenant_id: str, limits: TenantLimits, now: datetime) -> _Window | None:
        seconds = limits.window_seconds
        if seconds is None:
            return None
        length_ms = max(1, round(seconds * 1000))
        elapsed_ms = int((now - _EPOCH).total_seconds() * 1000)
        index = elapsed_ms // length_ms
        # The length is in the name: a changed limit starts a fresh window, never a mixed one.
        key = CounterKey(tenant_id=tenant_id, name=f"requests:{length_ms}:{index}")
        return _Window(key, _EPOCH + timedelta(milliseconds=(index + 1) * length_ms))

    def _take_request(self, tenant_id: str, limits: TenantLimits, now: datetime) -> None:
        window = self._window(tenant_id, limits, now)
        if window is None or limits.window_requests is None:
            return
        taken = self._counters.add_within(
            window.key,
            {COUNT: 1},
            {COUNT: limits.window_requests},
            expires_at=window.ends_at + _WINDOW_KEPT,
        )
        if taken is None:
            raise RateLimitedError(
                f"More than {limits.window_requests} requests in "
                f"{limits.window_seconds:g} s for this tenant",
                limit=LimitName.REQUESTS_PER_SECOND.value,
                limit_value=limits.requests_per_second,
                resets_at=window.ends_at,
                retry_after_s=_seconds_until(window.ends_at, now),
            )

    @staticmethod
    def _day(tenant_id: str, now: datetime) -> tuple[CounterKey, datetime]:
        day = now.astimezone(UTC).date()
        midnight = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)
        return CounterKey(tenant_id=tenant_id, name=f"retrievals:{day.isoformat()}"), midnight

    def _take_retrieval(self, tenant_id: str, limits: TenantLimits, now: datetime) -> None:
        cap = limits.retrievals_per_day
        if cap is None:
            return
        key, midnight = self._day(tenant_id, now)
        taken = self._counters.add_within(
            key, {COUNT: 1}, {COUNT: cap}, expires_at=midnight + _DAY_KEPT
        )
        if taken is None:
            raise RateLimitedError(
                f"This tenant's {cap} retrievals of the UTC day are used",
                limit=LimitName.RETRIEVALS_PER_DAY.value,
                limit_value=cap,
                resets_at=midnight,
                retry_after_s=_seconds_until(midnight, now),
            )

    def _take_stored(self, tenant_id: str, limits: TenantLimits, stored: StoredAmount) -> None:
        caps = {
            field: cap
            for field, cap in ((RECORDS, limits.stored_records), (BYTES, limits.stored_bytes))
            if cap is not None
        }
        key = CounterKey(tenant_id=tenant_id, name=STORED)
        # Both in one item and one conditional add: one write, and never half a reservation.
        taken = self._counters.add_within(
            key, {RECORDS: stored.records, BYTES: stored.bytes}, caps, expires_at=None
        )
        if taken is not None:
            return
        current = self._counters.read_counters([key]).get(key, {})
        over = (
            LimitName.STORED_RECORDS
            if limits.stored_records is not None
            and current.get(RECORDS, 0) + stored.records > limits.stored_records
            else LimitName.STORED_BYTES
        )
        raise QuotaExceededError(
            f"This write would pass the tenant's {over.value} limit; delete memories or ask "
            "the service provider for a higher limit",
            limit=over.value,
            limit_value=limits.value_of(over),
        )

    # -- what a tenant sees --

    def report(self, tenant_id: str) -> LimitsReport:
        limits, overridden = self.limits_of(tenant_id)
        now = self._clock.now()
        window = self._window(tenant_id, limits, now)
        day_key, midnight = self._day(tenant_id, now)
        stored_key = CounterKey(tenant_id=tenant_id, name=STORED)
        keys = [stored_key, *([window.key] if window else [])]
        if limits.retrievals_per_day is not None:
            keys.append(day_key)
        counts = self._counters.read_counters(keys)
        stored = counts.get(stored_key, {})
        return LimitsReport(
            tenant_id=tenant_id,
            burst=limits.window_requests,
            overridden=overridden,
            limits=[
                LimitUsage(
                    limit=LimitName.REQUESTS_PER_SECOND,
                    limit_value=limits.requests_per_second,
                    used=counts.get(window.key, {}).get(COUNT, 0) if window else None,
                    window_seconds=limits.window_seconds,
                    resets_at=window.ends_at if window else None,
                ),
                LimitUsage(
                    limit=LimitName.STORED_RECORDS,
                    limit_value=limits.stored_records,
                    used=max(0, stored.get(RECORDS, 0)),
                    resets_at=None,
                ),
                LimitUsage(
                    limit=LimitName.STORED_BYTES,
                    limit_value=limits.stored_bytes,
                    used=max(0, stored.get(BYTES, 0)),
                    resets_at=None,
                ),
                LimitUsage(
                    limit=LimitName.RETRIEVALS_PER_DAY,
                    limit_value=limits.retrievals_per_day,
                    used=(
                        counts.get(day_key, {}).get(COUNT, 0)
                        if limits.retrievals_per_day is not None
                        else None
                    ),
                    resets_at=midnight if limits.retrievals_per_day is not None else None,
                ),
            ],
        )


def unlimited_report(tenant_id: str) -> LimitsReport:
    """The report of an engine built without limits (nothing is counted)."""
    return LimitsReport(
        tenant_id=tenant_id,
        burst=None,
        overridden=False,
        limits=[
            LimitUsage(limit=name, limit_value=None, used=None, resets_at=None)
            for name in LimitName
        ],
    )

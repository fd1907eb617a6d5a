"""Dictionary-backed fakes of the usage counters and tenant limits ports, for unit tests and as
the contract suite's reference."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from datetime import datetime

from prme.model.limits import CounterKey, TenantLimits


class MemoryUsageCounters:
    def __init__(self) -> None:
        self._values: dict[CounterKey, dict[str, int]] = {}
        self._lock = threading.Lock()

    def add_within(
        self,
        key: CounterKey,
        amounts: Mapping[str, int],
        caps: Mapping[str, int],
        *,
        expires_at: datetime | None,
    ) -> dict[str, int] | None:
        del expires_at  # a fake lives shorter than any window
        with self._lock:
            current = self._values.get(key, {})
            new = {field: current.get(field, 0) + amount for field, amount in amounts.items()}
            if any(new.get(field, current.get(field, 0)) > cap for field, cap in caps.items()):
                return None
            self._values[key] = {**current, **new}
            return new

    def read_counters(self, keys: Sequence[CounterKey]) -> dict[CounterKey, dict[str, int]]:
        with self._lock:
            return {key: dict(self._values[key]) for key in keys if key in self._values}


class MemoryTenantLimits:
    def __init__(self) -> None:
        self._limits: dict[str, TenantLimits] = {}

    def get_tenant_limits(self, tenant_id: str) -> TenantLimits | None:
        return self._limits.get(tenant_id)

    def put_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> None:
        self._limits[tenant_id] = limits

    def delete_tenant_limits(self, tenant_id: str) -> bool:
        return self._limits.pop(tenant_id, None) is not None

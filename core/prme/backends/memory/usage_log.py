"""`InMemoryUsageLog`: the usage log as a dictionary, the contract suite's reference."""

from __future__ import annotations

from collections.abc import Sequence

from prme.errors import StorageUnavailableError
from prme.model.usage import UsageEntry, UsageQuery, UsageTotal, sum_entries


class InMemoryUsageLog:
    """Implements `UsageLog`; `failing` makes every write raise, as a store that is down."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str, str], UsageEntry] = {}
        self.failing = False

    def record(self, entries: Sequence[UsageEntry]) -> None:
        if self.failing:
            raise StorageUnavailableError()
        for entry in entries:
            self.entries.setdefault((entry.tenant_id, entry.owner_ref, entry.entry_id), entry)

    def totals(self, tenant_id: str, query: UsageQuery) -> list[UsageTotal]:
        chosen = (
            entry
            for (tenant, _, _), entry in self.entries.items()
            if tenant == tenant_id
            and query.start <= entry.at < query.end
            and (query.owner_ref is None or entry.owner_ref == query.owner_ref)
        )
        return sum_entries(chosen, query.period)

"""Per-tenant CloudWatch metrics of metered usage, written beside each usage entry (EMF through
Powertools), and the count of entries the usage log could not save.

Every tenant adds one CloudWatch metric per name below (a metric is a name and its dimension
values), so the names are kept to two; docs/usage.md prices it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from prme.model.usage import UsageEntry, UsageQuery, UsageTotal
from prme.ports import UsageLog

TENANT_DIMENSION = "tenant"
TENANT_OPERATIONS_METRIC = "TenantOperations"
TENANT_TOKENS_METRIC = "TenantTokens"


class TenantMetricsUsageLog:
    """A `UsageLog` that also emits each batch's operations and context tokens per tenant,
    then saves it in `inner`; a failed save is counted through `not_recorded` and raised."""

    def __init__(self, inner: UsageLog, not_recorded: Callable[[int], None]) -> None:
        self._inner = inner
        self._not_recorded = not_recorded

    def record(self, entries: Sequence[UsageEntry]) -> None:
        # Emitted first: what happened is worth a metric even if the entry is lost.
        by_tenant: dict[str, list[UsageEntry]] = {}
        for entry in entries:
            by_tenant.setdefault(entry.tenant_id, []).append(entry)
        for tenant_id, owned in by_tenant.items():
            # Ephemeral: its dimension stays off the function's shared metrics.
            metrics = EphemeralMetrics()
            metrics.add_dimension(name=TENANT_DIMENSION, value=tenant_id)
            metrics.add_metric(
                name=TENANT_OPERATIONS_METRIC, unit=MetricUnit.Count, value=len(owned)
            )
            metrics.add_metric(
                name=TENANT_TOKENS_METRIC,
                unit=MetricUnit.Count,
                value=sum(entry.units.tokens for entry in owned),
            )
            metrics.flush_metrics()
        try:
            self._inner.record(entries)
        except Exception:
            self._not_recorded(len(entries))
            raise

    def totals(self, tenant_id: str, query: UsageQuery) -> list[UsageTotal]:
        return self._inner.totals(tenant_id, query)

"""Metering: the usage entry of each metered operation, recorded without ever failing it,
and a tenant's usage summed for its operator.

Entries are made where the units are known (the engine), by the call that did the work: a
write that committed (a replayed retry answers from the first commit and records nothing), a
retrieval, a deletion, a work item that finished. Each entry's id is deterministic, and the
usage log keeps an id once, so a race or a redelivery that does the same work again counts
once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from prme.engine.deps import EngineDeps
from prme.engine.retrieve import VECTOR_FAILURE
from prme.errors import InvalidRequestError
from prme.model.listings import MemoryDeletion
from prme.model.records import OwnerKey, WorkItem
from prme.model.usage import (
    UsageEntry,
    UsagePeriod,
    UsageQuery,
    UsageReport,
    UsageUnits,
    owner_usage_reference,
)
from prme.retrieval.results import RetrievalResponse

logger = logging.getLogger("prme.usage")

# The widest range one report sums: a year and a day (a leap year's month-by-month bill).
MAX_REPORT_DAYS = 366


def record_usage(deps: EngineDeps, entries: Sequence[UsageEntry]) -> None:
    """Save entries; a failure is logged (kinds and counts only) and never raised."""
    if deps.usage is None or not entries:
        return
    try:
        deps.usage.record(entries)
    # Any failure: the operation being metered has already happened, and its caller must get
    # its answer. The entry is lost (docs/usage.md: what that means for billing accuracy).
    except Exception as exc:
        logger.warning(
            "usage not recorded",
            extra={
                "usage_kinds": sorted({entry.kind for entry in entries}),
                "usage_entries": len(entries),
                "reason": type(exc).__name__,
            },
        )


def _entry(
    deps: EngineDeps,
    kind: str,
    owner: OwnerKey,
    subject: str,
    units: UsageUnits,
    *,
    at: datetime | None = None,
) -> UsageEntry:
    """`at`: a time the repeat of the same operation shares (a work item's creation, a
    deletion's record), so its entry lands in the same day, where the log finds it again."""
    moment = at or deps.clock.now()
    return UsageEntry.of(
        kind,
        owner,
        subject,
        at=moment,
        expires_at=moment + timedelta(days=deps.config.usage_retention_days),
        units=units,
    )


def meter_write(
    deps: EngineDeps,
    kind: str,
    owner: OwnerKey,
    subject: str,
    contents: Sequence[str],
    *,
    embeddings: int = 0,
) -> None:
    """A committed write of sources: `subject` is its Idempotency-Key, else its first event."""
    units = UsageUnits(
        records=len(contents),
        bytes_in=sum(len(content.encode("utf-8")) for content in contents),
        embeddings=embeddings,
    )
    record_usage(deps, [_entry(deps, kind, owner, subject, units)])


def meter_retrieval(deps: EngineDeps, owner: OwnerKey, response: RetrievalResponse) -> None:
    """A retrieval, under its request id: the results and context it returned."""
    units = UsageUnits(
        records=len(response.results),
        tokens=response.bundle.tokens_used,
        bytes_out=len(response.bundle.context.encode("utf-8")),
        embeddings=0 if VECTOR_FAILURE in response.metrics.backend_failures else 1,
    )
    record_usage(deps, [_entry(deps, "retrieve", owner, response.metrics.request_id, units)])


def meter_deletion(deps: EngineDeps, owner: OwnerKey, deletion: MemoryDeletion) -> None:
    """A deleted memory, under its event id (a repeated delete makes the same entry)."""
    units = UsageUnits(records=1 + len(deletion.deleted_node_ids))
    entry = _entry(deps, "delete_memory", owner, deletion.event_id, units, at=deletion.deleted_at)
    record_usage(deps, [entry])


def meter_work(deps: EngineDeps, kind: str, done: Sequence[tuple[WorkItem, UsageUnits]]) -> None:
    """Finished work items, each under its own id, at the item's creation."""
    record_usage(
        deps,
        [
            _entry(deps, kind, item.owner, item.id, units, at=item.created_at)
            for item, units in done
        ],
    )


def usage_report(
    deps: EngineDeps,
    tenant_id: str,
    *,
    user_id: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    period: UsagePeriod = "day",
) -> UsageReport:
    """A tenant's usage summed per period and kind; by default this UTC month, today included.
    InvalidRequestError when the range is empty or longer than MAX_REPORT_DAYS."""
    today = deps.clock.now().astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    end = end or today + timedelta(days=1)
    start = start or today.replace(day=1)
    try:
        # Summing reads the range in UTC: an offset can carry year 1 or 9999 out of range.
        start, end = start.astimezone(UTC), end.astimezone(UTC)
    except OverflowError:
        raise InvalidRequestError(
            "start and end must fall within the years 1 to 9999 in UTC", field=("start",)
        ) from None
    if start >= end:
        raise InvalidRequestError("start must be before end", field=("start",))
    if end - start > timedelta(days=MAX_REPORT_DAYS):
        raise InvalidRequestError(
            f"a usage report spans at most {MAX_REPORT_DAYS} days", field=("start",)
        )
    owner_ref = None if user_id is None else owner_usage_reference(tenant_id, user_id)
    query = UsageQuery(start=start, end=end, period=period, owner_ref=owner_ref)
    totals = [] if deps.usage is None else deps.usage.totals(tenant_id, query)
    return UsageReport(user_id=user_id, start=start, end=end, period=period, totals=totals)

"""The retry rule of derived work: how many attempts an item gets, which failures are final,
and which failed work a redelivered queue message revives."""

from __future__ import annotations

from datetime import datetime

from prme.model.enums import WorkFailure, WorkStatus
from prme.model.records import WorkItem

MAX_WORK_ATTEMPTS = 25
# Failures no retry can mend, of any kind of work: the source is gone or unreadable.
FINAL_FAILURES = frozenset(
    {WorkFailure.SOURCE_MISSING, WorkFailure.EXTRACTION_SOURCE_MISSING, WorkFailure.CORRUPT_RECORD}
)


def is_final(reason: str | None) -> bool:
    """True for a failure no retry can mend; `reason` may be a stored `last_error`."""
    return reason in FINAL_FAILURES


def after_failed_attempt(item: WorkItem, reason: WorkFailure, now: datetime) -> WorkItem:
    """The item once an attempt failed with `reason`: failed for good when no retry can mend
    it or its attempts ran out, else pending for the next pass or delivery."""
    final = is_final(reason) or item.attempts + 1 >= MAX_WORK_ATTEMPTS
    return item.attempt_failed(reason, now, final=final)


def revives_on_redelivery(item: WorkItem) -> bool:
    """A message naming failed work comes back only when an operator redrives its dead-letter
    queue (the last receive fails the item before SQS moves the message): work that failed
    because its attempts ran out starts afresh then; work that can never succeed stays failed."""
    return item.status is WorkStatus.FAILED and not is_final(item.last_error)

"""The work dispatcher: one table from work kind to handler, and the ways work reaches it
(queue messages, bounded processing passes, the sweeper of overdue work)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType

from prme.engine.deadlines import pass_budget_ms
from prme.engine.deps import EngineDeps
from prme.engine.extraction import run_extractions
from prme.engine.materialize import (
    WorkOutcome,
    fail_unworkable,
    materialize_targets,
    materialize_work,
    resolve_targets,
)
from prme.engine.work_refs import WorkRef
from prme.engine.work_retry import is_final, revives_on_redelivery
from prme.errors import PrmeError, WorkDeferredError
from prme.model.enums import WorkFailure, WorkFamily, WorkKind, WorkStatus
from prme.model.records import OwnerKey, WorkItem

# Runs one owner's pending items of the kinds it handles.
WorkHandler = Callable[[EngineDeps, OwnerKey, Sequence[WorkItem]], WorkOutcome]


@dataclass(frozen=True)
class ProcessingReport:
    processed: int
    pending: int
    failed: int


def _extract(deps: EngineDeps, owner: OwnerKey, items: Sequence[WorkItem]) -> WorkOutcome:
    """Each item alone: an extraction calls a model, and what it found is committed apart."""
    reasons = [run_extractions(deps, owner, [item]) for item in items]
    deferred = sum(1 for reason in reasons if reason is not None and not is_final(reason))
    processed = reasons.count(None)
    return WorkOutcome(
        processed=processed, failed=len(reasons) - processed - deferred, deferred=deferred
    )


def _left_to_maintenance(*_: object) -> WorkOutcome:
    """Alias scans are never queued: every maintenance pass lists and runs them itself."""
    return WorkOutcome(processed=0, failed=0, deferred=0)


# A batch runs its handlers in this order and stops at the first one deferred.
WORK_HANDLERS: Mapping[WorkKind, WorkHandler] = MappingProxyType(
    {
        WorkKind.EXTRACT: _extract,
        WorkKind.INDEX_NODE: materialize_work,
        WorkKind.MATERIALIZE_EVENT: materialize_work,
        WorkKind.ALIAS_SCAN: _left_to_maintenance,
    }
)


def _by_handler(items: Sequence[WorkItem]) -> list[tuple[WorkHandler, list[WorkItem]]]:
    """The items grouped by handler, in table order; kinds sharing a handler share a batch."""
    groups: dict[WorkHandler, list[WorkItem]] = {h: [] for h in WORK_HANDLERS.values()}
    for item in items:
        groups[WORK_HANDLERS[item.kind]].append(item)
    return [(handler, group) for handler, group in groups.items() if group]


def process_work_refs(deps: EngineDeps, refs: Sequence[WorkRef]) -> ProcessingReport:
    """Process the work items queue messages point at; done or unknown items are skipped.
    Raises WorkDeferredError when a dependency is down, so that the queue redelivers."""
    processed = failed = 0
    by_owner: dict[OwnerKey, set[tuple[str, str]]] = {}
    for ref in refs:
        by_owner.setdefault(ref.owner, set()).add((ref.event_id, ref.work_id))
    for owner, wanted in by_owner.items():
        named = [
            item
            for event_id in sorted({event_id for event_id, _ in wanted})
            for item in deps.ledger.list_event_work(owner, event_id)
            if (item.event_id, item.id) in wanted
        ]
        items = [_revived(deps, item) if revives_on_redelivery(item) else item for item in named]
        pending = [item for item in items if item.status is WorkStatus.PENDING]
        for handler, group in _by_handler(pending):
            outcome = handler(deps, owner, group)
            if outcome.deferred:
                # Items failed for good stay failed; redelivery retries the rest.
                raise WorkDeferredError()
            processed += outcome.processed
            failed += outcome.failed
    return ProcessingReport(processed=processed, pending=0, failed=failed)


def _revived(deps: EngineDeps, item: WorkItem) -> WorkItem:
    revived = item.revived(deps.clock.now())
    deps.ledger.save_work(revived)
    return revived


def fail_work(deps: EngineDeps, ref: WorkRef, reason: WorkFailure) -> bool:
    """Mark a work item failed (its retries are spent); True when a pending item changed."""
    for item in deps.ledger.list_event_work(ref.owner, ref.event_id):
        if item.id == ref.work_id and item.status is WorkStatus.PENDING:
            deps.ledger.save_work(item.failed(reason, deps.clock.now()))
            return True
    return False


# -- bounded passes over pending work (the process routes, the CLI, local runs) ---------------

# Says whether the pass has spent its time.
OutOfTime = Callable[[], bool]


def process_pending_work(
    deps: EngineDeps, owner: OwnerKey | None, *, budget_ms: int | None = None
) -> ProcessingReport:
    """One bounded pass over pending materialization (one owner, or every owner when `owner`
    is None), owner by owner: nodes are read per partition."""
    return _bounded_pass(deps, owner, "materialize", budget_ms, _materialize_by_owner)


def process_extractions(
    deps: EngineDeps, owner: OwnerKey | None, *, budget_ms: int | None = None
) -> ProcessingReport:
    """One bounded pass over pending extraction work, item by item."""
    return _bounded_pass(deps, owner, "extract", budget_ms, _extract_one_by_one)


def _bounded_pass(
    deps: EngineDeps,
    owner: OwnerKey | None,
    family: WorkFamily,
    budget_ms: int | None,
    run: Callable[[EngineDeps, list[WorkItem], OutOfTime], tuple[int, int]],
) -> ProcessingReport:
    budget_ms = pass_budget_ms(budget_ms)
    processed = failed = 0
    if budget_ms != 0:
        started = time.monotonic()

        def out_of_time() -> bool:
            return budget_ms is not None and (time.monotonic() - started) * 1000 >= budget_ms

        items = deps.ledger.list_pending_work(owner, deps.config.work_batch_size, family=family)
        processed, failed = run(deps, items, out_of_time)
    pending = deps.ledger.count_pending_work(owner, family=family)
    return ProcessingReport(processed=processed, pending=pending, failed=failed)


def _materialize_by_owner(
    deps: EngineDeps, items: list[WorkItem], out_of_time: OutOfTime
) -> tuple[int, int]:
    processed = failed = 0
    by_owner: dict[OwnerKey, list[WorkItem]] = {}
    for item in items:
        by_owner.setdefault(item.owner, []).append(item)
    for owner, owned in by_owner.items():
        if out_of_time():
            break
        targets, unworkable = resolve_targets(deps, owner, owned)
        fail_unworkable(deps, unworkable)
        failed += len(unworkable)
        try:
            outcome = materialize_targets(deps, targets)
        except PrmeError:
            break
        processed += outcome.processed
        failed += outcome.failed
    return processed, failed


def _extract_one_by_one(
    deps: EngineDeps, items: list[WorkItem], out_of_time: OutOfTime
) -> tuple[int, int]:
    processed = failed = 0
    for item in items:
        if out_of_time():
            break
        if run_extractions(deps, item.owner, [item]) is None:
            processed += 1
        else:
            failed += 1
    return processed, failed


# -- the sweeper: re-announce queued work nobody finished ---------------------------------------

# Families of queued work the sweeper re-announces. Alias scans are not queued: every
# maintenance pass lists and runs them itself, so none can be lost.
SWEPT_FAMILIES: tuple[WorkFamily, ...] = ("materialize", "extract")
# Times the sweeper announces one item again; overdue once more after that, it is failed.
MAX_SWEEPS = 3
# Items saved and announced together (SQS sends up to ten messages in one call).
_SWEEP_BATCH = 10


@dataclass(frozen=True)
class SweepReport:
    announced: int
    failed: int
    # Items failed by this pass, with the last failure each had recorded before (or None):
    # a category, never content, so an edge may log it.
    failures: tuple[tuple[WorkItem, str | None], ...] = ()


def sweep_overdue_work(
    deps: EngineDeps,
    *,
    overdue_seconds: int | Mapping[WorkFamily, int],
    limit: int = 500,
) -> SweepReport:
    """Announce again every queued item (any family) pending untouched for longer than its
    family's `overdue_seconds` (lost sends, crashed or timed-out workers, dead-lettered
    messages), at most MAX_SWEEPS times; an item overdue after that is failed with its reason.

    Each announcement is saved (count and time) before it is sent: a worker that finishes
    the item meanwhile is not overwritten later, and a send that fails still counts. Items
    are saved and sent a queue batch at a time, so a pass cut short (its deadline, an
    outage) leaves at most one batch counted but not announced."""
    now = deps.clock.now()
    announced = 0
    failures: list[tuple[WorkItem, str | None]] = []
    for family in SWEPT_FAMILIES:
        seconds = overdue_seconds if isinstance(overdue_seconds, int) else overdue_seconds[family]
        cutoff = now - timedelta(seconds=seconds)
        listed = deps.ledger.list_pending_work(None, limit, family=family)
        overdue = [w for w in listed if w.updated_at <= cutoff]
        for start in range(0, len(overdue), _SWEEP_BATCH):
            announce: list[WorkItem] = []
            for item in _still_overdue(deps, overdue[start : start + _SWEEP_BATCH], cutoff):
                if item.sweeps >= MAX_SWEEPS:
                    failed = item.failed(WorkFailure.SWEEPS_EXHAUSTED, now)
                    deps.ledger.save_work(failed)
                    failures.append((failed, item.last_error))
                    continue
                swept = item.announced_again(now)
                deps.ledger.save_work(swept)
                announce.append(swept)
            if announce:
                deps.queue.enqueue(announce)
                announced += len(announce)
    return SweepReport(announced=announced, failed=len(failures), failures=tuple(failures))


def _still_overdue(
    deps: EngineDeps, candidates: Sequence[WorkItem], cutoff: datetime
) -> list[WorkItem]:
    """The candidates as the ledger holds them now, those still pending and untouched.

    A listing of pending work may lag (DynamoDB's GSIs are eventually consistent): an item a
    worker has just finished must not be saved back as pending. Overdue work is rare, so one
    consistent read per source is cheap."""
    current: list[WorkItem] = []
    for item in candidates:
        for stored in deps.ledger.list_event_work(item.owner, item.event_id):
            if (
                stored.id == item.id
                and stored.status is WorkStatus.PENDING
                and stored.updated_at <= cutoff
            ):
                current.append(stored)
    return current

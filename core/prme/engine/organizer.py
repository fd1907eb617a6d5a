"""The organizer: bounded maintenance jobs over one owner's memory (promotion, decay, archive
and deprecation thresholds, deduplication, TTL sweep), each change journaled atomically,
each job idempotent and resumable from a per-owner cursor kept in the journal.

Every job but dedup scans the owner's nodes in id order and applies its rule to one node at
a time (dedup reads them all, then supersedes duplicates: see `_run_dedup`).
A change commits the new node state, a journal record and (when the index shows the changed
field) index work in one ledger transaction. The journal record's id is derived from the
node, the job and the state it moves to, so a run repeated after a crash finds the node
already changed (or the record already there) and changes nothing twice. When a job's share
of the time budget is spent it stops between nodes and journals where it stopped; the next
run continues after that node.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from time import monotonic
from typing import Any

from prme.engine.deps import EngineDeps
from prme.engine.expiry import expiry_archive
from prme.engine.materialize import index_work_item
from prme.engine.organizer_rules import (
    ACTIVE_STATES,
    archive_due,
    decay_base,
    decay_due,
    decay_record,
    dedup_text,
    deprecation_due,
    keeper_rank,
    promotion_due,
    scheduled_pass_due,
)
from prme.errors import ConflictError, PrmeError
from prme.model.enums import LifecycleState
from prme.model.organizer import (
    OrganizeInput,
    OrganizeReport,
    OrganizerJob,
    OrganizerJobReport,
    OrganizerPass,
)
from prme.model.records import (
    DECAY_METADATA_KEY,
    JournalRecord,
    MemoryEdge,
    MemoryNode,
    NodeChange,
    OwnerKey,
    WorkItem,
)

CURSOR_OPERATION = "organizer_cursor"
# Cursor records of a job sort newest first: the id counts down from this as runs save.
CURSOR_ID_PREFIX = "organizer-cursor:"
_CURSOR_SEQUENCE_TOP = 10**12
_CHANGE_NAMESPACE = uuid.UUID("0b6c1f4e-37d2-4d8a-a5e1-6a9f0c2d7e31")


@dataclass(frozen=True)
class JobCursor:
    """Where a job's pass over an owner stands, as its last cursor record says."""

    sequence: int
    after_id: str | None
    complete: bool


@dataclass
class _Run:
    """One job's run over one owner: what it reads and the changes it made."""

    deps: EngineDeps
    owner: OwnerKey
    job: OrganizerJob
    now: datetime
    work: list[WorkItem] = field(default_factory=list)

    def commit(
        self,
        node: MemoryNode,
        updated: MemoryNode,
        *,
        state_key: str,
        payload: dict[str, Any],
        reindex: bool,
        edges: tuple[MemoryEdge, ...] = (),
        journal: JournalRecord | None = None,
    ) -> bool:
        """Commit one node's change with its journal record; False when the node changed
        meanwhile or this very change is already journaled (a rerun)."""
        journal = journal or JournalRecord.build(
            record_id=change_record_id(node.id, self.job, state_key),
            owner=self.owner,
            operation=f"organizer_{self.job}",
            subject_id=node.id,
            created_at=self.now,
            payload={"node_id": node.id, **payload},
        )
        work = (index_work_item(self.deps, updated),) if reindex else ()
        try:
            self.deps.ledger.commit_node_change(
                NodeChange(updates=((node, updated),), journal=journal, edges=edges, work=work)
            )
        except ConflictError:
            return False
        self.work.extend(work)
        return True

    def announce(self) -> None:
        if self.work:
            with contextlib.suppress(PrmeError):
                self.deps.queue.enqueue(self.work)
            self.work = []


def change_record_id(node_id: str, job: str, state_key: str) -> str:
    """The journal id of a job's change of a node into one state: the same change always
    gets the same id."""
    return str(uuid.uuid5(_CHANGE_NAMESPACE, f"{node_id}|{job}|{state_key}"))


def _moved(run: _Run, node: MemoryNode, to: LifecycleState) -> MemoryNode:
    return node.model_copy(update={"lifecycle_state": to, "updated_at": run.now})


def _promote(run: _Run, node: MemoryNode) -> bool:
    if not promotion_due(node, run.now, run.deps.config.organizer):
        return False
    return run.commit(
        node,
        _moved(run, node, LifecycleState.STABLE),
        state_key=LifecycleState.STABLE.value,
        payload={
            "from_state": node.lifecycle_state.value,
            "to_state": LifecycleState.STABLE.value,
            "created_at": node.created_at.isoformat(),
            "evidence": len(node.evidence_refs),
        },
        reindex=True,
    )


def _decay(run: _Run, node: MemoryNode) -> bool:
    values = decay_due(node, run.now, run.deps.config.organizer)
    if values is None:
        return False
    salience, confidence = values
    base_salience, base_confidence, since = decay_base(node)
    updated = node.model_copy(
        update={
            "salience": salience,
            "confidence": confidence,
            "metadata": {
                **node.metadata,
                DECAY_METADATA_KEY: decay_record(base_salience, base_confidence, since),
            },
            "updated_at": run.now,
        }
    )
    return run.commit(
        node,
        updated,
        # From and to: another writer may set values decay already wrote once.
        state_key=f"{since.isoformat()}|{node.salience}|{node.confidence}|{salience}|{confidence}",
        payload={
            "from": {"salience": node.salience, "confidence": node.confidence},
            "to": {"salience": salience, "confidence": confidence},
            "base": {"salience": base_salience, "confidence": base_confidence},
            "since": since.isoformat(),
        },
        # The index holds neither value: nothing to rewrite there.
        reindex=False,
    )


def _archive(run: _Run, node: MemoryNode) -> bool:
    reason = archive_due(node, run.deps.config.organizer)
    if reason is None:
        return False
    return run.commit(
        node,
        _moved(run, node, LifecycleState.ARCHIVED),
        state_key=LifecycleState.ARCHIVED.value,
        payload={
            "from_state": node.lifecycle_state.value,
            "to_state": LifecycleState.ARCHIVED.value,
            "reason": reason,
            "salience": node.salience,
            "confidence": node.confidence,
        },
        reindex=True,
    )


def _deprecate(run: _Run, node: MemoryNode) -> bool:
    if not deprecation_due(node, run.deps.config.organizer):
        return False
    return run.commit(
        node,
        _moved(run, node, LifecycleState.DEPRECATED),
        state_key=LifecycleState.DEPRECATED.value,
        payload={
            "from_state": node.lifecycle_state.value,
            "to_state": LifecycleState.DEPRECATED.value,
            "confidence": node.confidence,
        },
        reindex=True,
    )


def _dedup_key(node: MemoryNode) -> tuple[str, str, bytes]:
    """Duplicates share the owner (every node read here has it), scope, type and text."""
    text = hashlib.sha256(dedup_text(node.content).encode()).digest()
    return (node.scope.value, node.node_type.value, text)


def _supersede_duplicate(run: _Run, loser_id: str, keeper_id: str) -> bool:
    found = run.deps.ledger.get_nodes(run.owner, [loser_id, keeper_id])
    node, keeper = found.get(loser_id), found.get(keeper_id)
    # Either may have changed since the scan: act only on what still holds.
    if (
        node is None
        or keeper is None
        or node.lifecycle_state not in ACTIVE_STATES
        or keeper.lifecycle_state not in ACTIVE_STATES
        or _dedup_key(node) != _dedup_key(keeper)
    ):
        return False
    updated = node.model_copy(
        update={
            "lifecycle_state": LifecycleState.SUPERSEDED,
            "valid_to": run.now,
            "updated_at": run.now,
        }
    )
    edge = MemoryEdge(
        id=change_record_id(node.id, "dedup-edge", keeper.id),
        tenant_id=run.owner.tenant_id,
        owner_id=run.owner.owner_id,
        edge_type="supersedes",
        source_node_id=keeper.id,
        target_node_id=node.id,
        created_at=run.now,
    )
    return run.commit(
        node,
        updated,
        state_key=f"{LifecycleState.SUPERSEDED.value}|{keeper.id}",
        payload={
            "from_state": node.lifecycle_state.value,
            "to_state": LifecycleState.SUPERSEDED.value,
            "kept_node_id": keeper.id,
            "edge_id": edge.id,
            "reason": "same_text",
        },
        reindex=True,
        edges=(edge,),
    )


def _run_dedup(run: _Run, stop_at: float) -> OrganizerJobReport:
    """Supersede each active node by the best active node of the same scope, type and text.

    Duplicates can lie anywhere in id order, so a run first reads the owner's active nodes
    whole (a digest and a rank each), then supersedes every duplicate by its group's best
    (more confident, then more salient, then newer), which is the same node whichever member
    is looked at. A run whose budget ends during the read changes nothing; one that ends
    during the writes leaves the rest to the next run, whose read no longer finds the nodes
    already superseded (they are no longer active): no cursor is needed, and none moves twice.
    """
    groups: dict[tuple[str, str, bytes], list[tuple[tuple[float, float, datetime, str], str]]] = {}
    scanned = 0
    after: str | None = None
    while True:
        if scanned and monotonic() >= stop_at:
            return OrganizerJobReport(scanned=scanned, changed=0, complete=False)
        page, after = run.deps.ledger.list_nodes_page(
            run.owner, after_id=after, limit=run.deps.config.organizer.page_size
        )
        for node in page:
            scanned += 1
            if node.lifecycle_state in ACTIVE_STATES:
                groups.setdefault(_dedup_key(node), []).append((keeper_rank(node), node.id))
        if after is None:
            break
    losers = sorted(
        (loser_id, max(members)[1])
        for members in groups.values()
        if len(members) > 1
        for _, loser_id in members
        if loser_id != max(members)[1]
    )
    changed = 0
    try:
        for position, (loser_id, keeper_id) in enumerate(losers):
            if position and monotonic() >= stop_at:
                return OrganizerJobReport(
                    scanned=scanned, changed=changed, complete=False, cursor=loser_id
                )
            changed += _supersede_duplicate(run, loser_id, keeper_id)
    finally:
        run.announce()
    return OrganizerJobReport(scanned=scanned, changed=changed, complete=True)


def _ttl_sweep(run: _Run, node: MemoryNode) -> bool:
    if not node.is_expired(run.now) or node.lifecycle_state is LifecycleState.ARCHIVED:
        return False
    # The same archived state and journal record as the tenant-wide expiry pass.
    updated, journal, _ = expiry_archive(run.deps, node)
    return run.commit(node, updated, state_key="", payload={}, reindex=True, journal=journal)


# The jobs that look at one node at a time (dedup compares the owner's nodes as a whole).
_NODE_JOBS: Mapping[OrganizerJob, Callable[[_Run, MemoryNode], bool]] = {
    "promote": _promote,
    "decay": _decay,
    "archive": _archive,
    "deprecate": _deprecate,
    "ttl_sweep": _ttl_sweep,
}


def _cursor_prefix(job: str) -> str:
    return f"{CURSOR_ID_PREFIX}{job}:"


def load_cursor(deps: EngineDeps, owner: OwnerKey, job: str) -> JobCursor | None:
    """The job's last saved position for the owner (None: it never stopped part way)."""
    records = deps.ledger.list_journal(owner, _cursor_prefix(job), limit=1)
    if not records:
        return None
    payload = records[0].payload
    after_id = payload.get("after_id")
    return JobCursor(
        sequence=int(payload.get("sequence", 0)),
        after_id=after_id if isinstance(after_id, str) else None,
        complete=bool(payload.get("complete")),
    )


def _save_cursor(
    run: _Run, previous: JobCursor | None, *, after_id: str | None, complete: bool
) -> None:
    sequence = (previous.sequence if previous else 0) + 1
    record = JournalRecord.build(
        record_id=f"{_cursor_prefix(run.job)}{_CURSOR_SEQUENCE_TOP - sequence:012d}",
        owner=run.owner,
        operation=CURSOR_OPERATION,
        subject_id=run.job,
        created_at=run.now,
        payload={"job": run.job, "sequence": sequence, "after_id": after_id, "complete": complete},
    )
    # A concurrent run saved this sequence first: its position stands, ours is redone later.
    with contextlib.suppress(ConflictError):
        run.deps.ledger.append_journal(record)


def _run_job(
    deps: EngineDeps, owner: OwnerKey, job: OrganizerJob, stop_at: float
) -> OrganizerJobReport:
    run = _Run(deps, owner, job, deps.clock.now())
    if job == "dedup":
        return _run_dedup(run, stop_at)
    step = _NODE_JOBS[job]
    previous = load_cursor(deps, owner, job)
    resumed_after = previous.after_id if previous and not previous.complete else None
    after = resumed_after
    scanned = changed = 0
    stopped = False
    page_size = deps.config.organizer.page_size
    try:
        while not stopped:
            # Every run examines at least one node, so successive runs always progress.
            if scanned and monotonic() >= stop_at:
                stopped = True
                break
            page, next_after = deps.ledger.list_nodes_page(owner, after_id=after, limit=page_size)
            for node in page:
                if scanned and monotonic() >= stop_at:
                    stopped = True
                    break
                changed += step(run, node)
                scanned += 1
                after = node.id
            else:
                if next_after is None:
                    break
                after = next_after
    finally:
        run.announce()
    if stopped:
        _save_cursor(run, previous, after_id=after, complete=False)
    elif resumed_after is not None:
        # The pass that stopped part way is finished: the next run starts from the first node.
        _save_cursor(run, previous, after_id=None, complete=True)
    return OrganizerJobReport(
        scanned=scanned, changed=changed, complete=not stopped, cursor=after if stopped else None
    )


def organize_within(
    deps: EngineDeps, owner: OwnerKey, jobs: Sequence[OrganizerJob], stop_at: float
) -> OrganizeReport:
    """Run `jobs` in order until the monotonic time `stop_at`: each job gets an even share of
    what the jobs before it left, so a job with much work never starves the ones after it."""
    started = monotonic()
    reports: dict[str, OrganizerJobReport] = {}
    for position, job in enumerate(jobs):
        left = max(0.0, stop_at - monotonic())
        reports[job] = _run_job(deps, owner, job, monotonic() + left / (len(jobs) - position))
    return OrganizeReport(
        jobs_run=list(jobs),
        per_job=reports,
        duration_ms=round((monotonic() - started) * 1000),
        complete=all(r.complete for r in reports.values()),
    )


def organize(deps: EngineDeps, owner: OwnerKey, request: OrganizeInput) -> OrganizeReport:
    """One organizer run over the owner's memory within `request.budget_ms`."""
    stop_at = monotonic() + request.budget_ms / 1000
    return organize_within(deps, owner, request.selected_jobs(), stop_at)


def organize_owners(
    deps: EngineDeps, tenant_ids: Callable[[], Sequence[str]], *, budget_ms: int
) -> OrganizerPass | None:
    """The maintenance pass: every job for each owner of each tenant, sharing `budget_ms`.

    Each owner gets an even share of what the owners before it left. The walk starts at an
    owner that moves on every minute, so when the budget cannot reach every owner, the ones
    it missed come first in a later pass."""
    if not scheduled_pass_due(deps.clock.now(), deps.config.organizer):
        return None  # outside the daily window: nothing is listed or read
    started = monotonic()
    stop_at = started + budget_ms / 1000
    owners = [
        OwnerKey(tenant_id=tenant, owner_id=owner_id)
        for tenant in sorted(set(tenant_ids()))
        for owner_id in deps.ledger.list_owners(tenant)
    ]
    if owners:
        start = int(deps.clock.now().timestamp() // 60) % len(owners)
        owners = owners[start:] + owners[:start]
    visited = complete = changed = 0
    jobs = OrganizeInput().selected_jobs()
    for position, owner in enumerate(owners):
        left = stop_at - monotonic()
        if left <= 0:
            break
        report = organize_within(deps, owner, jobs, monotonic() + left / (len(owners) - position))
        visited += 1
        complete += report.complete
        changed += sum(r.changed for r in report.per_job.values())
    return OrganizerPass(
        owners_visited=visited,
        owners_complete=complete,
        changed=changed,
        complete=complete == len(owners),
    )

"""Alias proposals and their reviews: entity nodes that may name the same thing.

A scan compares an owner's active entity names within each scope and journals each likely
pair once, as unverified advice with its score, signals, evidence and the node states it
assessed. A scan runs within its caller's budget, comparing each name only with the
candidates `CandidateIndex` finds, and an unfinished scan continues on the next run. Only a
person's review acts on it: an acceptance adds a verified `alias_of` edge between the two
nodes (both stay active and unchanged), a rejection records the reason. Nothing here
merges, edits or archives a node.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
import uuid
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, TypeVar

from pydantic import ValidationError

from prme.engine.alias_names import (
    ALIAS_THRESHOLD,
    CandidateIndex,
    NameKey,
    NameMatch,
    compare_keys,
    name_key,
)
from prme.engine.deps import EngineDeps
from prme.engine.identity import Principal
from prme.engine.reads import get_node
from prme.errors import ConflictError, CorruptRecordError, InvalidRequestError, NotFoundError
from prme.model.aliases import (
    ALIAS_EDGE_TYPE,
    ALIAS_PROPOSAL_OPERATION,
    ALIAS_PROPOSAL_PREFIX,
    ALIAS_REVIEW_OPERATION,
    ALIAS_REVIEW_PREFIX,
    ALIAS_SCAN_PROGRESS_OPERATION,
    ALIAS_SCAN_PROGRESS_PREFIX,
    MAX_REVIEW_REASON_CHARS,
    MAX_REVIEWER_ID_CHARS,
    AliasCandidate,
    AliasDecision,
    AliasProposal,
    AliasProposalItem,
    AliasReview,
    AliasScanProgress,
    AliasSignal,
    AliasStatus,
    NodeAssessment,
)
from prme.model.enums import INACTIVE_LIFECYCLE_STATES, NodeType, Scope
from prme.model.records import (
    EXTRACTION_METADATA_KEY,
    JournalRecord,
    MemoryEdge,
    MemoryNode,
    NodeChange,
    OwnerKey,
)

SCANNER = "name_similarity_v1"
# A scan visits at most this many distinct names per scope (those most recently seen).
MAX_SCAN_NAMES = 5000
# New proposals one run finds before it stops (one journal write each); the next run
# continues after the last name it visited.
MAX_NEW_PROPOSALS_PER_SCAN = 200
# Name pairs one run compares when its caller sets no other budget (an on-demand scan).
DEFAULT_MAX_PAIRS = 250_000
# Pending alias work items one maintenance pass reads (each owner is scanned once).
ALIAS_WORK_BATCH = 100
# All pending alias work of one owner that a scan closes.
_OWNER_WORK_LIMIT = 10_000
_JOURNAL_PAGE = 500
DEFAULT_LIST_LIMIT = 100
MAX_LIST_LIMIT = 500
# Proposal ids are uuid5 names in this namespace: the same pair in the same states always
# gets the same id, so a rescan never proposes it twice.
_PROPOSAL_NAMESPACE = uuid.UUID("6f1c2a52-8e0b-5c1e-9d3a-3b7e2f4a9c10")
# Progress records count down from this, so the newest is the first one listed.
_PROGRESS_IDS = 10**12 - 1


class StaleAssessmentError(ConflictError):
    """A proposed node is gone, inactive or changed since the pair was scored."""

    default_detail = "A node of this proposal changed since it was assessed; it needs a new scan"


@dataclass(frozen=True)
class AliasScanBudget:
    """What one scan pass may spend, set by its caller (the maintenance function gives it
    what is left of its own time limit). Comparing stops after the name that reaches a
    limit; the proposals found are journaled and the next pass continues after that name.
    An owner's scan that starts visits at least one name, so successive runs always
    progress; a pass with no time left starts none."""

    max_pairs: int = DEFAULT_MAX_PAIRS
    max_ms: int | None = None

    def __post_init__(self) -> None:
        if self.max_pairs < 1:
            raise ValueError("max_pairs must be at least 1")
        if self.max_ms is not None and self.max_ms < 0:
            raise ValueError("max_ms must not be negative")


@dataclass(frozen=True)
class AliasScanReport:
    owners_scanned: int
    proposals_created: int
    # Alias work still pending after the pass (every owner, or the one scanned).
    pending: int
    # Name pairs compared by this pass.
    pairs_compared: int
    # Whether every owner with work was scanned to its last name; if not, the next pass
    # continues where this one stopped.
    complete: bool
    # Names the scanned owners' unfinished scans still have to visit.
    names_remaining: int
    # Names whose partner search reached a per-name cap of `alias_names`.
    names_capped: int


@dataclass(frozen=True)
class OwnerScan:
    proposals_created: int
    complete: bool
    pairs_compared: int
    names_remaining: int
    names_capped: int
    # Set when this run completed a scan that earlier runs began: alias work created
    # before this time is covered by it (later work waits for the next scan).
    scan_started_at: datetime | None


def proposal_operation_id(a: MemoryNode, b: MemoryNode) -> str:
    """The pair's id in the states assessed. The lifecycle state is part of it because a
    review checks it: a node promoted since its scan gets a new proposal on the next scan,
    instead of a stale one that could never be accepted."""
    first, second = sorted((a, b), key=lambda n: n.id)
    name = "\n".join(
        (
            first.id,
            second.id,
            first.content_sha256,
            second.content_sha256,
            first.lifecycle_state.value,
            second.lifecycle_state.value,
        )
    )
    return str(uuid.uuid5(_PROPOSAL_NAMESPACE, name))


# -- scans ------------------------------------------------------------------------------


def propose_aliases(
    deps: EngineDeps, owner: OwnerKey | None, *, budget: AliasScanBudget | None = None
) -> AliasScanReport:
    """Scan one owner (and close its pending alias work), or, with None, every owner
    that has pending alias work (the maintenance pass), within `budget`. Owners share it:
    each gets an even part of what the owners before it left."""
    budget = budget or AliasScanBudget()
    started = time.monotonic()
    if owner is not None:
        owners = [owner]
    else:
        seen: dict[OwnerKey, None] = {}
        for item in deps.ledger.list_pending_work(None, ALIAS_WORK_BATCH, family="alias"):
            seen.setdefault(item.owner, None)
        owners = list(seen)
    scans: list[OwnerScan] = []
    for position, key in enumerate(owners):
        owners_left = len(owners) - position
        pairs_left = budget.max_pairs - sum(s.pairs_compared for s in scans)
        if pairs_left <= 0:
            break
        deadline: float | None = None
        if budget.max_ms is not None:
            ms_left = budget.max_ms - (time.monotonic() - started) * 1000
            if ms_left <= 0:
                break
            deadline = time.monotonic() + ms_left / owners_left / 1000
        # Listed before the scan: work committed during it stays pending for the next pass.
        work = deps.ledger.list_pending_work(key, _OWNER_WORK_LIMIT, family="alias")
        scan = scan_owner(deps, key, max_pairs=max(1, pairs_left // owners_left), deadline=deadline)
        scans.append(scan)
        if scan.complete:
            now = deps.clock.now()
            for item in work:
                if scan.scan_started_at is None or item.created_at < scan.scan_started_at:
                    deps.ledger.save_work(item.succeeded(now))
    return AliasScanReport(
        owners_scanned=len(scans),
        proposals_created=sum(s.proposals_created for s in scans),
        pending=deps.ledger.count_pending_work(owner, family="alias"),
        pairs_compared=sum(s.pairs_compared for s in scans),
        complete=len(scans) == len(owners) and all(s.complete for s in scans),
        names_remaining=sum(s.names_remaining for s in scans),
        names_capped=sum(s.names_capped for s in scans),
    )


def scan_owner(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    deadline: float | None = None,
) -> OwnerScan:
    """Journal new proposals for one owner, continuing the scan an earlier run left
    unfinished. Names are visited scope by scope in digest order; each name is compared
    with the partners `CandidateIndex` finds for it. The run stops after the name that
    reaches `max_pairs`, the `deadline` (a `time.monotonic()` value) or the proposal cap,
    and records that name's place."""
    progress = _latest_progress(deps, owner)
    resumed = progress.unfinished if progress is not None else None
    listed_at = deps.clock.now()
    by_scope: defaultdict[Scope, list[MemoryNode]] = defaultdict(list)
    for node in deps.ledger.list_nodes(owner, node_type=NodeType.ENTITY):
        if node.lifecycle_state not in INACTIVE_LIFECYCLE_STATES:
            by_scope[node.scope].append(node)
    known = _proposal_ids(deps, owner)
    run = _Run(known=known, max_pairs=max_pairs, deadline=deadline)
    last: tuple[Scope, str] | None = None
    if resumed is not None:
        last = (resumed.scope, resumed.after_digest)
    stopped = False
    remaining = 0
    for scope in sorted(by_scope):
        if resumed is not None and scope < resumed.scope:
            continue
        names = _ScopeNames.of(by_scope[scope])
        start = 0
        if resumed is not None and scope == resumed.scope:
            start = bisect_right(names.digests, resumed.after_digest)
        for position in range(start, len(names.digests)):
            if stopped or run.spent():
                stopped = True
                remaining += len(names.digests) - position
                break
            run.visit(names, position)
            last = (scope, names.digests[position])
    created = _journal_fresh(deps, owner, run)
    if stopped and last is not None:
        begun = resumed.scan_started_at if resumed is not None else listed_at
        _record_progress(deps, owner, progress, run, scan_started_at=begun, at=last, complete=False)
        return OwnerScan(created, False, run.compared, remaining, run.capped, None)
    if resumed is not None:
        begun = resumed.scan_started_at
        at = last or (resumed.scope, resumed.after_digest)
        _record_progress(deps, owner, progress, run, scan_started_at=begun, at=at, complete=True)
        return OwnerScan(created, True, run.compared, 0, run.capped, begun)
    return OwnerScan(created, True, run.compared, 0, run.capped, None)


@dataclass
class _ScopeNames:
    """One scope's distinct names (the most recently seen first, up to the cap), in the
    order of their digests: the order a scan visits them in, whatever was added since."""

    digests: list[str]
    keys: list[NameKey]
    # The nodes spelling each name, oldest first.
    nodes: list[list[MemoryNode]]

    @classmethod
    def of(cls, nodes: list[MemoryNode]) -> _ScopeNames:
        groups: dict[str, list[MemoryNode]] = {}
        keys: dict[str, NameKey] = {}
        for node in sorted(nodes, key=lambda n: (n.created_at, n.id)):
            key = name_key(node.content)
            if key.text:
                groups.setdefault(key.text, []).append(node)
                keys.setdefault(key.text, key)
        recent = sorted(groups, key=lambda t: (groups[t][-1].created_at, t), reverse=True)
        ordered = sorted((_digest(t), t) for t in recent[:MAX_SCAN_NAMES])
        return cls(
            digests=[d for d, _ in ordered],
            keys=[keys[t] for _, t in ordered],
            nodes=[groups[t] for _, t in ordered],
        )

    @cached_property
    def index(self) -> CandidateIndex:
        return CandidateIndex(self.keys, threshold=ALIAS_THRESHOLD)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class _Run:
    """What one run compared and found, and whether it has spent its budget."""

    def __init__(self, *, known: set[str], max_pairs: int, deadline: float | None) -> None:
        self.known = known
        self.max_pairs = max_pairs
        self.deadline = deadline
        self.fresh: dict[str, tuple[NameMatch, MemoryNode, MemoryNode]] = {}
        self.compared = 0
        self.capped = 0
        self.visited = 0

    def spent(self) -> bool:
        if self.visited == 0:
            return False  # every run visits a name, so a small budget still progresses
        return (
            self.compared >= self.max_pairs
            or len(self.fresh) >= MAX_NEW_PROPOSALS_PER_SCAN
            or (self.deadline is not None and time.monotonic() >= self.deadline)
        )

    def visit(self, names: _ScopeNames, position: int) -> None:
        """Compare one name: its repeated spellings with its oldest node, then its
        partners through their oldest nodes (one proposal per pair of names, not per pair
        of mentions)."""
        self.visited += 1
        key, nodes = names.keys[position], names.nodes[position]
        for other in nodes[1:]:
            self._consider(compare_keys(key, name_key(other.content)), nodes[0], other)
        partners = names.index.partners(position)
        self.capped += partners.capped
        for j in partners.indexes:
            match = compare_keys(key, names.keys[j], threshold=ALIAS_THRESHOLD)
            self._consider(match, nodes[0], names.nodes[j][0])

    def _consider(self, match: NameMatch, a: MemoryNode, b: MemoryNode) -> None:
        self.compared += 1
        if match.similarity < ALIAS_THRESHOLD:
            return
        pid = proposal_operation_id(a, b)
        if pid not in self.known and pid not in self.fresh:
            self.fresh[pid] = (match, a, b)


def _journal_fresh(deps: EngineDeps, owner: OwnerKey, run: _Run) -> int:
    """Journal the run's new proposals, strongest first."""
    created = 0
    for pid, (match, a, b) in sorted(run.fresh.items(), key=lambda p: (-p[1][0].similarity, p[0])):
        try:
            deps.ledger.append_journal(_proposal_record(deps, owner, pid, match=match, pair=(a, b)))
        except ConflictError:
            continue  # a concurrent scan proposed it first
        created += 1
    return created


@dataclass(frozen=True)
class _Progress:
    sequence: int
    # None when the record cannot be read: taken as a finished scan (the next starts over).
    state: AliasScanProgress | None

    @property
    def unfinished(self) -> AliasScanProgress | None:
        return self.state if self.state is not None and not self.state.complete else None


def _latest_progress(deps: EngineDeps, owner: OwnerKey) -> _Progress | None:
    """The newest progress record (its sequence comes from its id, so an unreadable payload
    still numbers the next record)."""
    records = deps.ledger.list_journal(owner, ALIAS_SCAN_PROGRESS_PREFIX, limit=1)
    if not records:
        return None
    record = records[0]
    try:
        sequence = _PROGRESS_IDS - int(record.id.removeprefix(ALIAS_SCAN_PROGRESS_PREFIX))
    except ValueError:
        return None
    if record.operation != ALIAS_SCAN_PROGRESS_OPERATION or not record.verify():
        return _Progress(sequence, None)
    try:
        return _Progress(sequence, AliasScanProgress.model_validate(record.payload))
    except ValidationError:
        return _Progress(sequence, None)


def _record_progress(
    deps: EngineDeps,
    owner: OwnerKey,
    previous: _Progress | None,
    run: _Run,
    *,
    scan_started_at: datetime,
    at: tuple[Scope, str],
    complete: bool,
) -> None:
    sequence = previous.sequence + 1 if previous is not None else 0
    resumed = previous.unfinished if previous is not None else None
    progress = AliasScanProgress(
        sequence=sequence,
        scan_started_at=scan_started_at,
        runs=(resumed.runs if resumed is not None else 0) + 1,
        pairs_compared=(resumed.pairs_compared if resumed is not None else 0) + run.compared,
        complete=complete,
        scope=at[0],
        after_digest=at[1],
    )
    record = JournalRecord.build(
        record_id=f"{ALIAS_SCAN_PROGRESS_PREFIX}{_PROGRESS_IDS - sequence:012d}",
        owner=owner,
        operation=ALIAS_SCAN_PROGRESS_OPERATION,
        subject_id=str(sequence),
        created_at=deps.clock.now(),
        payload=progress.model_dump(mode="json"),
    )
    # A concurrent run may have recorded its own progress under this sequence.
    with contextlib.suppress(ConflictError):
        deps.ledger.append_journal(record)


def _proposal_ids(deps: EngineDeps, owner: OwnerKey) -> set[str]:
    return {
        r.id.removeprefix(ALIAS_PROPOSAL_PREFIX) for r in _all(deps, owner, ALIAS_PROPOSAL_PREFIX)
    }


def _all(deps: EngineDeps, owner: OwnerKey, prefix: str) -> list[JournalRecord]:
    records: list[JournalRecord] = []
    after: str | None = None
    while True:
        page = deps.ledger.list_journal(owner, prefix, after_id=after, limit=_JOURNAL_PAGE)
        records += page
        if len(page) < _JOURNAL_PAGE:
            return records
        after = page[-1].id


def _candidate(node: MemoryNode) -> AliasCandidate:
    extraction = node.metadata.get(EXTRACTION_METADATA_KEY)
    quote = extraction.get("evidence_quote") if isinstance(extraction, dict) else None
    return AliasCandidate(
        node_id=node.id,
        name=node.content,
        evidence_refs=node.evidence_refs,
        evidence_quote=quote if isinstance(quote, str) else None,
        assessed=NodeAssessment(
            content_sha256=node.content_sha256,
            lifecycle_state=node.lifecycle_state,
            updated_at=node.updated_at,
        ),
    )


def _proposal_record(
    deps: EngineDeps,
    owner: OwnerKey,
    pid: str,
    *,
    match: NameMatch,
    pair: tuple[MemoryNode, MemoryNode],
) -> JournalRecord:
    first, second = sorted(pair, key=lambda n: n.id)
    proposal = AliasProposal(
        proposal_operation_id=pid,
        scope=first.scope,
        similarity=match.similarity,
        threshold=ALIAS_THRESHOLD,
        scanner=SCANNER,
        signals=tuple(AliasSignal(name=name, score=score) for name, score in match.signals),
        nodes=(_candidate(first), _candidate(second)),
    )
    return JournalRecord.build(
        record_id=ALIAS_PROPOSAL_PREFIX + pid,
        owner=owner,
        operation=ALIAS_PROPOSAL_OPERATION,
        subject_id=pid,
        created_at=deps.clock.now(),
        payload=proposal.model_dump(mode="json"),
    )


# -- listing ----------------------------------------------------------------------------


def list_alias_proposals(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    status: AliasStatus | None = None,
    scope: Scope | None = None,
    limit: int = DEFAULT_LIST_LIMIT,
) -> list[AliasProposalItem]:
    """The owner's proposals, newest first, each with its review; filters, then limit."""
    if not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidRequestError(f"limit must be between 1 and {MAX_LIST_LIMIT}", field=("limit",))
    reviews = {
        r.id.removeprefix(ALIAS_REVIEW_PREFIX): r for r in _all(deps, owner, ALIAS_REVIEW_PREFIX)
    }
    decoded = [
        item
        for record in _all(deps, owner, ALIAS_PROPOSAL_PREFIX)
        if (item := _item(record, reviews.get(record.id.removeprefix(ALIAS_PROPOSAL_PREFIX))))
        is not None
    ]
    gone = _deleted_nodes(deps, owner, {nid for i in decoded for nid in i.proposal.node_ids})
    items: list[AliasProposalItem] = []
    for item in decoded:
        # A proposal holds its nodes' names (their content): a deleted memory's must not show.
        if gone.intersection(item.proposal.node_ids):
            continue
        if status is not None and item.status is not status:
            continue
        if scope is not None and item.proposal.scope is not scope:
            continue
        items.append(item)
    items.sort(key=lambda i: (i.proposal_journal.created_at, i.proposal_journal.id), reverse=True)
    return items[:limit]


def proposal_records_naming(deps: EngineDeps, owner: OwnerKey, node_ids: set[str]) -> list[str]:
    """The journal ids of the alias proposals that name any of `node_ids`, and of their
    reviews: a deleted entity's name and the source words it was grounded in leave with it."""
    named: list[str] = []
    for record in _all(deps, owner, ALIAS_PROPOSAL_PREFIX):
        proposal = _decode_proposal(record)
        if proposal is not None and node_ids.intersection(proposal.node_ids):
            named += [record.id, ALIAS_REVIEW_PREFIX + proposal.proposal_operation_id]
    return named


def _deleted_nodes(deps: EngineDeps, owner: OwnerKey, node_ids: set[str]) -> set[str]:
    """Those of `node_ids` the ledger no longer holds (an unreadable node is not deleted)."""
    found = deps.ledger.get_nodes(owner, sorted(node_ids))
    gone: set[str] = set()
    for node_id in node_ids.difference(found):
        with contextlib.suppress(CorruptRecordError):
            if deps.ledger.get_node(owner, node_id) is None:
                gone.add(node_id)
    return gone


def _item(record: JournalRecord, review: JournalRecord | None) -> AliasProposalItem | None:
    """The decoded item; None for a record that fails its checksum or does not decode."""
    proposal = _decode_proposal(record)
    if proposal is None:
        return None
    decoded = _decode_review(review) if review is not None else None
    if decoded is None:
        return AliasProposalItem(
            status=AliasStatus.PENDING,
            proposal=proposal,
            review=None,
            proposal_journal=record,
            review_journal=None,
        )
    return AliasProposalItem(
        status=AliasStatus(decoded.decision.value),
        proposal=proposal,
        review=decoded,
        proposal_journal=record,
        review_journal=review,
    )


_Decoded = TypeVar("_Decoded", AliasProposal, AliasReview)


def _decode(record: JournalRecord, operation: str, model: type[_Decoded]) -> _Decoded | None:
    """The payload of a journal record of `operation` that verifies; None for any other."""
    if record.operation != operation or not record.verify():
        return None
    try:
        return model.model_validate(record.payload)
    except ValidationError:
        return None


def _decode_proposal(record: JournalRecord) -> AliasProposal | None:
    return _decode(record, ALIAS_PROPOSAL_OPERATION, AliasProposal)


def _decode_review(record: JournalRecord) -> AliasReview | None:
    return _decode(record, ALIAS_REVIEW_OPERATION, AliasReview)


# -- reviews ----------------------------------------------------------------------------


def review_alias_proposal(
    deps: EngineDeps,
    owner: OwnerKey,
    proposal_operation_id: str,
    *,
    actor: Principal,
    decision: AliasDecision,
    reviewer_id: str,
    reason: str | None,
) -> AliasProposalItem:
    """Record one decision and the key that made it (`actor`, the authenticated caller;
    `reviewer_id` is only the caller's label). An identical retry returns the first;
    another decision, or an acceptance of nodes that changed since the scan, is a conflict."""
    reviewer_id, reason = _checked_review_input(decision, reviewer_id, reason)
    try:
        pid = str(uuid.UUID(proposal_operation_id))
    except ValueError:
        raise NotFoundError("Alias proposal not found") from None
    record = deps.ledger.get_journal(owner, ALIAS_PROPOSAL_PREFIX + pid)
    proposal = _decode_proposal(record) if record is not None else None
    if record is None or proposal is None:
        raise NotFoundError("Alias proposal not found")
    wanted = {"decision": decision, "reviewer_id": reviewer_id, "reason": reason}
    settled = _settled(deps, owner, record, wanted)
    if settled is not None:
        return settled
    review_id = ALIAS_REVIEW_PREFIX + proposal.proposal_operation_id
    edge: MemoryEdge | None = None
    guards: tuple[tuple[MemoryNode, MemoryNode], ...] = ()
    if decision is AliasDecision.ACCEPTED:
        nodes = _current_nodes(deps, owner, proposal)
        edge = MemoryEdge(
            id=str(uuid.uuid5(uuid.UUID(proposal.proposal_operation_id), ALIAS_EDGE_TYPE)),
            tenant_id=owner.tenant_id,
            owner_id=owner.owner_id,
            edge_type=ALIAS_EDGE_TYPE,
            source_node_id=nodes[0].id,
            target_node_id=nodes[1].id,
            evidence_refs=tuple(dict.fromkeys((*nodes[0].evidence_refs, *nodes[1].evidence_refs))),
            created_at=deps.clock.now(),
            verified=True,
            operation_id=review_id,
        )
        # Each node "replaced" by itself: the commit fails if either changed meanwhile,
        # and writes nothing new to them.
        guards = tuple((n, n) for n in nodes)
    review = AliasReview(
        proposal_operation_id=proposal.proposal_operation_id,
        decision=decision,
        reviewer_id=reviewer_id,
        reason=reason,
        edge_id=edge.id if edge is not None else None,
        node_ids=proposal.node_ids,
        reviewed_by_key_id=actor.key_id,
        reviewed_by_role=actor.role,
    )
    journal = JournalRecord.build(
        record_id=review_id,
        owner=owner,
        operation=ALIAS_REVIEW_OPERATION,
        subject_id=proposal.proposal_operation_id,
        created_at=deps.clock.now(),
        payload=review.model_dump(mode="json"),
    )
    try:
        if edge is None:
            deps.ledger.append_journal(journal)
        else:
            deps.ledger.commit_node_change(
                NodeChange(updates=guards, journal=journal, edges=(edge,))
            )
    except ConflictError:
        # A concurrent review won, or a node changed after it was read.
        settled = _settled(deps, owner, record, wanted)
        if settled is not None:
            return settled
        if edge is not None:
            raise StaleAssessmentError() from None
        raise
    item = _item(record, journal)
    assert item is not None  # noqa: S101 - built from a record that decoded above
    return item


def _checked_review_input(
    decision: AliasDecision, reviewer_id: str, reason: str | None
) -> tuple[str, str | None]:
    reviewer_id = reviewer_id.strip()
    if not reviewer_id or len(reviewer_id) > MAX_REVIEWER_ID_CHARS:
        raise InvalidRequestError(
            f"reviewer_id must have 1 to {MAX_REVIEWER_ID_CHARS} characters",
            field=("reviewer_id",),
        )
    reason = reason.strip() if reason is not None else None
    reason = reason or None
    if reason is not None and len(reason) > MAX_REVIEW_REASON_CHARS:
        raise InvalidRequestError(
            f"reason must have at most {MAX_REVIEW_REASON_CHARS} characters", field=("reason",)
        )
    if decision is AliasDecision.REJECTED and reason is None:
        raise InvalidRequestError("a rejection needs a reason", field=("reason",))
    return reviewer_id, reason


def _settled(
    deps: EngineDeps, owner: OwnerKey, record: JournalRecord, wanted: dict[str, Any]
) -> AliasProposalItem | None:
    """The stored review when it is this very decision; a conflict when it is another."""
    review = deps.ledger.get_journal(owner, ALIAS_REVIEW_PREFIX + record.subject_id)
    if review is None:
        return None
    item = _item(record, review)
    if item is None or item.review is None:
        raise ConflictError("This proposal's stored review cannot be read")
    stored = {
        "decision": item.review.decision,
        "reviewer_id": item.review.reviewer_id,
        "reason": item.review.reason,
    }
    if stored != wanted:
        raise ConflictError("This proposal was already reviewed with another decision")
    return item


def _current_nodes(
    deps: EngineDeps, owner: OwnerKey, proposal: AliasProposal
) -> tuple[MemoryNode, MemoryNode]:
    found = deps.ledger.get_nodes(owner, list(proposal.node_ids))
    nodes: list[MemoryNode] = []
    for candidate in proposal.nodes:
        node = found.get(candidate.node_id)
        if (
            node is None
            or node.lifecycle_state in INACTIVE_LIFECYCLE_STATES
            or node.content_sha256 != candidate.assessed.content_sha256
            or node.lifecycle_state is not candidate.assessed.lifecycle_state
        ):
            raise StaleAssessmentError()
        nodes.append(node)
    return nodes[0], nodes[1]


# -- edges ------------------------------------------------------------------------------


def list_node_edges(deps: EngineDeps, owner: OwnerKey, node_id: str) -> list[MemoryEdge]:
    """A node's links (verified alias links included), oldest first; 404 for unknown ids."""
    get_node(deps, owner, node_id)
    return deps.ledger.list_node_edges(owner, node_id)


__all__ = [
    "AliasScanBudget",
    "AliasScanReport",
    "OwnerScan",
    "StaleAssessmentError",
    "list_alias_proposals",
    "list_node_edges",
    "proposal_operation_id",
    "propose_aliases",
    "review_alias_proposal",
    "scan_owner",
]

"""Alias proposals and their reviews: entity nodes that may name the same thing.

A scan compares an owner's active entity names within each scope and journals each likely
pair once, as unverified advice with its score, signals, evidence and the node states it
assessed. Only a person's review acts on it: an acceptance adds a verified `alias_of` edge
between the two nodes (both stay active and unchanged), a rejection records the reason.
Nothing here merges, edits or archives a node.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from prme.engine.alias_names import (
    ALIAS_THRESHOLD,
    NameKey,
    NameMatch,
    candidate_pairs,
    compare_keys,
    name_key,
)
from prme.engine.deps import EngineDeps
from prme.engine.identity import Principal
from prme.engine.reads import get_node
from prme.errors import ConflictError, InvalidRequestError, NotFoundError
from prme.model.aliases import (
    ALIAS_EDGE_TYPE,
    ALIAS_PROPOSAL_OPERATION,
    ALIAS_PROPOSAL_PREFIX,
    ALIAS_REVIEW_OPERATION,
    ALIAS_REVIEW_PREFIX,
    MAX_REVIEW_REASON_CHARS,
    MAX_REVIEWER_ID_CHARS,
    AliasCandidate,
    AliasDecision,
    AliasProposal,
    AliasProposalItem,
    AliasReview,
    AliasSignal,
    AliasStatus,
    NodeAssessment,
)
from prme.model.enums import INACTIVE_LIFECYCLE_STATES, NodeType, Scope, WorkStatus
from prme.model.records import (
    EXTRACTION_METADATA_KEY,
    JournalRecord,
    MemoryEdge,
    MemoryNode,
    NodeChange,
    OwnerKey,
)

SCANNER = "name_similarity_v1"
# A scan compares at most this many distinct names per scope (those most recently seen
# first): all pairs of them, pruned by `candidate_pairs`, take seconds at this size.
MAX_SCAN_NAMES = 5000
# New proposals one scan journals (one write each), strongest first. When a scan stops
# here its alias work stays pending, so the next maintenance pass continues.
MAX_NEW_PROPOSALS_PER_SCAN = 200
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


class StaleAssessmentError(ConflictError):
    """A proposed node is gone, inactive or changed since the pair was scored."""

    default_detail = "A node of this proposal changed since it was assessed; it needs a new scan"


@dataclass(frozen=True)
class AliasScanReport:
    owners_scanned: int
    proposals_created: int
    # Alias work still pending after the pass (every owner, or the one scanned).
    pending: int


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


def propose_aliases(deps: EngineDeps, owner: OwnerKey | None) -> AliasScanReport:
    """Scan one owner (and close its pending alias work), or, with None, every owner
    that has pending alias work (the maintenance pass)."""
    if owner is not None:
        owners = [owner]
    else:
        seen: dict[OwnerKey, None] = {}
        for item in deps.ledger.list_pending_work(None, ALIAS_WORK_BATCH, family="alias"):
            seen.setdefault(OwnerKey(tenant_id=item.tenant_id, owner_id=item.owner_id), None)
        owners = list(seen)
    created = 0
    for key in owners:
        # Listed before the scan: work committed during it stays pending for the next pass.
        work = deps.ledger.list_pending_work(key, _OWNER_WORK_LIMIT, family="alias")
        made, complete = scan_owner(deps, key)
        created += made
        if complete:
            now = deps.clock.now()
            for item in work:
                deps.ledger.save_work(
                    item.model_copy(update={"status": WorkStatus.DONE, "updated_at": now})
                )
    return AliasScanReport(
        owners_scanned=len(owners),
        proposals_created=created,
        pending=deps.ledger.count_pending_work(owner, family="alias"),
    )


def scan_owner(deps: EngineDeps, owner: OwnerKey) -> tuple[int, bool]:
    """Journal new proposals for one owner: (how many, whether the scan was complete)."""
    nodes = [
        n
        for n in deps.ledger.list_nodes(owner, node_type=NodeType.ENTITY)
        if n.lifecycle_state not in INACTIVE_LIFECYCLE_STATES
    ]
    by_scope: defaultdict[Scope, list[MemoryNode]] = defaultdict(list)
    for node in nodes:
        by_scope[node.scope].append(node)
    pairs: list[tuple[NameMatch, MemoryNode, MemoryNode]] = []
    for scope in sorted(by_scope):
        pairs += _scope_pairs(by_scope[scope])
    known = _proposal_ids(deps, owner)
    fresh = [
        (m, a, b, pid) for m, a, b in pairs if (pid := proposal_operation_id(a, b)) not in known
    ]
    fresh.sort(key=lambda p: (-p[0].similarity, p[3]))
    created = 0
    for match, a, b, pid in fresh:
        if created >= MAX_NEW_PROPOSALS_PER_SCAN:
            return created, False
        try:
            deps.ledger.append_journal(_proposal_record(deps, owner, pid, match=match, pair=(a, b)))
        except ConflictError:
            continue  # a concurrent scan proposed it first
        created += 1
    return created, True


def _scope_pairs(nodes: list[MemoryNode]) -> list[tuple[NameMatch, MemoryNode, MemoryNode]]:
    """Pairs of one scope worth proposing.

    Nodes spelling the same name are grouped, and each is paired with the group's oldest
    node only; other names are compared through those oldest nodes. Repeated mentions so
    give one proposal each instead of one per pair of mentions."""
    groups: dict[str, list[MemoryNode]] = {}
    keys: dict[str, NameKey] = {}
    for node in sorted(nodes, key=lambda n: (n.created_at, n.id)):
        key = name_key(node.content)
        if key.text:
            groups.setdefault(key.text, []).append(node)
            keys.setdefault(key.text, key)
    pairs: list[tuple[NameMatch, MemoryNode, MemoryNode]] = []
    for text, members in groups.items():
        first = members[0]
        for other in members[1:]:
            pairs.append((compare_keys(keys[text], name_key(other.content)), first, other))
    # Most recently seen names first, so the cap drops the oldest.
    texts = sorted(groups, key=lambda t: (groups[t][-1].created_at, t), reverse=True)
    texts = texts[:MAX_SCAN_NAMES]
    name_keys = [keys[t] for t in texts]
    for i, j in candidate_pairs(name_keys, threshold=ALIAS_THRESHOLD):
        match = compare_keys(name_keys[i], name_keys[j], threshold=ALIAS_THRESHOLD)
        pairs.append((match, groups[texts[i]][0], groups[texts[j]][0]))
    return [p for p in pairs if p[0].similarity >= ALIAS_THRESHOLD]


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
    items: list[AliasProposalItem] = []
    for record in _all(deps, owner, ALIAS_PROPOSAL_PREFIX):
        item = _item(record, reviews.get(record.id.removeprefix(ALIAS_PROPOSAL_PREFIX)))
        if item is None:
            continue
        if status is not None and item.status is not status:
            continue
        if scope is not None and item.proposal.scope is not scope:
            continue
        items.append(item)
    items.sort(key=lambda i: (i.proposal_journal.created_at, i.proposal_journal.id), reverse=True)
    return items[:limit]


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


def _decode_proposal(record: JournalRecord) -> AliasProposal | None:
    if record.operation != ALIAS_PROPOSAL_OPERATION or not record.verify():
        return None
    try:
        return AliasProposal.model_validate(record.payload)
    except ValidationError:
        return None


def _decode_review(record: JournalRecord) -> AliasReview | None:
    if record.operation != ALIAS_REVIEW_OPERATION or not record.verify():
        return None
    try:
        return AliasReview.model_validate(record.payload)
    except ValidationError:
        return None


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
    "AliasScanReport",
    "StaleAssessmentError",
    "list_alias_proposals",
    "list_node_edges",
    "proposal_operation_id",
    "propose_aliases",
    "review_alias_proposal",
    "scan_owner",
]

"""Alias proposals and their reviews on every backend: advice once per pair, a person decides,
an acceptance links (never merges), and a stale or conflicting decision is refused."""

from __future__ import annotations

from typing import Any

import pytest

from prme.engine.aliases import StaleAssessmentError
from prme.engine.identity import Principal
from prme.errors import ConflictError, InvalidRequestError, NotFoundError
from prme.model.aliases import AliasDecision, AliasProposalItem, AliasStatus
from prme.model.enums import INACTIVE_LIFECYCLE_STATES, ProcessingStatus, Scope
from prme.model.inputs import IngestInput, StoreInput
from prme.model.records import OwnerKey
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness

ACCEPTED, REJECTED = AliasDecision.ACCEPTED, AliasDecision.REJECTED
REVIEWER_KEY = Principal.owner(ALICE.tenant_id, ALICE.owner_id, key_id="key-of-the-reviewer")


def entity(h: Harness, name: str, owner: OwnerKey = ALICE, **fields: Any) -> str:
    request = StoreInput.model_validate({"content": name, "node_type": "entity", **fields})
    node_id = h.engine.store(owner, request).node_id
    assert node_id is not None
    return node_id


def only_proposal(h: Harness, owner: OwnerKey = ALICE) -> AliasProposalItem:
    [item] = h.engine.list_alias_proposals(owner)
    return item


def review(
    h: Harness,
    item: AliasProposalItem,
    decision: AliasDecision,
    *,
    reviewer_id: str = "human:catalog-owner",
    reason: str | None = None,
    owner: OwnerKey = ALICE,
) -> AliasProposalItem:
    return h.engine.review_alias_proposal(
        owner,
        item.proposal_operation_id,
        actor=REVIEWER_KEY,
        decision=decision,
        reviewer_id=reviewer_id,
        reason=reason,
    )


def alias_work(h: Harness, owner: OwnerKey | None = ALICE) -> int:
    return h.ledger.count_pending_work(owner, family="alias")


def test_a_scan_proposes_a_likely_pair_once_with_its_evidence(any_backend: Harness) -> None:
    h = any_backend
    ibm = entity(h, "IBM")
    full = entity(h, "International Business Machines")
    entity(h, "Lisbon")
    entity(h, "London")
    h.engine.store(ALICE, StoreInput(content="a note, not an entity"))
    assert alias_work(h) == 4  # one per stored entity, none for the note
    before = {n: h.engine.get_node(ALICE, n) for n in (ibm, full)}

    report = h.engine.propose_aliases(ALICE)

    assert (report.owners_scanned, report.proposals_created, report.pending) == (1, 1, 0)
    item = only_proposal(h)
    assert item.status is AliasStatus.PENDING
    assert item.review is None and item.review_journal is None
    proposal = item.proposal
    assert set(proposal.node_ids) == {ibm, full}
    assert {c.name for c in proposal.nodes} == {"IBM", "International Business Machines"}
    assert 0.75 <= proposal.similarity <= 1.0
    assert proposal.signals[0].name == "acronym"
    assert proposal.scope is Scope.PERSONAL
    for candidate in proposal.nodes:
        node = before[candidate.node_id]
        assert candidate.evidence_refs == node.evidence_refs
        assert candidate.evidence_quote is None  # stored directly, not extracted
        assert candidate.assessed.content_sha256 == node.content_sha256
        assert candidate.assessed.lifecycle_state is node.lifecycle_state
        assert candidate.assessed.updated_at == node.updated_at
    journal = item.proposal_journal
    assert journal.id == f"alias_proposal:{proposal.proposal_operation_id}"
    assert journal.operation == "alias_proposal"
    assert journal.verify()
    # Advice only: no node changed, nothing links them yet.
    assert {n: h.engine.get_node(ALICE, n) for n in (ibm, full)} == before
    assert h.engine.get_node_edges(ALICE, ibm) == []

    h.clock.advance(minutes=5)
    again = h.engine.propose_aliases(ALICE)
    assert again.proposals_created == 0
    assert h.engine.list_alias_proposals(ALICE) == [item]


def test_repeated_mentions_are_paired_with_the_first_and_scopes_are_never_mixed(
    any_backend: Harness,
) -> None:
    h = any_backend
    first = entity(h, "Lisbon")
    h.clock.advance(seconds=1)
    second = entity(h, "lisbon")
    h.clock.advance(seconds=1)
    third = entity(h, "LISBON.")
    entity(h, "Lisbon", scope="project")
    assert h.engine.propose_aliases(ALICE).proposals_created == 2
    pairs = {frozenset(i.proposal.node_ids) for i in h.engine.list_alias_proposals(ALICE)}
    assert pairs == {frozenset({first, second}), frozenset({first, third})}
    assert h.engine.list_alias_proposals(ALICE, scope=Scope.PROJECT) == []
    assert len(h.engine.list_alias_proposals(ALICE, scope=Scope.PERSONAL)) == 2


def test_owners_and_tenants_never_see_or_review_each_others_proposals(
    any_backend: Harness,
) -> None:
    h = any_backend
    entity(h, "IBM")
    entity(h, "International Business Machines")
    entity(h, "International Business Machines", owner=BOB)
    entity(h, "IBM", owner=OTHER_TENANT_ALICE)
    h.engine.propose_aliases(ALICE)
    assert h.engine.propose_aliases(BOB).proposals_created == 0
    assert h.engine.propose_aliases(OTHER_TENANT_ALICE).proposals_created == 0
    item = only_proposal(h)
    for stranger in (BOB, OTHER_TENANT_ALICE):
        assert h.engine.list_alias_proposals(stranger) == []
        with pytest.raises(NotFoundError):
            review(h, item, ACCEPTED, owner=stranger)
        with pytest.raises(NotFoundError):
            h.engine.get_node_edges(stranger, item.proposal.node_ids[0])
    assert only_proposal(h).status is AliasStatus.PENDING


def test_accepting_links_both_nodes_with_a_verified_edge_and_keeps_them_active(
    any_backend: Harness,
) -> None:
    h = any_backend
    smith = entity(h, "Dr. Smith")
    john = entity(h, "John Smith")
    h.engine.propose_aliases(ALICE)
    item = only_proposal(h)
    before = {n: h.engine.get_node(ALICE, n) for n in (smith, john)}

    accepted = review(h, item, ACCEPTED, reason="Same physician in both notes")

    assert accepted.status is AliasStatus.ACCEPTED
    assert accepted.review is not None
    assert accepted.review.reviewer_id == "human:catalog-owner"
    assert accepted.review_journal is not None
    assert accepted.review_journal.id == f"alias_review:{item.proposal_operation_id}"
    assert accepted.review_journal.operation == "alias_review"
    assert accepted.review_journal.verify()
    [edge] = h.engine.get_node_edges(ALICE, smith)
    assert h.engine.get_node_edges(ALICE, john) == [edge]
    assert edge.id == accepted.review.edge_id
    assert edge.edge_type == "alias_of"
    assert edge.verified is True
    assert edge.operation_id == accepted.review_journal.id
    assert {edge.source_node_id, edge.target_node_id} == {smith, john}
    assert set(edge.evidence_refs) == {*before[smith].evidence_refs, *before[john].evidence_refs}
    for node_id, node in before.items():
        now = h.engine.get_node(ALICE, node_id)
        assert now == node
        assert now.lifecycle_state not in INACTIVE_LIFECYCLE_STATES
    assert h.engine.list_alias_proposals(ALICE, status=AliasStatus.ACCEPTED) == [accepted]
    assert h.engine.list_alias_proposals(ALICE, status=AliasStatus.PENDING) == []


def test_a_rejection_needs_a_reason_and_creates_no_link(any_backend: Harness) -> None:
    h = any_backend
    ibm = entity(h, "IBM")
    entity(h, "International Business Machines")
    h.engine.propose_aliases(ALICE)
    item = only_proposal(h)
    for reason in (None, "", "   "):
        with pytest.raises(InvalidRequestError):
            review(h, item, REJECTED, reason=reason)
    assert only_proposal(h).status is AliasStatus.PENDING  # nothing was written

    rejected = review(h, item, REJECTED, reason="IBM here is a band, not the company")

    assert rejected.status is AliasStatus.REJECTED
    assert rejected.review is not None
    assert rejected.review.reason == "IBM here is a band, not the company"
    assert rejected.review.edge_id is None
    assert h.engine.get_node_edges(ALICE, ibm) == []
    assert h.engine.list_alias_proposals(ALICE, status=AliasStatus.REJECTED) == [rejected]
    # A rejected pair is not proposed again by the next scan.
    entity(h, "Lisbon")
    assert h.engine.propose_aliases(ALICE).proposals_created == 0


def test_an_identical_retry_returns_the_first_decision_and_another_one_conflicts(
    any_backend: Harness,
) -> None:
    h = any_backend
    node_id = entity(h, "IBM")
    entity(h, "International Business Machines")
    h.engine.propose_aliases(ALICE)
    item = only_proposal(h)
    first = review(h, item, ACCEPTED)
    h.clock.advance(minutes=10)

    assert review(h, item, ACCEPTED) == first
    with pytest.raises(ConflictError):
        review(h, item, REJECTED, reason="changed my mind")
    with pytest.raises(ConflictError):
        review(h, item, ACCEPTED, reviewer_id="human:someone-else")
    with pytest.raises(ConflictError):
        review(h, item, ACCEPTED, reason="another reason")
    assert len(h.engine.get_node_edges(ALICE, node_id)) == 1
    assert only_proposal(h) == first


def test_accepting_a_pair_whose_node_changed_since_the_scan_is_stale(
    any_backend: Harness,
) -> None:
    h = any_backend
    ibm = entity(h, "IBM")
    full = entity(h, "International Business Machines")
    smith = entity(h, "Dr. Smith")
    john = entity(h, "John Smith")
    h.engine.propose_aliases(ALICE)
    by_pair = {frozenset(i.proposal.node_ids): i for i in h.engine.list_alias_proposals(ALICE)}
    archived_pair, promoted_pair = (
        by_pair[frozenset({ibm, full})],
        by_pair[frozenset({smith, john})],
    )
    h.engine.archive(ALICE, full)
    h.engine.promote(ALICE, john)

    for item in (archived_pair, promoted_pair):
        with pytest.raises(StaleAssessmentError) as raised:
            review(h, item, ACCEPTED)
        assert isinstance(raised.value, ConflictError)
    assert h.engine.get_node_edges(ALICE, ibm) == []
    assert h.engine.get_node_edges(ALICE, smith) == []
    assert len(h.engine.list_alias_proposals(ALICE, status=AliasStatus.PENDING)) == 2

    # A new scan assesses the promoted node again; the archived one is no longer scanned.
    assert h.engine.propose_aliases(ALICE).proposals_created == 1
    earlier = {promoted_pair.proposal_operation_id, archived_pair.proposal_operation_id}
    fresh = [
        i for i in h.engine.list_alias_proposals(ALICE) if i.proposal_operation_id not in earlier
    ]
    assert [set(i.proposal.node_ids) for i in fresh] == [{smith, john}]
    assert review(h, fresh[0], ACCEPTED).status is AliasStatus.ACCEPTED


def test_unknown_proposals_are_not_found(any_backend: Harness) -> None:
    h = any_backend
    for proposal_id in ("6f1c2a52-8e0b-5c1e-9d3a-3b7e2f4a9c10", "not-a-uuid"):
        with pytest.raises(NotFoundError):
            h.engine.review_alias_proposal(
                ALICE,
                proposal_id,
                actor=REVIEWER_KEY,
                decision=ACCEPTED,
                reviewer_id="me",
                reason=None,
            )
    with pytest.raises(NotFoundError):
        h.engine.get_node_edges(ALICE, "6f1c2a52-8e0b-5c1e-9d3a-3b7e2f4a9c10")


def test_the_limit_applies_after_the_filters_and_is_bounded(any_backend: Harness) -> None:
    h = any_backend
    for name in ("IBM", "International Business Machines", "Dr. Smith", "John Smith"):
        entity(h, name)
    for name in ("Lisbon", "lisbon"):
        entity(h, name, scope="project")
    assert h.engine.propose_aliases(ALICE).proposals_created == 3
    rejected = h.engine.list_alias_proposals(ALICE, scope=Scope.PERSONAL)[0]
    review(h, rejected, REJECTED, reason="not the same")

    assert len(h.engine.list_alias_proposals(ALICE, limit=2)) == 2
    pending = h.engine.list_alias_proposals(ALICE, status=AliasStatus.PENDING, limit=1)
    assert [i.status for i in pending] == [AliasStatus.PENDING]
    personal_pending = h.engine.list_alias_proposals(
        ALICE, status=AliasStatus.PENDING, scope=Scope.PERSONAL
    )
    assert len(personal_pending) == 1
    assert personal_pending[0].proposal_operation_id != rejected.proposal_operation_id
    for limit in (0, 501):
        with pytest.raises(InvalidRequestError):
            h.engine.list_alias_proposals(ALICE, limit=limit)


def test_extraction_leaves_alias_work_that_the_maintenance_pass_consumes(
    any_backend: Harness,
) -> None:
    h = any_backend
    results = [
        h.engine.ingest(ALICE, IngestInput(content=text, wait_for_extraction=True))
        for text in (
            "I met John Smith at International Business Machines yesterday.",
            "Dr. Smith from IBM called me.",
        )
    ]
    for result in results:
        # Alias work is its own family: it never holds a source's statuses pending.
        assert result.processing_status is ProcessingStatus.COMPLETED
        assert result.extraction_status is ProcessingStatus.COMPLETED
        assert h.engine.get_processing_status(ALICE, result.event_id)[0] is (
            ProcessingStatus.COMPLETED
        )
    assert alias_work(h) == 2
    entity(h, "Lisbon", owner=BOB)  # another owner with alias work of its own

    report = h.engine.propose_aliases(None)

    assert report.owners_scanned == 2
    assert report.pending == 0
    assert alias_work(h, None) == 0
    items = h.engine.list_alias_proposals(ALICE)
    assert report.proposals_created == len(items)
    names = {frozenset(c.name for c in i.proposal.nodes) for i in items}
    assert frozenset({"Dr. Smith", "John Smith"}) in names
    assert frozenset({"IBM", "International Business Machines"}) in names
    for item in items:
        for candidate in item.proposal.nodes:
            assert candidate.evidence_quote  # the source words the extractor grounded it in
            assert candidate.evidence_refs[0] in {r.event_id for r in results}
    # Nothing left to do: a second pass scans nobody.
    assert h.engine.propose_aliases(None).owners_scanned == 0

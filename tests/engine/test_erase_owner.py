"""Erasing an owner on every backend: nothing of the owner is left to any read or in any store,
other owners and tenants keep everything, a large owner is erased over several calls, an outage
part-way is finished by the next call, and queued work of the erased owner is dropped."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from prme.engine.aliases import AliasScanBudget
from prme.engine.config import EngineConfig
from prme.engine.credentials import CredentialService
from prme.engine.deadlines import deadline_scope
from prme.engine.deps import EngineDeps
from prme.engine.identity import Principal
from prme.engine.service import MemoryEngine
from prme.engine.work_refs import WorkRef
from prme.errors import (
    AuthenticationError,
    ConflictError,
    IndexUnavailableError,
    InvalidRequestError,
    NotFoundError,
)
from prme.model.aliases import AliasDecision
from prme.model.enums import CredentialRole
from prme.model.erasure import ErasureCounts, OwnerErasure, owner_reference
from prme.model.feedback import AnswerCitationInput, RelevanceInput
from prme.model.imports import BulkImportInput
from prme.model.inputs import (
    FastIngestInput,
    FastIngestItem,
    IngestInput,
    RetrieveInput,
    StoreInput,
)
from prme.model.listings import EventFilter, NodeFilter
from prme.model.records import OwnerKey
from tests.harness.aws import aws_harness
from tests.harness.engines import Harness, embedded_harness, memory_harness
from tests.harness.switchable_index import SwitchableIndex

STORE_KEY = "6f1d3b0e-4a53-4a53-9c1e-2f1e5b7a9d10"


@dataclass(frozen=True)
class Filled:
    """What one owner was given: ids to look up afterwards, and the key's secret."""

    event_id: str
    node_id: str
    request_id: str
    feedback_id: str
    citation_id: str
    secret: str


def _marker() -> str:
    """A word unique to one test, kept whole by the full-text tokenizers (letters then digits:
    no stemmer suffix), so its bytes show wherever an index keeps words."""
    return f"zq{uuid.uuid4().hex}7"


def _owner(tenant: str = "t-erase") -> OwnerKey:
    return OwnerKey(tenant_id=tenant, owner_id=f"erase-{uuid.uuid4().hex}")


def fill(h: Harness, owner: OwnerKey, marker: str) -> Filled:
    """One record of every kind the owner can have, the marker in every text they wrote."""
    stored = h.engine.store(
        owner,
        StoreInput(content=f"{marker} I drink green tea every morning."),
        idempotency_key=STORE_KEY,
    )
    assert stored.node_id is not None
    h.engine.store(owner, StoreInput(content=f"{marker} Green tea from Kyoto is my favourite."))
    for name in ("Dr. Smith", "John Smith"):
        h.engine.store(owner, StoreInput.model_validate({"content": name, "node_type": "entity"}))
    h.engine.propose_aliases(owner, budget=AliasScanBudget())
    [proposal] = h.engine.list_alias_proposals(owner)
    h.engine.review_alias_proposal(
        owner,
        proposal.proposal_operation_id,
        actor=Principal.owner(owner.tenant_id, owner.owner_id),
        decision=AliasDecision.ACCEPTED,
        reviewer_id="human:reviewer",
        reason="The same physician",
    )
    # Work left pending: an extraction and a materialization nobody processed.
    h.engine.ingest(owner, IngestInput(content=f"{marker} I paid 40 dollars for a teapot."))
    h.engine.ingest_fast(owner, FastIngestInput.model_validate({"items": [{"content": marker}]}))
    dropped = h.engine.store(owner, StoreInput(content=f"{marker} A memory deleted before."))
    h.engine.delete_memory(owner, dropped.event_id)
    response = h.engine.retrieve(owner, RetrieveInput(query="green tea"))
    request_id = response.metrics.request_id
    shown = response.bundle.entries[0].node_id
    relevance = h.engine.record_relevance(
        owner, RelevanceInput.model_validate({"request_id": request_id, "labels": {shown: True}})
    )
    citation = h.engine.record_answer_citations(
        owner,
        AnswerCitationInput.model_validate(
            {
                "request_id": request_id,
                "answer_id": "answer-1",
                "cited_node_ids": [shown],
                "method": "application_verified",
            }
        ),
    )
    issued = CredentialService(h.credentials, h.clock).create(
        tenant_id=owner.tenant_id, owner_id=owner.owner_id, role=CredentialRole.OWNER
    )
    return Filled(
        stored.event_id,
        stored.node_id,
        request_id,
        relevance.feedback_id,
        citation.citation_id,
        issued.secret,
    )


def _mentions(h: Harness, *needles: str) -> list[str]:
    return [text for text in h.scan_stores() if any(needle in text for needle in needles)]


def test_after_an_erase_nothing_of_the_owner_is_found_by_any_read_or_in_any_store(
    any_backend: Harness,
) -> None:
    h = any_backend
    owner, neighbour = _owner(), _owner()
    other_tenant = _owner("t-erase-other")
    marker = _marker()
    filled = fill(h, owner, marker)
    kept = {o: fill(h, o, f"kept-{uuid.uuid4().hex}") for o in (neighbour, other_tenant)}
    kept_stats = {o: h.engine.get_stats(o) for o in kept}
    assert _mentions(h, marker) and _mentions(h, owner.owner_id), "the scan must see the owner"

    receipt = h.engine.erase_owner(owner, confirm=owner.owner_id)

    assert receipt.complete and receipt.finished_at is not None
    removed = receipt.removed
    assert removed.events == 6 and removed.nodes >= 5 and removed.edges == 1
    assert removed.retrieval_receipts == 1 and removed.feedback_records == 2
    assert removed.alias_records >= 2 and removed.journal_records >= 5
    assert removed.idempotency_records == 1 and removed.work_items >= 2
    assert removed.index_documents >= 4 and removed.api_keys == 1
    assert receipt.erasure_id == owner_reference(owner.tenant_id, owner.owner_id)
    assert owner.owner_id not in receipt.model_dump_json()
    # Nothing answers for the owner any more, by any read.
    for read in (
        lambda: h.engine.get_event(owner, filled.event_id),
        lambda: h.engine.get_node(owner, filled.node_id),
        lambda: h.engine.get_retrieval_receipt(owner, filled.request_id),
        lambda: h.engine.get_relevance(owner, filled.feedback_id),
        lambda: h.engine.get_answer_citations(owner, filled.citation_id),
        lambda: h.engine.replay_retrieval(owner, filled.request_id),
    ):
        with pytest.raises(NotFoundError):
            read()
    assert h.engine.list_nodes(owner, NodeFilter(include_inactive=True)).items == []
    assert h.engine.list_events(owner, EventFilter()).items == []
    assert h.engine.list_relevance(owner).items == []
    assert h.engine.list_answer_citations(owner).items == []
    assert h.engine.list_alias_proposals(owner) == []
    stats = h.engine.get_stats(owner)
    assert (stats.events, stats.nodes, stats.pending_materializations) == (0, 0, 0)
    assert stats.pending_extractions == 0
    with pytest.raises(AuthenticationError):
        CredentialService(h.credentials, h.clock).authenticate(filled.secret)
    # Nor in any store: no record names the owner or holds a word of theirs.
    assert _mentions(h, marker, owner.owner_id) == []
    # The others keep everything.
    for other, stats_before in kept_stats.items():
        assert h.engine.get_stats(other) == stats_before
        assert h.engine.get_event(other, kept[other].event_id).owner_id == other.owner_id
        assert h.engine.retrieve(other, RetrieveInput(query="green tea")).results != []
    # Reads that write (a retrieval saves its receipt) come after the scan.
    assert h.engine.retrieve(owner, RetrieveInput(query="green tea")).results == []
    # An earlier Idempotency-Key replays nothing: the same store writes anew.
    again = h.engine.store(
        owner,
        StoreInput(content=f"{marker} I drink green tea every morning."),
        idempotency_key=STORE_KEY,
    )
    assert again.event_id != filled.event_id


def test_erasing_a_user_leaves_the_same_user_id_of_another_tenant_alone(
    any_backend: Harness,
) -> None:
    h = any_backend
    owner = _owner("t-one")
    twin = OwnerKey(tenant_id="t-two", owner_id=owner.owner_id)
    fill(h, owner, "mine")
    theirs = fill(h, twin, "theirs")
    before = h.engine.get_stats(twin)

    h.engine.erase_owner(owner, confirm=owner.owner_id)

    assert h.engine.get_stats(twin) == before
    assert h.engine.get_retrieval_receipt(twin, theirs.request_id).request_id
    assert (
        CredentialService(h.credentials, h.clock).authenticate(theirs.secret).tenant_id == "t-two"
    )
    assert h.engine.get_stats(owner).events == 0


def test_an_erase_is_refused_unless_confirm_repeats_the_user_id(harness: Harness) -> None:
    owner = _owner()
    fill(harness, owner, "kept")
    for confirm in ("", "someone-else", owner.owner_id.upper()):
        with pytest.raises(InvalidRequestError):
            harness.engine.erase_owner(owner, confirm=confirm)
    assert harness.engine.get_stats(owner).events == 6


def _small_steps(backend: str, request: pytest.FixtureRequest, tmp_path: object) -> Harness:
    config = EngineConfig(erase_records_per_call=7)
    if backend == "memory":
        return memory_harness(config)
    if backend == "embedded":
        from pathlib import Path

        assert isinstance(tmp_path, Path)
        return embedded_harness(tmp_path / "data", config)
    dynamodb, table, opensearch, alias = request.getfixturevalue("aws_resources")
    return aws_harness(dynamodb, table, opensearch, alias, config)


@pytest.mark.parametrize("backend", ["memory", "embedded", "aws"])
def test_a_large_owner_is_erased_over_several_calls_with_one_truthful_receipt(
    backend: str, request: pytest.FixtureRequest, tmp_path: object
) -> None:
    h = _small_steps(backend, request, tmp_path)
    owner = _owner()
    marker = _marker()
    fill(h, owner, marker)

    receipts = []
    for _ in range(40):
        receipts.append(h.engine.erase_owner(owner, confirm=owner.owner_id))
        if receipts[-1].complete:
            break
    assert len(receipts) > 3, "a budget of 7 records a call takes several calls"
    assert [r.complete for r in receipts] == [False] * (len(receipts) - 1) + [True]
    assert len({r.started_at for r in receipts}) == 1
    totals = [r.removed.total for r in receipts]
    assert totals == sorted(totals)
    # Each call removed at most its budget of ledger records (keys and index apart).
    ledger_totals = [
        r.removed.total - r.removed.index_documents - r.removed.api_keys for r in receipts
    ]
    steps = [b - a for a, b in zip([0, *ledger_totals], ledger_totals, strict=False)]
    assert max(steps) <= 7
    assert receipts[-1].removed.events == 6
    assert _mentions(h, marker, owner.owner_id) == []
    # A repeated erase of an erased owner answers with the same receipt.
    assert h.engine.erase_owner(owner, confirm=owner.owner_id) == receipts[-1]


def test_an_index_outage_part_way_is_finished_by_the_next_call(any_backend: Harness) -> None:
    h = any_backend
    owner = _owner()
    marker = _marker()
    filled = fill(h, owner, marker)
    switch = SwitchableIndex(h.index)
    down_engine = MemoryEngine(EngineDeps(**{**h.engine.deps.__dict__, "index": switch}))
    switch.down = True

    with pytest.raises(IndexUnavailableError):
        down_engine.erase_owner(owner, confirm=owner.owner_id)
    # The keys went first: the owner can no longer write while the erase is unfinished.
    with pytest.raises(AuthenticationError):
        CredentialService(h.credentials, h.clock).authenticate(filled.secret)
    assert h.engine.get_stats(owner).events == 6
    switch.down = False
    receipt = down_engine.erase_owner(owner, confirm=owner.owner_id)

    assert receipt.complete and receipt.removed.api_keys == 1 and receipt.removed.events == 6
    assert _mentions(h, marker, owner.owner_id) == []


def test_queued_work_of_an_erased_owner_is_dropped_without_error(any_backend: Harness) -> None:
    h = any_backend
    owner = _owner()
    fill(h, owner, _marker())
    queued = [WorkRef.of(item) for item in h.queue.sent if item.owner == owner]
    assert queued, "the fixture queues work"

    h.engine.erase_owner(owner, confirm=owner.owner_id)
    report = h.engine.process_queued(queued)

    assert (report.processed, report.failed) == (0, 0)
    assert h.engine.get_stats(owner).events == 0
    assert _mentions(h, owner.owner_id) == []


def test_an_import_submitted_before_the_erasure_saves_nothing_and_a_later_one_saves(
    harness: Harness,
) -> None:
    h = harness
    owner = _owner()
    fill(h, owner, _marker())
    request = BulkImportInput(items=[FastIngestItem(content="An import queued before the erasure")])
    h.engine.submit_import(owner, request)
    (late,) = h.import_queue.sent
    h.clock.advance(seconds=5)
    h.engine.erase_owner(owner, confirm=owner.owner_id)

    outcome = h.engine.commit_import_chunk(late)

    assert (outcome.accepted, outcome.dropped_for_erasure) == (0, True)
    assert h.engine.get_stats(owner).events == 0
    h.clock.advance(seconds=5)
    h.engine.submit_import(owner, request)
    after = h.engine.commit_import_chunk(h.import_queue.sent[-1])
    assert (after.accepted, after.dropped_for_erasure) == (1, False)
    # A user never erased imports as before.
    other = _owner()
    h.engine.submit_import(other, request)
    assert h.engine.commit_import_chunk(h.import_queue.sent[-1]).accepted == 1


# Threads only on the two backends whose transactions are atomic across threads here: moto
# runs two concurrent TransactWriteItems without isolating them (both may pass their
# conditions), which DynamoDB never does; the AWS adapter's conditions are held to it below.
@pytest.mark.parametrize("backend", ["memory", "embedded"])
def test_concurrent_erase_calls_of_one_owner_count_every_record_once(
    backend: str, request: pytest.FixtureRequest, tmp_path: object
) -> None:
    h = _small_steps(backend, request, tmp_path)
    alone, raced = _owner(), _owner()
    for owner in (alone, raced):
        for i in range(4):
            h.engine.store(owner, StoreInput(content=f"the same words for both, {i}"))
        items = [{"content": f"imported {i}"} for i in range(20)]
        h.engine.ingest_fast(owner, FastIngestInput.model_validate({"items": items}))
        CredentialService(h.credentials, h.clock).create(
            tenant_id=owner.tenant_id, owner_id=owner.owner_id, role=CredentialRole.OWNER
        )

    def erase_until_complete(owner: OwnerKey) -> OwnerErasure:
        for _ in range(80):
            receipt = h.engine.erase_owner(owner, confirm=owner.owner_id)
            if receipt.complete:
                return receipt
        raise AssertionError("the erasure never completed")

    expected = erase_until_complete(alone).removed
    # Two callers at once (a client retrying while its first call still runs).
    with ThreadPoolExecutor(max_workers=2) as pool:
        receipts = list(pool.map(erase_until_complete, [raced, raced]))

    assert [r.removed for r in receipts] == [expected, expected]
    assert receipts[0] == receipts[1]


def test_a_spent_request_deadline_stops_the_steps_and_the_next_call_continues(
    harness: Harness,
) -> None:
    h = harness
    owner = _owner()
    fill(h, owner, _marker())

    with deadline_scope(0):
        cut = h.engine.erase_owner(owner, confirm=owner.owner_id)

    assert not cut.complete
    assert (cut.removed.api_keys, cut.removed.events) == (1, 0)
    done = h.engine.erase_owner(owner, confirm=owner.owner_id)
    assert done.complete and done.removed.events == 6 and done.started_at == cut.started_at


def test_an_owner_larger_than_one_transaction_is_erased_in_one_call(any_backend: Harness) -> None:
    h = any_backend
    owner = _owner()
    for batch in range(3):
        items = [{"content": f"imported note {batch}-{i}"} for i in range(49)]
        h.engine.ingest_fast(owner, FastIngestInput.model_validate({"items": items}))

    receipt = h.engine.erase_owner(owner, confirm=owner.owner_id)

    # 147 events, their 147 pending work items and 3 journal records: more than the 100
    # actions of one DynamoDB transaction, fewer than one call's budget.
    assert receipt.complete
    assert (receipt.removed.events, receipt.removed.work_items) == (147, 147)
    assert receipt.removed.journal_records == 3
    assert _mentions(h, owner.owner_id) == []


def test_a_step_from_a_stale_erasure_record_removes_nothing(any_backend: Harness) -> None:
    h = any_backend
    owner = _owner()
    for i in range(5):
        h.engine.store(owner, StoreInput(content=f"memory {i}"))
    started = OwnerErasure(
        erasure_id=owner_reference(owner.tenant_id, owner.owner_id),
        started_at=h.clock.now(),
        finished_at=None,
        complete=False,
        removed=ErasureCounts(),
    )
    h.ledger.save_erasure(started, owner.tenant_id, replacing=None)
    # Another call's step moves the record on; this call still holds the one it read.
    moved = h.ledger.erase_owner_step(owner, started, 3)
    left = h.engine.get_stats(owner)

    with pytest.raises(ConflictError):
        h.ledger.erase_owner_step(owner, started, 3)
    with pytest.raises(ConflictError):
        h.ledger.save_erasure(started, owner.tenant_id, replacing=None)

    assert h.engine.get_stats(owner) == left
    assert h.ledger.get_erasure(owner.tenant_id, started.erasure_id) == moved
    assert moved.removed.total == 3

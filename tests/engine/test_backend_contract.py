"""One suite over every backend: the engine and its ports behave identically on each."""

from __future__ import annotations

from typing import Any

import pytest

from prme.engine.store import build_store_commit
from prme.errors import ConflictError, NotFoundError
from prme.model.enums import ProcessingStatus, WorkStatus
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.records import OwnerKey
from prme.model.search import IndexQuery
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness
from tests.harness.switchable_index import SwitchableIndex


def store(h: Harness, content: str, owner: OwnerKey = ALICE, **fields: Any) -> Any:
    return h.engine.store(owner, StoreInput.model_validate({"content": content, **fields}))


def test_store_then_read_event_nodes_and_status(any_backend: Harness) -> None:
    h = any_backend
    result = store(
        h, "I adopted a dog named Rex.", session_id="s1", event_time="2023-05-08T13:56:00+02:00"
    )
    assert result.processing_status is ProcessingStatus.COMPLETED
    event = h.engine.get_event(ALICE, result.event_id)
    assert event.content == "I adopted a dog named Rex."
    assert event.event_time is not None and event.event_time.utcoffset() is not None
    nodes = h.engine.get_event_nodes(ALICE, result.event_id)
    assert [n.id for n in nodes] == [result.node_id]
    assert nodes[0].session_id == "s1"
    assert nodes[0].event_time == event.event_time
    status, work = h.engine.get_processing_status(ALICE, result.event_id)
    assert status is ProcessingStatus.COMPLETED
    assert [w.status for w in work] == [WorkStatus.DONE]


def test_foreign_ids_read_as_not_found(any_backend: Harness) -> None:
    h = any_backend
    result = store(h, "private note")
    for owner in (BOB, OTHER_TENANT_ALICE):
        with pytest.raises(NotFoundError):
            h.engine.get_event(owner, result.event_id)
        with pytest.raises(NotFoundError):
            h.engine.get_node(owner, result.node_id)
        with pytest.raises(NotFoundError):
            h.engine.get_event_nodes(owner, result.event_id)
        with pytest.raises(NotFoundError):
            h.engine.get_processing_status(owner, result.event_id)
    response = h.engine.retrieve(ALICE, RetrieveInput(query="private note"))
    with pytest.raises(NotFoundError):
        h.engine.get_retrieval_receipt(BOB, response.metrics.request_id)


def test_tenants_and_owners_never_see_each_other(any_backend: Harness) -> None:
    h = any_backend
    store(h, "alpha launch codes", owner=ALICE)
    store(h, "alpha launch codes", owner=BOB)
    store(h, "alpha launch codes", owner=OTHER_TENANT_ALICE)
    for owner in (ALICE, BOB, OTHER_TENANT_ALICE):
        results = h.engine.retrieve(owner, RetrieveInput(query="alpha launch codes")).results
        assert len(results) == 1
        assert h.engine.get_node(owner, results[0].node_id).owner_id == owner.owner_id


def test_index_outage_leaves_work_pending_until_next_pass(any_backend: Harness) -> None:
    h = any_backend
    switch = SwitchableIndex(h.index)
    deps = h.engine.deps
    engine = type(h.engine)(type(deps)(**{**deps.__dict__, "index": switch}))
    switch.down = True
    result = engine.store(ALICE, StoreInput(content="saved during an outage"))
    assert result.processing_status is ProcessingStatus.PENDING
    assert result.node_id is not None
    # The node is saved and readable even though the index write failed.
    assert engine.get_node(ALICE, result.node_id).content == "saved during an outage"
    assert engine.get_processing_status(ALICE, result.event_id)[0] is ProcessingStatus.PENDING
    assert [w.id for w in h.queue.sent] == [
        engine.get_processing_status(ALICE, result.event_id)[1][0].id
    ]
    assert engine.process_materializations(ALICE, budget_ms=0).pending == 1
    switch.down = False
    report = engine.process_materializations(ALICE)
    assert (report.processed, report.pending, report.failed) == (1, 0, 0)
    assert engine.get_processing_status(ALICE, result.event_id)[0] is ProcessingStatus.COMPLETED
    hits = engine.retrieve(ALICE, RetrieveInput(query="outage")).results
    assert [r.node_id for r in hits] == [result.node_id]


def test_lost_queue_send_loses_nothing(any_backend: Harness) -> None:
    h = any_backend
    switch = SwitchableIndex(h.index)
    deps = h.engine.deps
    engine = type(h.engine)(type(deps)(**{**deps.__dict__, "index": switch}))
    switch.down = True
    h.queue.fail = True
    result = engine.store(ALICE, StoreInput(content="queue send lost"))
    assert result.processing_status is ProcessingStatus.PENDING
    switch.down = False
    assert engine.process_materializations(None).processed == 1


def test_ledger_rejects_another_write_of_an_existing_event(any_backend: Harness) -> None:
    h = any_backend
    commit = build_store_commit(h.engine.deps, ALICE, StoreInput(content="once"))
    h.ledger.commit_store(commit)
    # The very same commit again (a retry after a lost answer) is a no-op...
    h.ledger.commit_store(commit)
    assert h.ledger.count_pending_work(ALICE) == 1
    # ...but another write reusing its event id is a conflict and writes nothing.
    other = build_store_commit(h.engine.deps, ALICE, StoreInput(content="twice"))
    clash = other.model_copy(update={"event": commit.event})
    with pytest.raises(ConflictError):
        h.ledger.commit_store(clash)
    assert h.ledger.get_journal(ALICE, other.journal.id) is None
    assert h.ledger.count_pending_work(ALICE) == 1


def test_index_upsert_replaces_by_node_id(any_backend: Harness) -> None:
    h = any_backend
    result = store(h, "original words here")
    node = h.engine.get_node(ALICE, result.node_id)
    from prme.engine.indexing import index_document

    vector = h.embedder.embed(["replacement text"])[0]
    h.index.upsert(
        [
            index_document(
                node.model_copy(update={"content": "replacement text"}),
                vector,
                h.embedder.model.key,
            )
        ]
    )
    hits = h.index.search(
        ALICE,
        IndexQuery(
            text="replacement",
            vector=tuple(float(x) for x in vector),
            embedding_model=h.embedder.model.key,
        ),
    )
    assert [nid for nid, _ in hits.lexical] == [result.node_id]
    assert h.index.search(ALICE, IndexQuery(text="original")).lexical == ()
    assert len(hits.vector) == 1


def test_index_filters_apply_in_both_channels(any_backend: Harness) -> None:
    h = any_backend
    store(h, "shared words kept", node_type="fact")
    excluded = store(h, "shared words dropped", node_type="note")
    response = h.engine.retrieve(
        ALICE,
        RetrieveInput.model_validate(
            {"query": "shared words", "filters": {"exclude_node_types": ["note"]}}
        ),
    )
    receipt = h.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    assert excluded.node_id not in {c.node_id for c in receipt.candidates}


def test_expired_nodes_leave_retrieval_at_expiry(any_backend: Harness) -> None:
    h = any_backend
    result = store(h, "temporary door code 4411", ttl_days=1)
    assert h.engine.retrieve(ALICE, RetrieveInput(query="door code")).results
    h.clock.advance(days=1, seconds=1)
    assert h.engine.retrieve(ALICE, RetrieveInput(query="door code")).results == []
    # The source and node stay readable.
    assert h.engine.get_event(ALICE, result.event_id).content == "temporary door code 4411"


def test_receipts_are_saved_and_replay(any_backend: Harness) -> None:
    h = any_backend
    for i in range(4):
        store(h, f"concert number {i} in Berlin", event_time=f"202{i}-01-01T00:00:00Z")
    response = h.engine.retrieve(ALICE, RetrieveInput(query="Berlin concert"))
    assert response.metrics.receipt_persisted
    receipt = h.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    assert receipt.replay_matches()
    assert receipt.returned_node_ids == [r.node_id for r in response.results]


def test_expired_nodes_are_archived_by_maintenance_with_a_journal_record(
    any_backend: Harness,
) -> None:
    h = any_backend
    short = store(h, "door code 4411 for the week", ttl_days=1)
    lasting = store(h, "door code history", ttl_days=None)
    assert h.engine.archive_expired() == 0
    h.clock.advance(days=1, seconds=1)
    assert h.engine.archive_expired() == 1
    assert h.engine.archive_expired() == 0  # a second pass archives nothing twice
    node = h.engine.get_node(ALICE, short.node_id)
    assert node.lifecycle_state.value == "archived"
    assert h.engine.get_node(ALICE, lasting.node_id).lifecycle_state.value == "tentative"
    assert h.engine.get_event(ALICE, short.event_id).content == "door code 4411 for the week"
    # The index learns the new state through ordinary work.
    assert h.engine.process_materializations(ALICE).processed == 1
    explicit = h.engine.retrieve(
        ALICE, RetrieveInput.model_validate({"query": "door code", "mode": "explicit"})
    )
    assert [r.node_id for r in explicit.results] == [lasting.node_id]

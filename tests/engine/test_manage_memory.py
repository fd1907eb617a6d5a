"""Managing an owner's memory on every backend: paged listings with filters, deleting one
memory (from every read, retrieval and the index), and per-owner counts."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from prme.backends.aws.dynamodb_ledger import _pk_of
from prme.backends.aws.resources import SORT_KEY
from prme.backends.memory.fakes import InMemoryIndex
from prme.engine.identity import Principal
from prme.engine.indexing import index_nodes
from prme.errors import (
    ConflictError,
    IndexUnavailableError,
    InvalidRequestError,
    NotFoundError,
    StorageUnavailableError,
)
from prme.model.aliases import AliasDecision
from prme.model.canonical import checksum
from prme.model.enums import LifecycleState, NodeType, Role, Scope
from prme.model.inputs import FastIngestInput, FastIngestItem, RetrieveInput, StoreInput
from prme.model.listings import EventFilter, NodeFilter
from prme.model.portability import EXPORT_FORMAT_VERSION, ImportBatch
from prme.model.records import JournalRecord, MemoryEdge, MemoryNode, NodeChange, OwnerKey
from prme.model.search import IndexQuery
from tests.harness.aws import aws_harness
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness, memory_harness


def _all_nodes(h: Harness, owner: OwnerKey, flt: NodeFilter, limit: int) -> list[MemoryNode]:
    seen: list[MemoryNode] = []
    after: str | None = None
    for _ in range(50):
        page = h.engine.list_nodes(owner, flt, limit=limit, after_id=after)
        assert len(page.items) <= limit
        seen.extend(page.items)
        if page.next_after_id is None:
            return seen
        after = page.next_after_id
    raise AssertionError("the listing never ended")


def _remember(h: Harness, owner: OwnerKey, content: str, **fields: object) -> tuple[str, str]:
    """The event id and node id of a direct store."""
    result = h.engine.store(owner, StoreInput.model_validate({"content": content, **fields}))
    assert result.node_id is not None
    return result.event_id, result.node_id


def _store(h: Harness, owner: OwnerKey, content: str, **fields: object) -> str:
    return _remember(h, owner, content, **fields)[1]


def test_node_pages_cover_every_node_once_in_id_order(any_backend: Harness) -> None:
    h = any_backend
    kinds = [NodeType.FACT, NodeType.NOTE, NodeType.PREFERENCE] * 3
    ids = [
        _store(h, ALICE, f"Alice memory {i}", node_type=kind, session_id=f"s{i % 2}")
        for i, kind in enumerate(kinds)
    ]
    _store(h, BOB, "Bob memory")
    _store(h, OTHER_TENANT_ALICE, "Other tenant memory")

    for limit in (1, 2, 4, 100):
        listed = _all_nodes(h, ALICE, NodeFilter(), limit)
        assert [n.id for n in listed] == sorted(ids)

    facts = _all_nodes(h, ALICE, NodeFilter(node_type=NodeType.FACT), 2)
    assert sorted(n.id for n in facts) == sorted(ids[0::3])
    session = _all_nodes(h, ALICE, NodeFilter(session_id="s1"), 2)
    assert sorted(n.id for n in session) == sorted(ids[1::2])
    assert _all_nodes(h, ALICE, NodeFilter(scope=Scope.PROJECT), 3) == []
    assert [n.id for n in _all_nodes(h, BOB, NodeFilter(), 5)] != []
    assert all(n.owner_id == "bob" for n in _all_nodes(h, BOB, NodeFilter(), 5))


def test_archived_nodes_are_listed_only_when_asked(any_backend: Harness) -> None:
    h = any_backend
    kept = _store(h, ALICE, "A memory that stays")
    archived = _store(h, ALICE, "A memory that is archived")
    h.engine.archive(ALICE, archived)

    assert [n.id for n in _all_nodes(h, ALICE, NodeFilter(), 10)] == [kept]
    both = _all_nodes(h, ALICE, NodeFilter(include_inactive=True), 10)
    assert sorted(n.id for n in both) == sorted([kept, archived])
    only = _all_nodes(h, ALICE, NodeFilter(lifecycle_state=LifecycleState.ARCHIVED), 10)
    assert [n.id for n in only] == [archived]


def test_event_pages_filter_by_session_and_role(any_backend: Harness) -> None:
    h = any_backend
    said = [
        h.engine.store(
            ALICE, StoreInput(content=f"line {i}", role=role, session_id=f"chat{i % 2}")
        ).event_id
        for i, role in enumerate([Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT, Role.USER])
    ]
    h.engine.store(BOB, StoreInput(content="Bob line"))

    seen: list[str] = []
    after: str | None = None
    while True:
        page = h.engine.list_events(ALICE, limit=2, after_id=after)
        seen.extend(e.id for e in page.items)
        if page.next_after_id is None:
            break
        after = page.next_after_id
    assert seen == sorted(said)
    users = h.engine.list_events(ALICE, EventFilter(role=Role.USER), limit=100)
    assert sorted(e.id for e in users.items) == sorted(said[0::2])
    chat1 = h.engine.list_events(ALICE, EventFilter(session_id="chat1"), limit=100)
    assert sorted(e.id for e in chat1.items) == sorted(said[1::2])


def test_a_filtered_page_reads_a_bounded_number_of_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = memory_harness()
    from prme.engine import manage

    monkeypatch.setattr(manage, "SCAN_BUDGET", 3)
    ids = sorted(_store(h, ALICE, f"note {i}") for i in range(5))
    fact = _store(h, ALICE, "the one fact", node_type=NodeType.FACT)
    page = h.engine.list_nodes(ALICE, NodeFilter(node_type=NodeType.FACT), limit=10)
    # Three records read, none of them (maybe) the fact: a short page with a cursor to go on.
    assert page.next_after_id == sorted([*ids, fact])[2]
    assert [n.id for n in _all_nodes(h, ALICE, NodeFilter(node_type=NodeType.FACT), 10)] == [fact]


def test_a_small_filtered_page_reads_the_ledger_in_few_calls() -> None:
    h = memory_harness()
    for i in range(300):
        h.engine.store(ALICE, StoreInput(content=f"note {i}", session_id="busy"))
    last = _store(h, ALICE, "the one in its own session", session_id="rare")
    calls: list[int] = []
    read = h.ledger.list_events_page

    def counted(owner: OwnerKey, *, after_id: str | None, limit: int) -> Any:
        calls.append(limit)
        return read(owner, after_id=after_id, limit=limit)

    h.ledger.list_events_page = counted  # type: ignore[method-assign]
    # limit=1 with a filter few records match: not one ledger round trip per record read.
    pages = [h.engine.list_events(ALICE, EventFilter(session_id="rare"), limit=1)]
    while pages[-1].next_after_id is not None:
        after = pages[-1].next_after_id
        pages.append(
            h.engine.list_events(ALICE, EventFilter(session_id="rare"), limit=1, after_id=after)
        )
    found = [e.id for page in pages for e in page.items]
    assert found == [h.engine.get_node(ALICE, last).evidence_refs[0]]
    assert len(calls) <= 10, len(calls)


def test_page_limits_are_bounded(harness: Harness) -> None:
    for limit in (0, 1001):
        with pytest.raises(InvalidRequestError):
            harness.engine.list_nodes(ALICE, limit=limit)


def _searchable(h: Harness, owner: OwnerKey, text: str) -> set[str]:
    hits = h.index.search(owner, IndexQuery(text=text))
    return {node_id for node_id, _ in hits.lexical}


def _search_all(h: Harness, text: str) -> set[str]:
    hits = h.index.search(ALICE, IndexQuery(text=text, lexical_k=200))
    return {node_id for node_id, _ in hits.lexical}


def test_deleting_a_memory_removes_it_from_every_read(any_backend: Harness) -> None:
    h = any_backend
    doomed_event, doomed_node = _remember(h, ALICE, "My locker code is zebra 4471")
    kept_event, kept_node = _remember(h, ALICE, "My bike is a green zebra model")
    bob_node = _store(h, BOB, "Bob also likes zebra crossings")
    assert doomed_node in _searchable(h, ALICE, "zebra")

    # Another owner's delete of the id finds nothing and changes nothing.
    with pytest.raises(NotFoundError):
        h.engine.delete_memory(BOB, doomed_event)
    assert h.engine.get_node(ALICE, doomed_node).content.startswith("My locker")

    deletion = h.engine.delete_memory(ALICE, doomed_event)
    assert deletion.event_id == doomed_event
    assert deletion.deleted_node_ids == [doomed_node]

    with pytest.raises(NotFoundError):
        h.engine.get_event(ALICE, doomed_event)
    with pytest.raises(NotFoundError):
        h.engine.get_node(ALICE, doomed_node)
    with pytest.raises(NotFoundError):
        h.engine.get_event_nodes(ALICE, doomed_event)
    assert _searchable(h, ALICE, "zebra") == {kept_node}
    results = h.engine.retrieve(ALICE, RetrieveInput(query="zebra locker code")).results
    assert [r.node_id for r in results] == [kept_node]
    listed = _all_nodes(h, ALICE, NodeFilter(include_inactive=True), 10)
    assert [n.id for n in listed] == [kept_node]
    assert [e.id for e in h.engine.list_events(ALICE).items] == [kept_event]
    # Other memories untouched, the other owner's too.
    assert h.engine.get_node(BOB, bob_node).content.startswith("Bob also")
    assert _searchable(h, BOB, "zebra") == {bob_node}

    # The journal keeps ids and counts, never the content.
    record = h.ledger.get_journal(ALICE, deletion.journal_id)
    assert record is not None
    assert "locker" not in record.model_dump_json()
    # A repeated delete answers with the same record; a never-stored id is not found.
    assert h.engine.delete_memory(ALICE, doomed_event) == deletion
    with pytest.raises(NotFoundError):
        h.engine.delete_memory(ALICE, "0b8f6a52-4c1e-4c2d-9a57-2f1d7e9c3b10")


def test_deleting_removes_pending_work(any_backend: Harness) -> None:
    h = any_backend
    saved = h.engine.ingest_fast(
        ALICE, FastIngestInput(items=[FastIngestItem(content="waiting to be built")])
    )
    (event_id,) = saved.event_ids
    assert h.engine.get_stats(ALICE).pending_materializations == 1
    h.engine.delete_memory(ALICE, event_id)
    stats = h.engine.get_stats(ALICE)
    assert (stats.events, stats.nodes, stats.pending_materializations) == (0, 0, 0)
    assert h.engine.process_materializations(ALICE).processed == 0


def test_a_delete_whose_index_step_failed_completes_on_retry() -> None:
    h = memory_harness()
    event_id, node_id = _remember(h, ALICE, "delete me, zebra")
    assert isinstance(h.index, InMemoryIndex)
    h.index.available = False
    with pytest.raises(IndexUnavailableError):
        h.engine.delete_memory(ALICE, event_id)
    # Nothing is deleted yet: the index documents go before the ledger records.
    assert h.engine.get_node(ALICE, node_id).id == node_id
    h.index.available = True
    assert _searchable(h, ALICE, "zebra") == {node_id}
    assert h.engine.delete_memory(ALICE, event_id).deleted_node_ids == [node_id]
    assert _searchable(h, ALICE, "zebra") == set()


def test_stats_count_events_nodes_and_pending_work(any_backend: Harness) -> None:
    h = any_backend
    _store(h, ALICE, "a fact", node_type=NodeType.FACT)
    _store(h, ALICE, "a note")
    archived = _store(h, ALICE, "an old note")
    h.engine.archive(ALICE, archived)
    _store(h, BOB, "Bob's")
    stats = h.engine.get_stats(ALICE)
    assert stats.events == 3
    assert stats.nodes == 3
    assert sum(stats.nodes_by_lifecycle_state.values()) == 3
    assert stats.nodes_by_lifecycle_state[LifecycleState.ARCHIVED] == 1
    assert stats.nodes_by_type == {NodeType.FACT: 1, NodeType.NOTE: 2}
    # The archive's index update waits until a pass runs it.
    assert (stats.pending_materializations, stats.pending_extractions) == (1, 0)
    h.engine.process_materializations(ALICE)
    assert h.engine.get_stats(ALICE).pending_materializations == 0
    assert h.engine.get_stats(OTHER_TENANT_ALICE).events == 0


def _derive_sixty(h: Harness, event_id: str, node_id: str, word: str) -> list[MemoryNode]:
    """Sixty more nodes derived from the event (copies of its node, content `word b.i`),
    committed to the ledger in three batches; not indexed."""
    first = h.engine.get_node(ALICE, node_id)
    derived: list[MemoryNode] = []
    for batch in range(3):
        new_nodes = tuple(
            first.model_copy(update={"id": str(uuid.uuid4()), "content": f"{word} {batch}.{i}"})
            for i in range(20)
        )
        h.ledger.commit_node_change(
            NodeChange(
                updates=(),
                new_nodes=new_nodes,
                journal=JournalRecord.build(
                    record_id=f"test-derived:{batch}",
                    owner=ALICE,
                    operation="test_derived",
                    subject_id=event_id,
                    created_at=first.created_at,
                    payload={},
                ),
            )
        )
        derived.extend(new_nodes)
    return derived


def test_deleting_an_event_with_more_records_than_one_transaction(any_backend: Harness) -> None:
    h = any_backend
    event_id, node_id = _remember(h, ALICE, "a source with many derived memories")
    _, kept = _remember(h, ALICE, "an unrelated memory")
    # Node and evidence link are two items each: 61 nodes do not fit one DynamoDB transaction.
    derived = [node_id] + [n.id for n in _derive_sixty(h, event_id, node_id, "derived")]
    assert len(h.engine.get_event_nodes(ALICE, event_id)) == 61

    deletion = h.engine.delete_memory(ALICE, event_id)
    assert sorted(deletion.deleted_node_ids) == sorted(derived)
    assert h.ledger.get_nodes(ALICE, derived) == {}
    assert h.ledger.get_event(ALICE, event_id) is None
    listed = _all_nodes(h, ALICE, NodeFilter(include_inactive=True), 100)
    assert [n.id for n in listed] == [kept]


def test_a_node_built_while_its_event_was_deleted_does_not_come_back(
    any_backend: Harness,
) -> None:
    h = any_backend
    saved = h.engine.ingest_fast(
        ALICE, FastIngestInput(items=[FastIngestItem(content="built during the delete")])
    )
    (event_id,) = saved.event_ids
    (work,) = h.ledger.list_pending_work(ALICE, 10)
    template = h.engine.get_node(ALICE, _store(h, ALICE, "a template node"))
    # A pass read the work item and built the node; the delete commits before the pass does.
    built = template.model_copy(update={"id": str(uuid.uuid4()), "evidence_refs": (event_id,)})
    h.engine.delete_memory(ALICE, event_id)
    with pytest.raises(ConflictError):
        h.ledger.commit_materialization(built, work.succeeded(h.clock.now()))
    assert h.ledger.get_node(ALICE, built.id) is None


def test_an_extraction_committed_after_its_event_was_deleted_does_not_come_back(
    any_backend: Harness,
) -> None:
    h = any_backend
    event_id, _ = _remember(h, ALICE, "the deleted source")
    (work,) = h.ledger.list_event_work(ALICE, event_id)
    template = h.engine.get_node(ALICE, _store(h, ALICE, "a template node"))
    built = template.model_copy(update={"id": str(uuid.uuid4()), "evidence_refs": (event_id,)})
    h.engine.delete_memory(ALICE, event_id)
    change = NodeChange(
        updates=(),
        new_nodes=(built,),
        work_updates=(work.succeeded(h.clock.now()),),
        journal=JournalRecord.build(
            record_id="test-late-extraction",
            owner=ALICE,
            operation="test_extraction",
            subject_id=event_id,
            created_at=h.clock.now(),
            payload={},
        ),
    )
    with pytest.raises(ConflictError):
        h.ledger.commit_node_change(change)
    assert h.ledger.get_node(ALICE, built.id) is None


def test_a_deleted_memory_leaves_no_alias_proposal_naming_it(any_backend: Harness) -> None:
    h = any_backend
    doomed_event, doomed = _remember(h, ALICE, "IBM", node_type="entity")
    _store(h, ALICE, "International Business Machines", node_type="entity")
    kept_a = _store(h, ALICE, "Lisbon Portugal", node_type="entity")
    kept_b = _store(h, ALICE, "Lisbon, Portugal", node_type="entity")
    h.engine.propose_aliases(ALICE)
    proposals = h.engine.list_alias_proposals(ALICE)
    assert len(proposals) == 2
    assert any(doomed in p.proposal.node_ids for p in proposals)

    doomed_pair = next(p for p in proposals if doomed in p.proposal.node_ids)
    review = h.engine.review_alias_proposal(
        ALICE,
        doomed_pair.proposal_operation_id,
        actor=Principal.owner(ALICE.tenant_id, ALICE.owner_id, key_id="reviewer-key"),
        decision=AliasDecision.REJECTED,
        reviewer_id="human:catalog",
        reason="different companies",
    )
    assert review.review_journal is not None

    deletion = h.engine.delete_memory(ALICE, doomed_event)

    # A proposal carries its nodes' names (their content): one naming a deleted node goes,
    # from the listing and from the journal, with its review.
    assert deletion.alias_proposals_removed == 1
    [left] = h.engine.list_alias_proposals(ALICE)
    assert set(left.proposal.node_ids) == {kept_a, kept_b}
    journal = h.ledger.list_journal(ALICE, "", limit=1000)
    assert [r.id for r in journal if "IBM" in r.model_dump_json()] == []
    assert review.review_journal.id not in {r.id for r in journal}


def _with_binding(h: Harness) -> tuple[str, str]:
    """A stored city with its value binding, and the id of a retrieval that showed it."""
    event_id, _ = _remember(
        h,
        ALICE,
        "Current City: Salt Lake City(Utah)",
        value_bindings=[
            {
                "reference": "current-city-1",
                "kind": "city",
                "presentation": "Salt Lake City(Utah)",
                "lookup": "Salt Lake City",
            }
        ],
    )
    retrieval = h.engine.retrieve(ALICE, RetrieveInput(query="Which city?"))
    assert retrieval.value_bindings
    return event_id, retrieval.metrics.request_id


def test_a_deleted_memory_resolves_no_tool_argument(any_backend: Harness) -> None:
    h = any_backend
    event_id, request_id = _with_binding(h)
    arguments = {"city": "Salt Lake City(Utah)"}
    assert h.engine.resolve_tool_arguments(ALICE, request_id, arguments).arguments == {
        "city": "Salt Lake City"
    }

    h.engine.delete_memory(ALICE, event_id)

    # The memory is gone: a tool call made from the old context gets no value from it.
    resolved = h.engine.resolve_tool_arguments(ALICE, request_id, arguments)
    assert resolved.arguments == arguments
    assert resolved.binding_uses == []


def test_a_deleted_memory_leaves_no_value_in_receipts(any_backend: Harness) -> None:
    h = any_backend
    event_id, request_id = _with_binding(h)
    receipt = h.engine.get_retrieval_receipt(ALICE, request_id)
    # The receipt names the exposed binding by node, reference and digest, never by its forms.
    assert [b.reference for b in receipt.context.visible_value_bindings] == ["current-city-1"]
    assert "Salt Lake City" not in receipt.model_dump_json()
    h.engine.delete_memory(ALICE, event_id)
    kept = h.engine.get_retrieval_receipt(ALICE, request_id).model_dump_json()
    assert "Salt Lake City" not in kept
    # Nor a digest anyone can recompute by guessing cities: it is keyed by the deleted content.
    assert checksum(["Salt Lake City(Utah)", "Salt Lake City"]) not in kept


def _delete_after_a_failure_between_transactions(
    h: Harness, event_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Delete the event on DynamoDB once with a failure after the first transaction (records
    that do not fit next to the event), then again with none."""
    ledger: Any = h.ledger
    transact, calls = ledger._transact, []

    def fail_after_the_first(actions: Any) -> None:
        calls.append(len(actions))
        if len(calls) > 1:
            raise StorageUnavailableError()
        transact(actions)

    monkeypatch.setattr(ledger, "_transact", fail_after_the_first)
    with pytest.raises(StorageUnavailableError):
        h.engine.delete_memory(ALICE, event_id)
    monkeypatch.setattr(ledger, "_transact", transact)
    h.engine.delete_memory(ALICE, event_id)


def test_a_retried_delete_removes_the_search_documents_of_a_failed_first_attempt(
    aws_resources: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    h = aws_harness(*aws_resources)
    event_id, node_id = _remember(h, ALICE, "a source with many zebra memories")
    assert index_nodes(h.engine.deps, _derive_sixty(h, event_id, node_id, "zebra")) is None
    assert len(_search_all(h, "zebra")) == 61

    _delete_after_a_failure_between_transactions(h, event_id, monkeypatch)
    assert _search_all(h, "zebra") == set()


def test_a_retried_write_after_its_memory_was_deleted_is_a_conflict_not_a_rewrite(
    any_backend: Harness,
) -> None:
    h = any_backend
    request = StoreInput(content="my locker code is in the blue notebook")
    first = h.engine.store(ALICE, request, idempotency_key="store-key-1")
    batch = FastIngestInput(items=[FastIngestItem(content="a batch line about herons")])
    [batch_event] = h.engine.ingest_fast(ALICE, batch, idempotency_key="batch-key-1").event_ids
    # Before the delete a retry answers as the first call did.
    assert h.engine.store(ALICE, request, idempotency_key="store-key-1") == first
    h.engine.delete_memory(ALICE, first.event_id)
    h.engine.delete_memory(ALICE, batch_event)

    with pytest.raises(ConflictError, match="deleted since"):
        h.engine.store(ALICE, request, idempotency_key="store-key-1")
    with pytest.raises(ConflictError, match="deleted since"):
        h.engine.ingest_fast(ALICE, batch, idempotency_key="batch-key-1")
    # Neither the old ids nor a new copy: the owner's delete stands.
    assert h.engine.list_events(ALICE).items == []
    # A new key stores the memory again.
    assert h.engine.store(ALICE, request, idempotency_key="store-key-2").event_id != first.event_id


def test_a_delete_that_fails_between_transactions_leaves_no_item_behind_after_the_retry(
    aws_resources: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    h = aws_harness(*aws_resources)
    event_id, node_id = _remember(h, ALICE, "a source with many linked memories")
    _, kept = _remember(h, ALICE, "an unrelated memory")
    derived = _derive_sixty(h, event_id, node_id, "linked")
    h.ledger.commit_node_change(
        NodeChange(
            updates=(),
            edges=tuple(
                MemoryEdge(
                    id=f"edge-{i}",
                    tenant_id=ALICE.tenant_id,
                    owner_id=ALICE.owner_id,
                    edge_type="related_to",
                    source_node_id=derived[i].id,
                    target_node_id=derived[i + 1].id,
                    created_at=derived[i].created_at,
                )
                for i in range(0, 60, 2)
            ),
            journal=JournalRecord.build(
                record_id="test-edges",
                owner=ALICE,
                operation="test_edges",
                subject_id=event_id,
                created_at=derived[0].created_at,
                payload={},
            ),
        )
    )
    ledger: Any = h.ledger
    _delete_after_a_failure_between_transactions(h, event_id, monkeypatch)

    # What the owner's partition holds of each kind belongs to the unrelated memory only: no
    # event, edge, node, evidence link or work item of the deleted source is left.
    gone = {node_id, event_id, *(n.id for n in derived), *(f"edge-{i}" for i in range(0, 60, 2))}
    left = [
        item[SORT_KEY]["S"]
        for kind in ("EVENT#", "NODE#", "EVNODE#", "EDGE#", "WORK#")
        for item in ledger._query_prefix(_pk_of(ALICE), kind)
    ]
    assert left
    assert [sk for sk in left if any(g in sk for g in gone)] == []
    assert h.engine.get_node(ALICE, kept).content == "an unrelated memory"


def test_deleting_a_source_that_reinforced_a_memory_keeps_the_memory_without_it(
    any_backend: Harness,
) -> None:
    h = any_backend
    source, node_id = _remember(h, ALICE, "Alice swims every Tuesday", node_type="fact")
    confirming, confirming_node = _remember(h, ALICE, "I went swimming again this Tuesday")
    reinforced = h.engine.reinforce(ALICE, node_id, evidence_id=confirming)
    assert reinforced.evidence_refs == (source, confirming)
    # The confirming source backs the memory it reinforced.
    assert {n.id for n in h.engine.get_event_nodes(ALICE, confirming)} == {
        node_id,
        confirming_node,
    }

    deletion = h.engine.delete_memory(ALICE, confirming)
    assert deletion.deleted_node_ids == [confirming_node]
    assert deletion.unlinked_node_ids == [node_id]
    kept = h.engine.get_node(ALICE, node_id)
    assert kept.evidence_refs == (source,)
    assert kept.confidence == reinforced.confidence
    assert [n.id for n in h.engine.get_event_nodes(ALICE, source)] == [node_id]
    # A repeated delete answers with the same record and changes nothing more.
    assert h.engine.delete_memory(ALICE, confirming) == deletion
    assert h.engine.get_node(ALICE, node_id) == kept


def _exported(h: Harness, owner: OwnerKey) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = h.engine.export_owner(owner, cursor)
        records += page.records
        if page.next_cursor is None:
            return records
        cursor = page.next_cursor


def _restore(h: Harness, owner: OwnerKey, records: list[dict[str, Any]]) -> None:
    h.engine.import_records(owner, ImportBatch(version=EXPORT_FORMAT_VERSION, records=records))


def test_a_memory_brought_back_by_an_import_can_be_deleted_again(any_backend: Harness) -> None:
    """Restoring an older export re-creates a deleted source under its id. Deleting it again
    answered 409 for ever (its first deletion's journal id was taken), and the source that
    reinforced a memory stayed in that memory's evidence (the unlink record's id was taken)."""
    h = any_backend
    source, node_id = _remember(h, ALICE, "Alice swims every Tuesday", node_type="fact")
    confirming, confirming_node = _remember(h, ALICE, "I went swimming again this Tuesday")
    h.engine.reinforce(ALICE, node_id, evidence_id=confirming)
    backup = _exported(h, ALICE)
    first = h.engine.delete_memory(ALICE, confirming)
    h.engine.delete_memory(ALICE, source)
    _restore(h, ALICE, backup)
    assert h.engine.get_node(ALICE, node_id).evidence_refs == (source, confirming)

    second = h.engine.delete_memory(ALICE, confirming)

    assert second.journal_id != first.journal_id
    assert (second.deleted_node_ids, second.unlinked_node_ids) == ([confirming_node], [node_id])
    assert h.ledger.get_event(ALICE, confirming) is None
    assert h.engine.get_node(ALICE, node_id).evidence_refs == (source,)
    assert confirming_node not in {n.id for n in h.ledger.list_nodes(ALICE)}
    # A retry answers with the latest deletion; a third round trip takes a third record.
    assert h.engine.delete_memory(ALICE, confirming) == second
    _restore(h, ALICE, backup)
    third = h.engine.delete_memory(ALICE, confirming)
    assert third.journal_id not in {first.journal_id, second.journal_id}
    assert h.ledger.get_event(ALICE, confirming) is None


def test_a_deleted_memory_leaves_no_words_in_the_journal(any_backend: Harness) -> None:
    h = any_backend
    event_id, _ = _remember(
        h,
        ALICE,
        "the spare key hides under the heron statue",
        metadata={"where": "heron statue garden"},
    )
    h.engine.delete_memory(ALICE, event_id)
    journal = h.ledger.list_journal(ALICE, "", limit=1000)
    assert journal  # the store's and the deletion's records are kept, as ids and digests
    assert [r.id for r in journal if "heron" in r.model_dump_json()] == []

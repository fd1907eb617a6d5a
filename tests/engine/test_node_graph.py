"""Graph and provenance reads on every backend: a node's evidence and paged operation history,
its neighborhood over the owner's edges, and its supersedence chain."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import pytest

from prme.engine import graph
from prme.errors import InvalidRequestError, NotFoundError
from prme.model.inputs import IngestInput, RetrieveInput, StoreInput
from prme.model.records import JournalRecord, MemoryEdge, NodeChange, OwnerKey
from tests.harness.engines import ALICE, BOB, Harness


def store(h: Harness, content: str, owner: OwnerKey = ALICE) -> Any:
    h.clock.advance(seconds=1)
    return h.engine.store(owner, StoreInput(content=content))


def operations(h: Harness, node_id: str, **page: Any) -> list[str]:
    found = h.engine.get_node_provenance(ALICE, node_id, **page)
    return [entry.record.operation for entry in found.operations]


def test_provenance_lists_evidence_and_every_operation_oldest_first_across_pages(
    any_backend: Harness,
) -> None:
    h = any_backend
    first = store(h, "Dana likes oolong tea")
    confirmation = store(h, "Yes, Dana really likes oolong")
    newer = store(h, "Dana now drinks only green tea")
    h.clock.advance(seconds=1)
    h.engine.reinforce(ALICE, first.node_id, evidence_id=confirmation.event_id)
    h.clock.advance(seconds=1)
    h.engine.promote(ALICE, first.node_id)
    # A retrieval that shows the node saves a receipt: a read, not an operation on it.
    h.clock.advance(seconds=1)
    assert h.engine.retrieve(ALICE, RetrieveInput(query="Dana tea")).results
    h.clock.advance(seconds=1)
    h.engine.supersede(ALICE, old_node_id=first.node_id, new_node_id=newer.node_id)

    whole = h.engine.get_node_provenance(ALICE, first.node_id)
    assert [e.record.operation for e in whole.operations] == [
        "direct_store",
        "node_reinforce",
        "node_promote",
        "supersede",
    ]
    assert all(entry.verified for entry in whole.operations)
    assert whole.next_cursor is None
    assert [e.id for e in whole.evidence] == [first.event_id, confirmation.event_id]
    digest = hashlib.sha256(b"Dana likes oolong tea").hexdigest()
    assert whole.evidence[0].content_sha256 == digest
    # The newer side of the supersedence has it too, after its own store.
    assert operations(h, newer.node_id) == ["direct_store", "supersede"]

    # Two at a time: the cursor carries on exactly where the first page stopped.
    page_1 = h.engine.get_node_provenance(ALICE, first.node_id, operation_limit=2)
    assert [e.record.operation for e in page_1.operations] == ["direct_store", "node_reinforce"]
    assert page_1.next_cursor is not None
    page_2 = h.engine.get_node_provenance(
        ALICE, first.node_id, operation_limit=2, operation_cursor=page_1.next_cursor
    )
    assert [e.record.operation for e in page_2.operations] == ["node_promote", "supersede"]
    assert page_2.next_cursor is None
    seen = [e.record.id for e in page_1.operations + page_2.operations]
    assert seen == [e.record.id for e in whole.operations]


def test_extracted_nodes_name_the_extraction_that_made_them(any_backend: Harness) -> None:
    h = any_backend
    message = "My sister Ana works at Siemens."
    result = h.engine.ingest(
        ALICE, IngestInput.model_validate({"content": message, "wait_for_extraction": True})
    )
    derived = [
        n for n in h.engine.get_event_nodes(ALICE, result.event_id) if n.id != result.node_id
    ]
    assert derived
    for node in derived:
        assert operations(h, node.id) == ["extraction"]


def test_provenance_of_an_unknown_or_foreign_node_is_not_found_and_bad_pages_are_refused(
    any_backend: Harness,
) -> None:
    h = any_backend
    bobs = store(h, "Bob's secret plan", owner=BOB)
    mine = store(h, "Alice's note")
    for read in (
        lambda n: h.engine.get_node_provenance(ALICE, n),
        lambda n: h.engine.get_node_neighborhood(ALICE, n),
        lambda n: h.engine.get_node_chain(ALICE, n),
    ):
        for node_id in (bobs.node_id, str(uuid.uuid4())):
            with pytest.raises(NotFoundError):
                read(node_id)
    for page in ({"operation_limit": 0}, {"operation_limit": 1001}, {"operation_cursor": "x"}):
        with pytest.raises(InvalidRequestError):
            h.engine.get_node_provenance(ALICE, mine.node_id, **page)
    with pytest.raises(InvalidRequestError):
        h.engine.get_node_neighborhood(ALICE, mine.node_id, max_hops=4)


def test_a_deleted_source_takes_its_nodes_history_references_with_it(
    any_backend: Harness,
) -> None:
    h = any_backend
    stored = store(h, "A memory to forget")
    h.engine.promote(ALICE, stored.node_id)
    # The promotion is referenced; the store's own record is read by its derived id.
    assert len(h.ledger.list_node_history(ALICE, stored.node_id, after=None, limit=10).records) == 1
    assert operations(h, stored.node_id) == ["direct_store", "node_promote"]
    h.engine.delete_memory(ALICE, stored.event_id)
    assert h.ledger.list_node_history(ALICE, stored.node_id, after=None, limit=10).records == ()


def _link(h: Harness, pairs: list[tuple[str, str, str]]) -> None:
    """Save edges (type, source, target) directly: shapes the engine's moves never make."""
    now = h.clock.now()
    record = JournalRecord.build(
        record_id=str(uuid.uuid4()),
        owner=ALICE,
        operation="test_links",
        subject_id=pairs[0][1],
        created_at=now,
        payload={},
    )
    edges = tuple(
        MemoryEdge(
            id=str(uuid.uuid4()),
            tenant_id=ALICE.tenant_id,
            owner_id=ALICE.owner_id,
            edge_type=edge_type,
            source_node_id=source,
            target_node_id=target,
            created_at=now,
        )
        for edge_type, source, target in pairs
    )
    h.ledger.commit_node_change(NodeChange(updates=(), journal=record, edges=edges))


def test_neighborhood_reaches_nodes_within_the_hops_once_each_through_cycles(
    any_backend: Harness,
) -> None:
    h = any_backend
    a, b, c, d, e = (store(h, f"node {name}").node_id for name in "abcde")
    # a - b - c - a is a cycle; d hangs off c, e off d (three hops from a by the short way).
    _link(
        h,
        [
            ("relates_to", a, b),
            ("relates_to", b, c),
            ("mentions", c, a),
            ("part_of", d, c),
            ("relates_to", e, d),
        ],
    )
    one = h.engine.get_node_neighborhood(ALICE, a, max_hops=1)
    assert {(n.node.id, n.hops, n.edge_types) for n in one.neighbors} == {
        (b, 1, ("relates_to",)),
        (c, 1, ("mentions",)),
    }
    two = h.engine.get_node_neighborhood(ALICE, a, max_hops=2)
    assert [(n.node.id, n.hops) for n in two.neighbors if n.hops == 2] == [(d, 2)]
    assert not two.truncated
    three = h.engine.get_node_neighborhood(ALICE, a, max_hops=3)
    assert sorted(n.node.id for n in three.neighbors) == sorted([b, c, d, e])
    assert a not in {n.node.id for n in three.neighbors}


def test_chain_follows_supersedence_forward_backward_and_both(any_backend: Harness) -> None:
    h = any_backend
    oldest, middle, newest = (
        store(h, f"I live in {city}").node_id for city in ("Rome", "Oslo", "Kyiv")
    )
    h.engine.supersede(ALICE, old_node_id=oldest, new_node_id=middle)
    h.clock.advance(seconds=1)
    h.engine.supersede(ALICE, old_node_id=middle, new_node_id=newest)

    def chain(node_id: str, direction: Any) -> list[str]:
        return [n.id for n in h.engine.get_node_chain(ALICE, node_id, direction=direction).nodes]

    assert chain(oldest, "forward") == [oldest, middle, newest]
    assert chain(newest, "forward") == [newest]
    assert chain(newest, "backward") == [newest, middle, oldest]
    assert chain(middle, "both") == [oldest, middle, newest]
    assert h.engine.get_node_chain(ALICE, middle).direction == "forward"


def test_chain_stops_at_a_supersedence_cycle(any_backend: Harness) -> None:
    h = any_backend
    a, b = store(h, "claim a").node_id, store(h, "claim b").node_id
    # Written straight to the ledger: a supersedes b and b supersedes a.
    _link(h, [("supersedes", a, b), ("supersedes", b, a)])
    forward = h.engine.get_node_chain(ALICE, a, direction="forward")
    assert [n.id for n in forward.nodes] == [a, b]
    assert not forward.truncated
    both = h.engine.get_node_chain(ALICE, a, direction="both")
    assert sorted(n.id for n in both.nodes) == sorted([a, b])


def test_reads_stop_at_their_node_limits_and_say_so(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    monkeypatch.setattr(graph, "MAX_NEIGHBORHOOD_NODES", 2)
    monkeypatch.setattr(graph, "MAX_CHAIN_NODES", 2)
    hub, *spokes = (store(h, f"node {n}").node_id for n in range(4))
    _link(h, [("relates_to", hub, spoke) for spoke in spokes])
    near = h.engine.get_node_neighborhood(ALICE, hub, max_hops=1)
    assert len(near.neighbors) == 2 and near.truncated
    oldest, middle, newest = spokes
    h.engine.supersede(ALICE, old_node_id=oldest, new_node_id=middle)
    h.engine.supersede(ALICE, old_node_id=middle, new_node_id=newest)
    chain = h.engine.get_node_chain(ALICE, oldest)
    assert [n.id for n in chain.nodes] == [oldest, middle] and chain.truncated
    assert not h.engine.get_node_chain(ALICE, middle).truncated

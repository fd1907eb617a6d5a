"""The ledger's listings on every backend: journal pages by id prefix, owner node scans, node edges."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from prme.model.enums import NodeType
from prme.model.inputs import StoreInput
from prme.model.records import JournalRecord, MemoryEdge, NodeChange, OwnerKey
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def journal(owner: OwnerKey, record_id: str, minutes: int = 0) -> JournalRecord:
    return JournalRecord.build(
        record_id=record_id,
        owner=owner,
        operation="test_record",
        subject_id=record_id,
        created_at=T0 + timedelta(minutes=minutes),
        payload={"n": minutes},
    )


def test_journal_pages_follow_id_order_within_one_prefix(any_backend: Harness) -> None:
    ledger = any_backend.ledger
    ids = sorted(str(uuid.uuid4()) for _ in range(7))
    # Appended out of id order, with records of another prefix and other owners around them.
    for minutes, suffix in enumerate(reversed(ids)):
        ledger.append_journal(journal(ALICE, f"sample:{suffix}", minutes))
    ledger.append_journal(journal(ALICE, f"other:{ids[0]}"))
    ledger.append_journal(journal(ALICE, ids[1]))
    ledger.append_journal(journal(BOB, f"sample:{ids[2]}"))
    ledger.append_journal(journal(OTHER_TENANT_ALICE, f"sample:{ids[3]}"))

    first = ledger.list_journal(ALICE, "sample:", limit=3)
    assert [r.id for r in first] == [f"sample:{i}" for i in ids[:3]]
    second = ledger.list_journal(ALICE, "sample:", after_id=first[-1].id, limit=3)
    assert [r.id for r in second] == [f"sample:{i}" for i in ids[3:6]]
    last = ledger.list_journal(ALICE, "sample:", after_id=second[-1].id, limit=3)
    assert [r.id for r in last] == [f"sample:{ids[6]}"]
    assert ledger.list_journal(ALICE, "sample:", after_id=last[-1].id) == []
    assert all(r.verify() for r in first + second + last)
    # A cursor before the prefix starts at its first record; zero limit reads nothing.
    assert ledger.list_journal(ALICE, "sample:", after_id="a")[0].id == f"sample:{ids[0]}"
    assert ledger.list_journal(ALICE, "sample:", limit=0) == []
    assert [r.id for r in ledger.list_journal(BOB, "sample:")] == [f"sample:{ids[2]}"]


def test_list_nodes_is_a_complete_owner_scan(any_backend: Harness) -> None:
    h = any_backend
    stored = [
        h.engine.store(ALICE, StoreInput(content=f"Alice memory {i}", node_type=kind))
        for i, kind in enumerate([NodeType.FACT, NodeType.ENTITY, NodeType.NOTE, NodeType.ENTITY])
    ]
    h.engine.store(BOB, StoreInput(content="Bob memory", node_type=NodeType.ENTITY))
    h.engine.store(
        OTHER_TENANT_ALICE, StoreInput(content="Other tenant", node_type=NodeType.ENTITY)
    )

    assert {n.id for n in h.ledger.list_nodes(ALICE)} == {s.node_id for s in stored}
    entities = h.ledger.list_nodes(ALICE, node_type=NodeType.ENTITY)
    assert {n.id for n in entities} == {stored[1].node_id, stored[3].node_id}
    assert all(n.owner_id == "alice" and n.tenant_id == "t1" for n in entities)


def test_node_edges_list_both_directions_for_one_owner(any_backend: Harness) -> None:
    h = any_backend
    a, b, c = (
        h.engine.store(ALICE, StoreInput(content=f"Entity {name}", node_type=NodeType.ENTITY))
        for name in "abc"
    )
    edges = (
        MemoryEdge(
            id=str(uuid.uuid4()),
            tenant_id="t1",
            owner_id="alice",
            edge_type="alias_of",
            source_node_id=a.node_id or "",
            target_node_id=b.node_id or "",
            created_at=T0,
            verified=True,
            operation_id="op-1",
        ),
        MemoryEdge(
            id=str(uuid.uuid4()),
            tenant_id="t1",
            owner_id="alice",
            edge_type="knows",
            source_node_id=c.node_id or "",
            target_node_id=a.node_id or "",
            created_at=T0 + timedelta(minutes=1),
        ),
    )
    h.ledger.commit_node_change(
        NodeChange(updates=(), journal=journal(ALICE, "edges-test"), edges=edges)
    )
    assert h.ledger.list_node_edges(ALICE, a.node_id or "") == list(edges)
    assert h.ledger.list_node_edges(ALICE, b.node_id or "") == [edges[0]]
    assert h.ledger.list_node_edges(BOB, a.node_id or "") == []
    assert h.ledger.list_node_edges(ALICE, a.node_id or "")[0].verified is True


def test_get_events_reads_many_sources_of_one_owner(any_backend: Harness) -> None:
    h = any_backend
    mine = [h.engine.store(ALICE, StoreInput(content=f"Source {i}")).event_id for i in range(3)]
    theirs = h.engine.store(BOB, StoreInput(content="Bob's source")).event_id
    found = h.ledger.get_events(ALICE, [*mine, mine[0], theirs, str(uuid.uuid4())])
    assert set(found) == set(mine)
    assert found[mine[1]].content == "Source 1"


def test_list_owners_names_every_owner_of_one_tenant_exactly(any_backend: Harness) -> None:
    h = any_backend
    # Ids with the characters the DynamoDB keys escape, and a tenant whose id mimics the
    # key layout of tenant t1: neither may leak into or garble the listing.
    tricky = ["carol#1", "dave%23", "erin%", "zoë"]
    for owner_id in ["bob", *tricky, "alice"]:
        owner = OwnerKey(tenant_id=ALICE.tenant_id, owner_id=owner_id)
        h.engine.store(owner, StoreInput(content=f"memory of {owner_id}"))
    h.engine.store(ALICE, StoreInput(content="a second memory of alice"))
    h.engine.store(OTHER_TENANT_ALICE, StoreInput(content="other tenant"))
    h.engine.store(OwnerKey(tenant_id="t1#O#x", owner_id="mallory"), StoreInput(content="x"))

    assert h.engine.list_owners(ALICE.tenant_id) == sorted(["alice", "bob", *tricky])
    assert h.engine.list_owners(OTHER_TENANT_ALICE.tenant_id) == ["alice"]
    assert h.engine.list_owners("t1#O#x") == ["mallory"]
    assert h.engine.list_owners("no-such-tenant") == []

"""DynamoDB record bodies stored compressed: a store's items fit one write unit each, items
written before as text keep reading and changing, and a damaged body is quarantined."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.dynamodb_units import WRITE_UNIT_BYTES, item_size
from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
from prme.backends.clock import ManualClock
from prme.backends.memory import InMemoryIndex, RecordingWorkQueue
from prme.embedding.hashing import HashingEmbedder
from prme.engine.deps import EngineDeps
from prme.engine.service import MemoryEngine
from prme.errors import ConflictError, CorruptRecordError
from prme.model.inputs import StoreInput
from prme.model.records import JournalRecord, NodeChange
from tests.harness.engines import ALICE, TOKEN_COUNTER
from tests.harness.ledger_commits import T0, make_commit

PK = "T#t1#O#alice"
# A memory as long as the cost benchmark's; with its direct-store journal payload.
MEMORY = ("My sister moved the birthday party to Saturday and wants a reminder. " * 4)[:250]


@pytest.fixture
def ledger(dynamodb_table: tuple[Any, str]) -> DynamoDbLedger:
    client, name = dynamodb_table
    return DynamoDbLedger(client, name)


def _engine(ledger: DynamoDbLedger) -> MemoryEngine:
    deps = EngineDeps(
        ledger=ledger,
        index=InMemoryIndex(),
        queue=RecordingWorkQueue(),
        embedder=HashingEmbedder(),
        clock=ManualClock(),
        token_counter=TOKEN_COUNTER,
    )
    return MemoryEngine(deps)


def test_each_item_of_a_store_fits_one_write_unit(
    ledger: DynamoDbLedger, dynamodb_table: tuple[Any, str]
) -> None:
    # Given the store of a 250-character memory through the engine
    result = _engine(ledger).store(ALICE, StoreInput(content=MEMORY))

    # Then it wrote its event, node, evidence link, journal record and work item, each
    # billed as at most 1 KB (so 2 units in the transaction, not 4)
    client, name = dynamodb_table
    items = client.query(
        TableName=name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": PK}},
        ConsistentRead=True,
    )["Items"]
    sizes = {item["sk"]["S"].split("#")[0]: item_size(item) for item in items}
    assert sorted(sizes) == ["EVENT", "EVNODE", "JOURNAL", "NODE", "WORK"]
    assert all(size <= WRITE_UNIT_BYTES for size in sizes.values()), sizes
    # And everything reads back
    event = ledger.get_event(ALICE, result.event_id)
    assert event is not None and event.content == MEMORY
    (node,) = ledger.list_event_nodes(ALICE, result.event_id)
    assert node.content == MEMORY and ledger.get_node(ALICE, node.id) == node


def _legacy_put(table: tuple[Any, str], sk: str, kind: str, body: str) -> None:
    client, name = table
    item = {"pk": {"S": PK}, "sk": {"S": sk}, "kind": {"S": kind}, "body": {"S": body}}
    client.put_item(TableName=name, Item=item)


def test_items_written_as_text_still_read_and_change(
    ledger: DynamoDbLedger, dynamodb_table: tuple[Any, str]
) -> None:
    # Given an event, node and journal record written before bodies were compressed
    commit = make_commit(ALICE, 1)
    _legacy_put(dynamodb_table, f"EVENT#{commit.event.id}", "event", commit.event.model_dump_json())
    _legacy_put(dynamodb_table, f"NODE#{commit.node.id}", "node", commit.node.model_dump_json())
    _legacy_put(
        dynamodb_table, f"JOURNAL#{commit.journal.id}", "journal", commit.journal.model_dump_json()
    )

    # Then they read back
    assert ledger.get_event(ALICE, commit.event.id) == commit.event
    assert ledger.get_nodes(ALICE, [commit.node.id]) == {commit.node.id: commit.node}
    assert ledger.get_journal(ALICE, commit.journal.id) == commit.journal

    # And a change of the node from the state read applies (the old item has no digest) ...
    old = commit.node
    new = old.model_copy(update={"confidence": 0.5})
    ledger.commit_node_change(NodeChange(updates=((old, new),), journal=_journal(2)))
    assert ledger.get_node(ALICE, old.id) == new
    # ... and one from a stale state is refused, now that the node is stored compressed
    stale = old.model_copy(update={"confidence": 0.1})
    with pytest.raises(ConflictError):
        ledger.commit_node_change(NodeChange(updates=((old, stale),), journal=_journal(3)))
    newest = new.model_copy(update={"confidence": 0.3})
    ledger.commit_node_change(NodeChange(updates=((new, newest),), journal=_journal(4)))
    assert ledger.get_node(ALICE, old.id) == newest


def _journal(n: int) -> JournalRecord:
    return JournalRecord.build(
        record_id=f"jr-change-{n}",
        owner=ALICE,
        operation="review",
        subject_id="node-0001",
        created_at=T0,
        payload={},
    )


@pytest.mark.parametrize("stored", [b"not zlib at all", b"x\x9c\x03\x00"])
def test_a_damaged_compressed_body_is_quarantined(
    ledger: DynamoDbLedger, dynamodb_table: tuple[Any, str], stored: bytes
) -> None:
    # Given a node whose compressed body is damaged (or inflates to nothing)
    commit = make_commit(ALICE, 1)
    ledger.commit_store(commit)
    client, name = dynamodb_table
    client.update_item(
        TableName=name,
        Key={"pk": {"S": PK}, "sk": {"S": f"NODE#{commit.node.id}"}},
        UpdateExpression="SET body = :b",
        ExpressionAttributeValues={":b": {"B": stored}},
    )
    # Then one read refuses it and a listing leaves it out, without failing
    with pytest.raises(CorruptRecordError):
        ledger.get_node(ALICE, commit.node.id)
    assert ledger.list_nodes(ALICE) == []

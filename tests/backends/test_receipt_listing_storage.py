"""How each real ledger keeps its receipts listable newest first: SQLite walks a partial index of
receipts (never the owner's whole journal); DynamoDB writes one small listing entry beside each
receipt, with the receipt's expiry, in a partition an erasure empties. An unreadable receipt is
skipped by the listings and fails nothing else."""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prme.backends.aws import resources
from prme.backends.embedded.service import LEDGER_FILE
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.records import OwnerKey
from tests.harness.aws import aws_harness
from tests.harness.engines import ALICE, Harness, embedded_harness
from tests.harness.poison import dynamodb_poison, sqlite_poison

PK, SK = resources.PARTITION_KEY, resources.SORT_KEY


def retrieve(h: Harness, query: str, owner: OwnerKey = ALICE) -> str:
    h.clock.advance(seconds=1)
    return h.engine.retrieve(owner, RetrieveInput(query=query)).metrics.request_id


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[Harness]:
    h = embedded_harness(tmp_path / "data")
    yield h
    h.index.close()  # type: ignore[attr-defined]
    h.ledger.close()  # type: ignore[attr-defined]


def test_sqlite_lists_receipts_through_their_index_alone(embedded: Harness, tmp_path: Path) -> None:
    h = embedded
    h.engine.store(ALICE, StoreInput(content="Dana likes oolong tea"))
    first = retrieve(h, "tea")
    retrieve(h, "Dana")
    statements: list[str] = []
    h.ledger._conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    page = h.engine.list_retrievals(ALICE, limit=1)
    later = h.engine.list_retrievals(ALICE, cursor=page.next_cursor)
    h.ledger._conn.set_trace_callback(None)  # type: ignore[attr-defined]

    assert [s.request_id for s in later.retrievals] == [first]
    listings = [s for s in statements if "created_at DESC" in s]
    assert len(listings) == 2
    conn = sqlite3.connect(tmp_path / "data" / LEDGER_FILE)
    for listing in listings:
        plan = conn.execute(f"EXPLAIN QUERY PLAN {listing}").fetchall()
        steps = " ".join(str(row[-1]) for row in plan)
        # A walk of the receipts' index in its own order: no table scan, no sort.
        assert "USING INDEX receipts_by_time" in steps and "TEMP B-TREE" not in steps, steps
    conn.close()


@pytest.fixture
def aws(aws_resources: tuple[Any, str, Any, str]) -> tuple[Harness, Any, str]:
    dynamodb, table, opensearch, alias = aws_resources
    return aws_harness(dynamodb, table, opensearch, alias), dynamodb, table


def _items(dynamodb: Any, table: str, pk: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = dynamodb.query(
        TableName=table,
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": PK},
        ExpressionAttributeValues={":pk": {"S": pk}},
        ConsistentRead=True,
    )["Items"]
    return found


def _owner_items(dynamodb: Any, table: str) -> int:
    items = dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]
    return sum(1 for i in items if str(i[PK]["S"]).startswith("T#t1#O#alice"))


def test_dynamodb_writes_one_small_listing_entry_per_receipt(
    aws: tuple[Harness, Any, str],
) -> None:
    h, dynamodb, table = aws
    h.engine.store(ALICE, StoreInput(content="Dana likes oolong tea"))
    before = _owner_items(dynamodb, table)

    # The longest query, in letters of four UTF-8 bytes: the entry keeps a preview of it.
    request_id = retrieve(h, "\U0001f375" * 10_000)

    # The receipt and its listing entry: two items, where one was written before listings.
    assert _owner_items(dynamodb, table) - before == 2
    (entry,) = _items(dynamodb, table, "T#t1#O#alice#RECEIPTLOG")
    assert request_id in entry[SK]["S"]
    # DynamoDB's item size: attribute names and values in UTF-8 (numbers as text).
    size = sum(
        len(name.encode()) + sum(len(str(v).encode()) for v in value.values())
        for name, value in entry.items()
    )
    assert size < 1024  # one write unit
    record = h.ledger.get_journal(ALICE, request_id, receipt=True)
    assert record is not None and record.expires_at is not None
    assert entry[resources.TTL_ATTRIBUTE]["N"] == str(int(record.expires_at.timestamp()))
    # An erasure empties the listing's partition too, and counts the receipt once.
    erasure = h.engine.erase_owner(ALICE, confirm=ALICE.owner_id)
    assert erasure.removed.retrieval_receipts == 1
    assert _items(dynamodb, table, "T#t1#O#alice#RECEIPTLOG") == []


def test_an_unreadable_listing_entry_is_skipped(aws: tuple[Harness, Any, str]) -> None:
    h, dynamodb, table = aws
    h.engine.store(ALICE, StoreInput(content="Dana likes oolong tea"))
    kept = retrieve(h, "tea")
    broken = retrieve(h, "Dana")
    (entry,) = [
        i for i in _items(dynamodb, table, "T#t1#O#alice#RECEIPTLOG") if broken in i[SK]["S"]
    ]
    dynamodb.update_item(
        TableName=table,
        Key={PK: entry[PK], SK: entry[SK]},
        UpdateExpression="SET body = :body",
        ExpressionAttributeValues={":body": {"B": zlib.compress(b'{"request_id": "x"')}},
    )

    assert [s.request_id for s in h.engine.list_retrievals(ALICE).retrievals] == [kept]


@pytest.mark.parametrize("backend", ["embedded", "aws"])
def test_an_unreadable_receipt_is_skipped_by_a_nodes_listing(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "embedded":
        h = request.getfixturevalue("embedded")
        poison = sqlite_poison(tmp_path / "data" / LEDGER_FILE)
    else:
        h, dynamodb, table = request.getfixturevalue("aws")
        poison = dynamodb_poison(dynamodb, table)
    tea = h.engine.store(ALICE, StoreInput(content="Dana likes oolong tea"))
    kept = retrieve(h, "oolong tea")
    broken = retrieve(h, "Dana tea")
    poison("journal", ALICE, broken, "invalid_json")

    page = h.engine.list_node_retrievals(ALICE, tea.node_id)

    assert [r.request_id for r in page.retrievals] == [kept]
    listed = [s.request_id for s in h.engine.list_retrievals(ALICE).retrievals]
    # SQLite summarizes the stored body and leaves it out; DynamoDB lists the receipt's own
    # entry, and opening the receipt reports it unreadable.
    assert listed == ([kept] if backend == "embedded" else [broken, kept])

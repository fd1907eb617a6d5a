"""Receipts on DynamoDB sit on partition keys of their own, spread by request id: one owner's
retrievals do not all write to one partition; reads by id, old receipts and erasure go on."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from prme.backends.aws.dynamodb_ledger import RECEIPT_SHARDS, DynamoDbLedger
from prme.model.erasure import ErasureCounts, OwnerErasure
from prme.model.records import JournalRecord
from prme.retrieval.receipts import RECEIPT_OPERATION
from tests.harness.engines import ALICE
from tests.harness.ledger_commits import make_commit

T0 = datetime(2026, 12, 1, tzinfo=UTC)
OWNER_PK = "T#t1#O#alice"


@pytest.fixture
def ledger(dynamodb_table: tuple[Any, str]) -> DynamoDbLedger:
    client, name = dynamodb_table
    return DynamoDbLedger(client, name)


def _receipt(request_id: str | None = None) -> JournalRecord:
    request_id = request_id or str(uuid.uuid4())
    return JournalRecord.build(
        record_id=request_id,
        owner=ALICE,
        operation=RECEIPT_OPERATION,
        subject_id=request_id,
        created_at=T0,
        payload={"request_id": request_id},
        expires_at=T0 + timedelta(days=30),
    )


def _partition_keys(table: tuple[Any, str]) -> list[str]:
    client, name = table
    items = client.scan(TableName=name, ConsistentRead=True)["Items"]
    return [item["pk"]["S"] for item in items]


def _get_items_counted(client: Any) -> list[str]:
    calls: list[str] = []
    client.meta.events.register("before-call.dynamodb.GetItem", lambda **_: calls.append("GetItem"))
    return calls


def test_receipts_of_one_owner_spread_over_many_partition_keys(
    ledger: DynamoDbLedger, dynamodb_table: tuple[Any, str]
) -> None:
    # Given many retrievals of one owner
    receipts = [_receipt() for _ in range(64)]
    for receipt in receipts:
        ledger.append_journal(receipt)

    # Then their receipts sit on many partition keys, none of them the owner's own
    keys = _partition_keys(dynamodb_table)
    assert OWNER_PK not in keys
    assert all(key.startswith(OWNER_PK + "#") for key in keys)
    assert len(set(keys)) >= RECEIPT_SHARDS // 2
    # And each is read by its id with one GetItem
    calls = _get_items_counted(dynamodb_table[0])
    for receipt in receipts:
        assert ledger.get_journal(ALICE, receipt.id, receipt=True) == receipt
    assert len(calls) == len(receipts)
    # And a read that does not say it wants a receipt still finds one
    assert ledger.get_journal(ALICE, receipts[0].id) == receipts[0]


def test_other_journal_records_stay_in_the_owner_partition(
    ledger: DynamoDbLedger, dynamodb_table: tuple[Any, str]
) -> None:
    commit = make_commit(ALICE, 1)
    ledger.commit_store(commit)
    assert set(_partition_keys(dynamodb_table)) == {OWNER_PK}
    assert ledger.get_journal(ALICE, commit.journal.id) == commit.journal
    # A receipt is never read where other records are kept under the same id, and back
    assert ledger.get_journal(ALICE, commit.journal.id, receipt=True) == commit.journal


def test_a_receipt_saved_in_the_owner_partition_before_still_reads(
    ledger: DynamoDbLedger, dynamodb_table: tuple[Any, str]
) -> None:
    # Given a receipt written before receipts were spread (in the owner's partition, as text)
    old = _receipt()
    client, name = dynamodb_table
    client.put_item(
        TableName=name,
        Item={
            "pk": {"S": OWNER_PK},
            "sk": {"S": f"JOURNAL#{old.id}"},
            "kind": {"S": "journal"},
            "body": {"S": old.model_dump_json()},
        },
    )
    # Then it is still found by its id
    assert ledger.get_journal(ALICE, old.id, receipt=True) == old
    assert ledger.get_journal(ALICE, str(uuid.uuid4()), receipt=True) is None


def test_erase_steps_remove_the_receipts_of_every_shard(
    ledger: DynamoDbLedger, dynamodb_table: tuple[Any, str]
) -> None:
    # Given an owner with a stored memory and receipts on many partition keys
    ledger.commit_store(make_commit(ALICE, 1))
    receipts = [_receipt() for _ in range(40)]
    for receipt in receipts:
        ledger.append_journal(receipt)
    erasure = OwnerErasure(
        erasure_id="erasure-1",
        started_at=T0,
        finished_at=None,
        complete=False,
        removed=ErasureCounts(),
    )
    ledger.save_erasure(erasure, ALICE.tenant_id, replacing=None)

    # When steps run until one removes nothing
    while True:
        before = erasure.removed.total
        erasure = ledger.erase_owner_step(ALICE, erasure, 7)
        if erasure.removed.total == before:
            break

    # Then every receipt is gone and counted, and nothing of the owner is left
    assert erasure.removed.retrieval_receipts == len(receipts)
    assert not [key for key in _partition_keys(dynamodb_table) if key.startswith(OWNER_PK)]
    assert all(ledger.get_journal(ALICE, r.id, receipt=True) is None for r in receipts)

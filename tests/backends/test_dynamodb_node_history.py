"""The DynamoDB ledger's per-node history references: one Query per page, and a record that
names more nodes than one transaction holds is still found under every one of them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from prme.backends.aws import resources
from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
from prme.model.records import JournalRecord, NodeChange
from tests.harness.engines import ALICE


def test_a_record_naming_more_nodes_than_a_transaction_holds_is_under_each(
    dynamodb_table: tuple[Any, str],
) -> None:
    ledger = DynamoDbLedger(*dynamodb_table)
    named = [str(uuid.uuid4()) for _ in range(resources.MAX_TRANSACTION_ITEMS + 20)]
    record = JournalRecord.build(
        record_id=str(uuid.uuid4()),
        owner=ALICE,
        operation="organize_dedupe",
        subject_id=named[0],
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        payload={"node_ids": named},
    )
    ledger.commit_node_change(NodeChange(updates=(), journal=record))
    for node_id in (named[0], named[-1]):
        page = ledger.list_node_history(ALICE, node_id, after=None, limit=5)
        assert page.records == (record,)
        assert page.next_position is None

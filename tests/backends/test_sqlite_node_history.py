"""The embedded ledger's per-node history references: records saved before the references
existed are indexed once when a ledger of that older layout opens."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime
from pathlib import Path

from prme.backends.embedded.sqlite_ledger import SqliteLedger
from prme.model.records import JournalRecord, OwnerKey

OWNER = OwnerKey(tenant_id="t", owner_id="o")


def test_an_older_ledger_gets_the_references_of_its_records_when_it_opens(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    node_id = str(uuid.uuid4())
    move = JournalRecord.build(
        record_id=str(uuid.uuid4()),
        owner=OWNER,
        operation="node_promote",
        subject_id=node_id,
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
        payload={"node_id": node_id, "from_state": "tentative", "to_state": "stable"},
    )
    ledger = SqliteLedger(path)
    ledger.append_journal(move)
    ledger.close()
    # The layout before the references: the record alone.
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE journal_nodes")
    older = SqliteLedger(path)
    try:
        page = older.list_node_history(OWNER, node_id, after=None, limit=10)
        assert page.records == (move,)
        assert page.next_position is None
    finally:
        older.close()

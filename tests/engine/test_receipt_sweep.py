"""Expired receipts are deleted by the maintenance pass where the store has no TTL of its own
(the embedded ledger and the in-memory fake), a bounded batch per call."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from prme.backends.embedded.sqlite_ledger import SqliteLedger
from prme.engine import expiry
from prme.errors import NotFoundError
from prme.model.inputs import RetrieveInput, StoreInput
from prme.retrieval.receipts import RECEIPT_OPERATION
from tests.harness.engines import ALICE, Harness, embedded_harness, memory_harness

HARNESSES: dict[str, Callable[[Path], Harness]] = {
    "memory": lambda _: memory_harness(),
    "embedded": embedded_harness,
}


@pytest.fixture(params=sorted(HARNESSES))
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    return HARNESSES[request.param](tmp_path)


def _retrieve(h: Harness) -> str:
    return str(h.engine.retrieve(ALICE, RetrieveInput(query="tea")).metrics.request_id)


def test_the_pass_deletes_expired_receipts_a_batch_at_a_time(harness: Harness) -> None:
    h = harness
    h.engine.store(ALICE, StoreInput(content="I drink green tea every morning."))
    # Given three receipts past the 30-day retention and one within it
    old = [_retrieve(h) for _ in range(3)]
    h.clock.advance(days=10)
    fresh = _retrieve(h)
    h.clock.advance(days=20)

    # When the sweep runs with room for two, then again
    assert expiry.delete_expired_receipts(h.engine.deps, limit=2) == 2
    assert expiry.delete_expired_receipts(h.engine.deps, limit=2) == 1
    assert expiry.delete_expired_receipts(h.engine.deps, limit=2) == 0

    # Then the expired ones are gone from the ledger, the fresh one still reads
    assert [h.ledger.get_journal(ALICE, rid, receipt=True) for rid in old] == [None] * 3
    assert h.engine.get_retrieval_receipt(ALICE, fresh).request_id == fresh
    # And the operator's maintenance pass deletes it too once it expires
    h.clock.advance(days=10)
    h.engine.archive_expired()
    assert h.ledger.get_journal(ALICE, fresh, receipt=True) is None
    with pytest.raises(NotFoundError):
        h.engine.get_retrieval_receipt(ALICE, fresh)


def test_undated_and_damaged_receipts_do_not_stop_the_embedded_sweep(tmp_path: Path) -> None:
    h = embedded_harness(tmp_path)
    h.engine.store(ALICE, StoreInput(content="I drink green tea every morning."))
    undated, damaged, _dated = _retrieve(h), _retrieve(h), _retrieve(h)
    assert isinstance(h.ledger, SqliteLedger)
    conn: sqlite3.Connection = h.ledger._conn
    # Given a receipt saved before receipts had an expiry, and one whose body is damaged
    body = conn.execute("SELECT body FROM journal WHERE id=?", (undated,)).fetchone()[0]
    conn.execute(
        "UPDATE journal SET body=? WHERE id=?",
        (body.replace('"expires_at":"', '"expires_at":null,"was":"'), undated),
    )
    conn.execute("UPDATE journal SET body='{not json' WHERE id=?", (damaged,))
    conn.commit()
    h.clock.advance(days=30)

    # When the sweep runs
    deleted = expiry.delete_expired_receipts(h.engine.deps)

    # Then all three are deleted: the undated one and the damaged one by their saved time
    # (the journal's own column), and the damaged body did not fail the sweep
    assert deleted == 3
    left = conn.execute("SELECT id FROM journal WHERE operation=?", (RECEIPT_OPERATION,))
    assert left.fetchall() == []
    # While one saved within the retention is kept
    fresh = _retrieve(h)
    assert expiry.delete_expired_receipts(h.engine.deps) == 0
    assert h.engine.get_retrieval_receipt(ALICE, fresh).request_id == fresh

"""One Idempotency-Key per owner across every write route, on every backend.

A key names one logical write: the same route and body replay the first answer, anything
else under that key (another body, another route) is 409 and writes nothing.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from prme.backends.embedded.sqlite_ledger import SqliteLedger
from prme.model.records import IdempotencyRecord, OwnerKey
from tests.harness.http import Api

Send = Callable[[Api, dict[str, str]], httpx2.Response]


def _store(api: Api, headers: dict[str, str]) -> httpx2.Response:
    return api.client.post("/v1/store", json={"content": "Keyed write zq41"}, headers=headers)


def _ingest(api: Api, headers: dict[str, str]) -> httpx2.Response:
    return api.client.post("/v1/ingest", json={"content": "Keyed write zq41"}, headers=headers)


def _fast(api: Api, headers: dict[str, str]) -> httpx2.Response:
    body = {"items": [{"content": "Keyed write zq41"}]}
    return api.client.post("/v1/ingest/fast", json=body, headers=headers)


def _promote(api: Api, headers: dict[str, str]) -> httpx2.Response:
    node = api.client.post("/v1/store", json={"content": "A node to move"}, headers=api.alice)
    return api.client.put(f"/v1/nodes/{node.json()['node_id']}/promote", headers=headers)


ROUTES: dict[str, Send] = {
    "store": _store,
    "ingest": _ingest,
    "ingest_fast": _fast,
    "promote": _promote,
}
# Each route once first and once second, plus the pairs of the finding (store, then ingest).
PAIRS = [
    ("store", "ingest"),
    ("store", "ingest_fast"),
    ("ingest", "promote"),
    ("ingest_fast", "store"),
    ("promote", "ingest_fast"),
    ("ingest", "store"),
]


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_a_key_used_on_one_route_is_409_on_another(api: Api, first: str, second: str) -> None:
    # Given a write that succeeded under a key
    headers = {**api.alice, "Idempotency-Key": str(uuid.uuid4())}
    assert ROUTES[first](api, headers).status_code == 200
    # When the same key is sent to another route
    reused = ROUTES[second](api, headers)
    # Then it is refused, not written as a second logical write
    assert reused.status_code == 409, reused.text


def test_a_key_sent_to_store_then_ingest_leaves_one_event(api: Api) -> None:
    headers = {**api.alice, "Idempotency-Key": str(uuid.uuid4())}
    stored = _store(api, headers)
    assert _ingest(api, headers).status_code == 409
    # The first write still replays, and only it holds the content.
    assert _store(api, headers).json() == stored.json()
    hits = api.client.post("/v1/retrieve", json={"query": "zq41"}, headers=api.alice).json()
    evidence = {ref for r in hits["results"] for ref in r["evidence_refs"]}
    assert evidence == {stored.json()["event_id"]}


def test_the_same_key_is_another_owners_own(api: Api) -> None:
    key = str(uuid.uuid4())
    assert _store(api, {**api.alice, "Idempotency-Key": key}).status_code == 200
    assert _ingest(api, {**api.bob, "Idempotency-Key": key}).status_code == 200


def test_the_migration_keeps_one_record_per_key(tmp_path: Path) -> None:
    """A data directory written when keys were unique per operation opens with one record per
    key; where a key had two, the retry of either route answers, never writes again."""
    path = tmp_path / "ledger.db"
    now = datetime(2026, 1, 1, tzinfo=UTC)

    def record(operation: str, key: str) -> IdempotencyRecord:
        return IdempotencyRecord(
            tenant_id="t",
            owner_id="o",
            operation=operation,
            key=key,
            request_sha256=operation,
            result={"operation": operation},
            created_at=now,
            expires_at=now + timedelta(days=7),
        )

    legacy: list[tuple[Any, ...]] = [
        ("t", "o", r.operation, r.key, r.model_dump_json())
        for r in (record("store", "k1"), record("ingest", "k1"), record("store", "k2"))
    ]
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE idempotency (tenant TEXT NOT NULL, owner TEXT NOT NULL, "
            "operation TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, "
            "PRIMARY KEY (tenant, owner, operation, key)) WITHOUT ROWID"
        )
        conn.executemany("INSERT INTO idempotency VALUES (?, ?, ?, ?, ?)", legacy)
    conn.close()

    ledger = SqliteLedger(path)
    owner = OwnerKey(tenant_id="t", owner_id="o")
    try:
        assert ledger.get_idempotency(owner, "store", "k2") == record("store", "k2")
        # Both operations now see the one kept record: the other route gets a 409.
        kept = record("ingest", "k1")
        assert ledger.get_idempotency(owner, "store", "k1") == kept
        assert ledger.get_idempotency(owner, "ingest", "k1") == kept
    finally:
        ledger.close()
    # Opening again finds nothing left to move.
    SqliteLedger(path).close()

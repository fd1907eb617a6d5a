"""`SqliteLimits`: the embedded backend's usage counters and per-tenant limits, in their own
SQLite file of the data directory, each step one immediate transaction."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from prme.backends.embedded.sqlite import Synchronous, connect
from prme.errors import StorageUnavailableError
from prme.model.limits import CounterKey, TenantLimits

_SCHEMA = """
CREATE TABLE IF NOT EXISTS usage_counters (
    tenant_id TEXT NOT NULL,
    name TEXT NOT NULL,
    field TEXT NOT NULL,
    value INTEGER NOT NULL,
    expires_at REAL,
    PRIMARY KEY (tenant_id, name, field)
);
CREATE TABLE IF NOT EXISTS tenant_limits (
    tenant_id TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
"""


class SqliteLimits:
    """Both limits ports on one file. Several processes may share it (`prme serve` and a
    worker): BEGIN IMMEDIATE takes SQLite's write lock before the read, so the check and the
    add of `add_within` are one step across processes."""

    def __init__(self, path: Path, *, synchronous: Synchronous = "normal") -> None:
        self._conn = connect(path, synchronous)
        self._lock = threading.Lock()
        with self._lock:
            self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StorageUnavailableError() from exc
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def add_within(
        self,
        key: CounterKey,
        amounts: Mapping[str, int],
        caps: Mapping[str, int],
        *,
        expires_at: datetime | None,
    ) -> dict[str, int] | None:
        with self._transaction() as conn:
            current = self._fields(conn, key)
            new = {field: current.get(field, 0) + amount for field, amount in amounts.items()}
            if any(new.get(field, current.get(field, 0)) > cap for field, cap in caps.items()):
                return None
            expiry = expires_at.timestamp() if expires_at else None
            conn.executemany(
                "INSERT INTO usage_counters (tenant_id, name, field, value, expires_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant_id, name, field) "
                "DO UPDATE SET value = excluded.value",
                [(key.tenant_id, key.name, field, value, expiry) for field, value in new.items()],
            )
            if expiry is not None:
                # Counters of one family (the name up to its last colon: a rate window's length,
                # the retrievals' days) expire in key order, so those that expired two days
                # before this one are never read again: dropped as new ones start.
                family = key.name.rpartition(":")[0]
                conn.execute(
                    "DELETE FROM usage_counters WHERE tenant_id = ? AND substr(name, 1, ?) = ? "
                    "AND expires_at < ?",
                    (key.tenant_id, len(family) + 1, family + ":", expiry - 2 * 86_400),
                )
            return new

    @staticmethod
    def _fields(conn: sqlite3.Connection, key: CounterKey) -> dict[str, int]:
        rows = conn.execute(
            "SELECT field, value FROM usage_counters WHERE tenant_id = ? AND name = ?",
            (key.tenant_id, key.name),
        ).fetchall()
        return {str(field): int(value) for field, value in rows}

    def read_counters(self, keys: Sequence[CounterKey]) -> dict[CounterKey, dict[str, int]]:
        found: dict[CounterKey, dict[str, int]] = {}
        with self._lock:
            for key in keys:
                fields = self._fields(self._conn, key)
                if fields:
                    found[key] = fields
        return found

    def get_tenant_limits(self, tenant_id: str) -> TenantLimits | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT body FROM tenant_limits WHERE tenant_id = ?", (tenant_id,)
            ).fetchone()
        return TenantLimits.model_validate_json(row[0]) if row else None

    def put_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO tenant_limits (tenant_id, body) VALUES (?, ?) "
                "ON CONFLICT (tenant_id) DO UPDATE SET body = excluded.body",
                (tenant_id, limits.model_dump_json()),
            )

    def delete_tenant_limits(self, tenant_id: str) -> bool:
        with self._transaction() as conn:
            cursor = conn.execute("DELETE FROM tenant_limits WHERE tenant_id = ?", (tenant_id,))
            return cursor.rowcount > 0

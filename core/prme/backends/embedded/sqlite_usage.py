"""`SqliteUsageLog`: the embedded backend's usage log, one table in its own database file."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from prme.backends.embedded.sqlite import Synchronous, connect
from prme.errors import StorageUnavailableError
from prme.model.usage import UsageEntry, UsageQuery, UsageTotal, UsageUnits, entry_time_text

_UNITS = tuple(UsageUnits.model_fields)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS usage_entries (
    tenant TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    owner_ref TEXT NOT NULL,
    kind TEXT NOT NULL,
    at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    {", ".join(f"{unit} INTEGER NOT NULL" for unit in _UNITS)},
    PRIMARY KEY (tenant, owner_ref, entry_id)
);
CREATE INDEX IF NOT EXISTS usage_by_time ON usage_entries (tenant, at);
"""

# Where the period's name ends in an entry's fixed-width time text.
_PERIOD_LENGTH = {"day": 10, "month": 7}


class SqliteUsageLog:
    """Implements `UsageLog`: INSERT OR IGNORE on (tenant, owner, entry id) keeps an entry once,
    and the sums are one GROUP BY."""

    def __init__(self, path: Path, *, synchronous: Synchronous = "normal") -> None:
        self._conn = connect(path, synchronous)
        self._lock = threading.Lock()
        with self._lock:
            self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def record(self, entries: Sequence[UsageEntry]) -> None:
        rows = [
            (
                entry.tenant_id,
                entry.entry_id,
                entry.owner_ref,
                entry.kind,
                entry_time_text(entry.at),
                entry_time_text(entry.expires_at),
                *(getattr(entry.units, unit) for unit in _UNITS),
            )
            for entry in entries
        ]
        marks = ", ".join("?" * (6 + len(_UNITS)))
        try:
            with self._lock:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    self._conn.executemany(
                        f"INSERT OR IGNORE INTO usage_entries VALUES ({marks})",  # noqa: S608
                        rows,
                    )
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StorageUnavailableError() from exc

    def totals(self, tenant_id: str, query: UsageQuery) -> list[UsageTotal]:
        length = _PERIOD_LENGTH[query.period]
        sums = ", ".join(f"SUM({unit})" for unit in _UNITS)
        sql = (
            f"SELECT substr(at, 1, {length}) AS period, kind, COUNT(*), {sums} "  # noqa: S608
            "FROM usage_entries WHERE tenant = ? AND at >= ? AND at < ?"
        )
        args: list[str] = [tenant_id, entry_time_text(query.start), entry_time_text(query.end)]
        if query.owner_ref is not None:
            sql += " AND owner_ref = ?"
            args.append(query.owner_ref)
        sql += " GROUP BY period, kind ORDER BY period, kind"
        try:
            with self._lock:
                rows = self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StorageUnavailableError() from exc
        return [
            UsageTotal(
                period=row[0],
                kind=row[1],
                operations=row[2],
                units=UsageUnits(**dict(zip(_UNITS, row[3:], strict=True))),
            )
            for row in rows
        ]

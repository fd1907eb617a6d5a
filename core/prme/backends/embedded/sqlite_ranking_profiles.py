"""The embedded backend's ranking profiles: profiles and per-slot change histories in
`ranking_profiles.sqlite3`; a slot's current state is its change of the highest sequence."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prme.backends.embedded.sqlite import Synchronous, connect
from prme.backends.stored_records import load_readable, load_record
from prme.errors import ConflictError, StorageUnavailableError
from prme.model.learning import RankingProfile, RankingProfileState
from prme.model.records import OwnerKey

RANKING_PROFILES_FILE = "ranking_profiles.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ranking_profiles (
    tenant_id TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    profile_id TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (tenant_id, owner_id, profile_id)
);
CREATE TABLE IF NOT EXISTS ranking_profile_changes (
    tenant_id TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    slot TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    change_id TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (tenant_id, owner_id, slot, sequence)
);
"""


class SqliteRankingProfileStore:
    """Implements `RankingProfileStore`. A change is inserted in one transaction that first
    checks the slot's newest change id, so concurrent changes of one slot cannot both land
    (the primary key on the sequence refuses the second as well)."""

    def __init__(self, path: Path, *, synchronous: Synchronous = "normal") -> None:
        self._lock = threading.Lock()
        self._conn = connect(path, synchronous)
        with self._lock:
            self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _rows(self, sql: str, parameters: Sequence[Any]) -> list[tuple[Any, ...]]:
        try:
            with self._lock:
                return list(self._conn.execute(sql, parameters).fetchall())
        except sqlite3.Error as exc:
            raise StorageUnavailableError() from exc

    def create_profile(self, owner: OwnerKey, profile: RankingProfile) -> None:
        done = self._rows(
            "INSERT INTO ranking_profiles (tenant_id, owner_id, profile_id, body) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1",
            (owner.tenant_id, owner.owner_id, profile.profile_id, profile.model_dump_json()),
        )
        if not done:
            raise ConflictError("a ranking profile of that id exists")

    def get_profile(self, owner: OwnerKey, profile_id: str) -> RankingProfile | None:
        rows = self._rows(
            "SELECT body FROM ranking_profiles WHERE tenant_id = ? AND owner_id = ? "
            "AND profile_id = ?",
            (owner.tenant_id, owner.owner_id, profile_id),
        )
        return (
            load_record(RankingProfile, "ranking_profile", profile_id, rows[0][0]) if rows else None
        )

    def list_profiles(
        self, owner: OwnerKey, *, limit: int, after_id: str | None
    ) -> list[RankingProfile]:
        rows = self._rows(
            "SELECT profile_id, body FROM ranking_profiles WHERE tenant_id = ? AND owner_id = ? "
            "AND profile_id > ? ORDER BY profile_id LIMIT ?",
            (owner.tenant_id, owner.owner_id, after_id or "", limit),
        )
        return load_readable(RankingProfile, "ranking_profile", rows)

    def current_states(self, owner: OwnerKey) -> list[RankingProfileState]:
        rows = self._rows(
            "SELECT change_id, body FROM ranking_profile_changes AS c WHERE tenant_id = ? "
            "AND owner_id = ? AND sequence = (SELECT MAX(sequence) FROM ranking_profile_changes "
            "WHERE tenant_id = c.tenant_id AND owner_id = c.owner_id AND slot = c.slot) "
            "ORDER BY slot",
            (owner.tenant_id, owner.owner_id),
        )
        return load_readable(RankingProfileState, "ranking_change", rows)

    def list_history(self, owner: OwnerKey, slot: str, *, limit: int) -> list[RankingProfileState]:
        rows = self._rows(
            "SELECT change_id, body FROM ranking_profile_changes WHERE tenant_id = ? "
            "AND owner_id = ? AND slot = ? ORDER BY sequence DESC LIMIT ?",
            (owner.tenant_id, owner.owner_id, slot, limit),
        )
        return load_readable(RankingProfileState, "ranking_change", rows)

    def save_state(
        self, owner: OwnerKey, state: RankingProfileState, *, replacing: str | None
    ) -> None:
        key = (owner.tenant_id, owner.owner_id, state.slot)
        try:
            with self._lock:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    newest = self._conn.execute(
                        "SELECT change_id FROM ranking_profile_changes WHERE tenant_id = ? "
                        "AND owner_id = ? AND slot = ? ORDER BY sequence DESC LIMIT 1",
                        key,
                    ).fetchone()
                    if (newest[0] if newest else None) != replacing:
                        raise ConflictError("the slot changed since it was read")
                    self._conn.execute(
                        "INSERT INTO ranking_profile_changes VALUES (?, ?, ?, ?, ?, ?)",
                        (*key, state.sequence, state.change_id, state.model_dump_json()),
                    )
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
        except sqlite3.IntegrityError as exc:
            raise ConflictError("the slot changed since it was read") from exc
        except sqlite3.Error as exc:
            raise StorageUnavailableError() from exc

    def erase_owner(self, owner: OwnerKey) -> int:
        removed = 0
        for table in ("ranking_profiles", "ranking_profile_changes"):
            removed += len(
                self._rows(
                    f"DELETE FROM {table} WHERE tenant_id = ? AND owner_id = ? RETURNING 1",  # noqa: S608
                    (owner.tenant_id, owner.owner_id),
                )
            )
        return removed

"""The embedded backend's bulk imports: job records and a chunk outbox in `imports.sqlite3`.

Chunks are committed in the process that submits them, right after the job is saved: the
outbox keeps each chunk until it is committed, so a process killed mid-import finishes the
rest when the data directory is opened again (or at the next import's send).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from prme.backends.embedded.sqlite import Synchronous, connect
from prme.backends.stored_records import load_record
from prme.engine.imports import ImportChunkRefusedError
from prme.errors import ConflictError, CorruptRecordError, PrmeError
from prme.model.imports import ImportChunkMessage, ImportJob
from prme.model.records import OwnerKey

IMPORTS_FILE = "imports.sqlite3"

_log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS import_jobs (
    tenant_id TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    import_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (tenant_id, owner_id, import_id)
);
CREATE TABLE IF NOT EXISTS import_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    body TEXT NOT NULL
);
"""


class SqliteImports:
    """One connection to the imports file, shared by the job store and the chunk queue."""

    def __init__(self, path: Path, *, synchronous: Synchronous = "normal") -> None:
        self.lock = threading.RLock()
        self.conn = connect(path, synchronous)
        with self.lock:
            self.conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.lock:
            return list(self.conn.execute(sql, parameters).fetchall())


class SqliteImportJobStore:
    def __init__(self, db: SqliteImports) -> None:
        self._db = db

    def create_import(self, job: ImportJob) -> None:
        done = self._db.execute(
            "INSERT INTO import_jobs (tenant_id, owner_id, import_id, version, body) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1",
            (job.tenant_id, job.owner_id, job.import_id, job.version, job.model_dump_json()),
        )
        if not done:
            raise ConflictError("import already exists")

    def get_import(self, owner: OwnerKey, import_id: str) -> ImportJob | None:
        rows = self._db.execute(
            "SELECT body FROM import_jobs WHERE tenant_id = ? AND owner_id = ? AND import_id = ?",
            (owner.tenant_id, owner.owner_id, import_id),
        )
        return load_record(ImportJob, "import", import_id, rows[0][0]) if rows else None

    def save_import(self, job: ImportJob, *, replacing: ImportJob) -> None:
        done = self._db.execute(
            "UPDATE import_jobs SET version = ?, body = ? WHERE tenant_id = ? AND owner_id = ? "
            "AND import_id = ? AND version = ? RETURNING 1",
            (
                job.version,
                job.model_dump_json(),
                job.tenant_id,
                job.owner_id,
                job.import_id,
                replacing.version,
            ),
        )
        if not done:
            raise ConflictError("the import changed since it was read")

    def erase_owner(self, owner: OwnerKey) -> int:
        # Chunks still in the outbox hold the owner's content: they go too.
        self._db.execute(
            "DELETE FROM import_outbox WHERE json_extract(body, '$.tenant_id') = ? "
            "AND json_extract(body, '$.owner_id') = ?",
            (owner.tenant_id, owner.owner_id),
        )
        rows = self._db.execute(
            "DELETE FROM import_jobs WHERE tenant_id = ? AND owner_id = ? RETURNING 1",
            (owner.tenant_id, owner.owner_id),
        )
        return len(rows)


ChunkHandler = Callable[[ImportChunkMessage], object]


class EmbeddedImportQueue:
    """Keeps sent chunks in the outbox and commits them in this process, oldest first.

    The handler (the engine's `commit_import_chunk`) is attached once the engine exists. A
    chunk that fails for a passing cause stays in the outbox for the next drain; one that can
    never commit (refused, or unreadable) is dropped and logged without its content."""

    def __init__(self, db: SqliteImports) -> None:
        self._db = db
        self._handler: ChunkHandler | None = None
        self._draining = threading.Lock()

    def attach(self, handler: ChunkHandler) -> None:
        self._handler = handler

    def send_chunks(self, chunks: Sequence[ImportChunkMessage]) -> None:
        with self._db.lock:
            self._db.conn.execute("BEGIN IMMEDIATE")
            try:
                self._db.conn.executemany(
                    "INSERT INTO import_outbox (body) VALUES (?)",
                    [(chunk.body(),) for chunk in chunks],
                )
            except BaseException:
                self._db.conn.execute("ROLLBACK")
                raise
            self._db.conn.execute("COMMIT")
        self.drain()

    def pending(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM import_outbox")[0][0])

    def drain(self) -> int:
        """Commit every chunk waiting in the outbox; how many were handled."""
        if self._handler is None:
            return 0
        handled = 0
        with self._draining:
            after = 0
            while True:
                rows = self._db.execute(
                    "SELECT seq, body FROM import_outbox WHERE seq > ? ORDER BY seq LIMIT 1",
                    (after,),
                )
                if not rows:
                    return handled
                seq, body = rows[0]
                after = seq
                if self._handle(seq, body):
                    self._db.execute("DELETE FROM import_outbox WHERE seq = ?", (seq,))
                    handled += 1

    def _handle(self, seq: int, body: str) -> bool:
        """Whether the chunk is finished with (committed, or never committable)."""
        if self._handler is None:
            return False
        try:
            message = load_record(ImportChunkMessage, "import_chunk", str(seq), body)
            self._handler(message)
        except (ImportChunkRefusedError, CorruptRecordError) as exc:
            _log.warning("import chunk dropped", extra={"error": type(exc).__name__})
        except PrmeError as exc:
            # A passing cause (storage busy): kept for the next drain.
            _log.warning("import chunk deferred", extra={"error": type(exc).__name__})
            return False
        return True

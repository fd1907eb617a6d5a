"""`SqliteVectorIndex`: SQLite FTS5 (BM25) for lexical search and exact numpy cosine for vectors.

Documents live in one SQLite file; each owner's vectors are held in memory as a matrix
and reloaded only when another process changed that owner's documents.
"""

from __future__ import annotations

import logging
import sqlite3
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from prme.backends.embedded.sqlite import Synchronous, connect
from prme.backends.query_words import query_words
from prme.backends.session_order import alternate
from prme.errors import IndexUnavailableError
from prme.model.conditions import ConditionState
from prme.model.enums import EpistemicType
from prme.model.records import OwnerKey
from prme.model.search import IndexDocument, IndexFilter, IndexHits, IndexQuery

logger = logging.getLogger("prme.index")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    rowid INTEGER PRIMARY KEY, tenant TEXT NOT NULL, owner TEXT NOT NULL, node_id TEXT NOT NULL,
    node_type TEXT NOT NULL, source_type TEXT NOT NULL, epistemic_type TEXT NOT NULL,
    lifecycle_state TEXT NOT NULL, scope TEXT NOT NULL, session_id TEXT,
    event_time REAL, created_at REAL NOT NULL, expires_at REAL,
    model TEXT, vector BLOB, text TEXT NOT NULL, content_vector BLOB, condition_state TEXT,
    UNIQUE (tenant, owner, node_id));
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(
    text, tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS generations (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, generation INTEGER NOT NULL,
    PRIMARY KEY (tenant, owner)) WITHOUT ROWID;
"""
# The previous record of a session is one descent of this index (see `session_predecessor`).
_SESSION_INDEX = """
CREATE INDEX IF NOT EXISTS docs_session_time ON docs (
    tenant, owner, session_id, COALESCE(event_time, created_at), node_id)
    WHERE session_id IS NOT NULL;
"""

_INSERT_DOC = (
    "INSERT INTO docs (tenant, owner, node_id, node_type, source_type, epistemic_type, "
    "lifecycle_state, scope, session_id, event_time, created_at, expires_at, model, "
    "vector, text, content_vector, condition_state) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_NEW_DOC = _INSERT_DOC + " ON CONFLICT (tenant, owner, node_id) DO NOTHING"
# A first generation starts at the clock, not at 1: an owner's row is deleted by an erasure,
# and a row created again must not repeat a generation another process cached before it.
_NEXT_GENERATION = (
    "INSERT INTO generations VALUES (?, ?, ?) ON CONFLICT(tenant, owner) "
    "DO UPDATE SET generation = generation + 1"
)
_CONDITIONAL = EpistemicType.CONDITIONAL.value
_FILTER_COLUMNS = ("node_type", "source_type", "epistemic_type", "lifecycle_state", "scope")


def _blob(vector: tuple[float, ...] | None) -> bytes | None:
    """Native float32 bytes, as numpy's float32 `tobytes` writes them: struct casts each
    float to a C float the same way and skips building an intermediate array."""
    return struct.pack(f"{len(vector)}f", *vector) if vector is not None else None


def _from_blob(blob: bytes) -> tuple[float, ...]:
    """The vector a `_blob` stored, as Python floats (each float32 widened exactly)."""
    values: tuple[float, ...] = struct.unpack(f"{len(blob) // 4}f", blob)
    return values


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def match_expression(text: str) -> str | None:
    """An FTS5 OR query of the text's distinct words, each quoted so no word is an operator."""
    words = query_words(text)
    return " OR ".join(f'"{w}"' for w in words) if words else None


@dataclass
class _OwnerVectors:
    generation: int
    node_ids: list[str]
    position: dict[str, int]
    matrix: NDArray[np.float32]
    models: frozenset[str | None]
    columns: dict[str, NDArray[np.str_]]
    event_time: NDArray[np.float64]
    effective_time: NDArray[np.float64]
    expires_at: NDArray[np.float64]
    condition_true: NDArray[np.bool_]


class SqliteVectorIndex:
    """Implements the `SearchIndex` port for the embedded backend."""

    def __init__(self, path: Path, *, synchronous: Synchronous = "normal") -> None:
        self._conn = connect(path, synchronous)
        self._lock = threading.RLock()
        self._vectors: dict[tuple[str, str], _OwnerVectors] = {}
        with self._lock:
            self._conn.executescript(_SCHEMA)
            self._add_later_columns()
            self._conn.executescript(_SESSION_INDEX)

    def _add_later_columns(self) -> None:
        """Files written before a column existed gain it: content vectors (NULL: use
        `vector`) and condition states (NULL: not evaluated, until the node is indexed again)."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(docs)")}
            for name, kind in (("content_vector", "BLOB"), ("condition_state", "TEXT")):
                if name not in columns:
                    # Names and types are the constants above, never input.
                    self._conn.execute(f"ALTER TABLE docs ADD COLUMN {name} {kind}")
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, under the lock; a SQLite failure rolls it back and is the
        index being unavailable."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            yield self._conn
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise IndexUnavailableError() from exc

    # -- writes ------------------------------------------------------------------------

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        if not documents:
            return
        owners = {(d.tenant_id, d.owner_id) for d in documents}
        with self._lock:
            with self._writing() as conn:
                for doc in documents:
                    self._write(doc)
                for tenant, owner in owners:
                    conn.execute(_NEXT_GENERATION, (tenant, owner, time.time_ns()))
            # The matrices are reloaded lazily at the next search of each owner.
            for key in owners:
                self._vectors.pop(key, None)

    def delete(self, owner: OwnerKey, node_ids: Sequence[str]) -> None:
        if not node_ids:
            return
        key = (owner.tenant_id, owner.owner_id)
        with self._lock:
            with self._writing() as conn:
                for node_id in node_ids:
                    found = conn.execute(
                        "SELECT rowid FROM docs WHERE tenant=? AND owner=? AND node_id=?",
                        (*key, node_id),
                    ).fetchone()
                    if found is not None:
                        conn.execute("DELETE FROM docs_fts WHERE rowid=?", found)
                        conn.execute("DELETE FROM docs WHERE rowid=?", found)
                # A new generation: another process's cached matrices reload too.
                conn.execute(_NEXT_GENERATION, (*key, time.time_ns()))
            self._vectors.pop(key, None)

    def delete_owner(self, owner: OwnerKey) -> int:
        key = (owner.tenant_id, owner.owner_id)
        with self._lock:
            with self._writing() as conn:
                conn.execute(
                    "DELETE FROM docs_fts WHERE rowid IN "
                    "(SELECT rowid FROM docs WHERE tenant=? AND owner=?)",
                    key,
                )
                removed = conn.execute("DELETE FROM docs WHERE tenant=? AND owner=?", key).rowcount
                # No generation row is left to name the owner: another process's cached
                # matrices see the generation change (to none) and reload.
                conn.execute("DELETE FROM generations WHERE tenant=? AND owner=?", key)
                if removed:
                    # A deleted FTS row leaves its words in the index segments until they are
                    # merged: merge now, so no word of the owner's stays in the file's tables.
                    conn.execute("INSERT INTO docs_fts(docs_fts) VALUES ('optimize')")
            self._vectors.pop(key, None)
            return removed

    def _write(self, doc: IndexDocument) -> None:
        vector = _blob(doc.vector)
        # Stored only when it differs from `vector`; the lookup falls back to `vector`.
        content_vector = _blob(doc.content_vector) if doc.content_vector != doc.vector else None
        values = (
            doc.tenant_id,
            doc.owner_id,
            doc.node_id,
            doc.node_type.value,
            doc.source_type.value,
            doc.epistemic_type.value,
            doc.lifecycle_state.value,
            doc.scope.value,
            doc.session_id,
            _ts(doc.event_time),
            doc.created_at.timestamp(),
            _ts(doc.expires_at),
            doc.embedding_model,
            vector,
            doc.text,
            content_vector,
            doc.condition_state.value if doc.condition_state is not None else None,
        )
        # A new node (the usual case) costs one statement. A node already indexed is replaced
        # as before: its row and text are deleted and the new row takes the next rowid.
        cursor = self._conn.execute(_INSERT_NEW_DOC, values)
        if cursor.rowcount == 0:
            (rowid,) = self._conn.execute(
                "SELECT rowid FROM docs WHERE tenant=? AND owner=? AND node_id=?",
                (doc.tenant_id, doc.owner_id, doc.node_id),
            ).fetchone()
            self._conn.execute("DELETE FROM docs_fts WHERE rowid=?", (rowid,))
            self._conn.execute("DELETE FROM docs WHERE rowid=?", (rowid,))
            cursor = self._conn.execute(_INSERT_DOC, values)
        self._conn.execute(
            "INSERT INTO docs_fts (rowid, text) VALUES (?, ?)", (cursor.lastrowid, doc.text)
        )

    # -- reads -------------------------------------------------------------------------

    def search(self, owner: OwnerKey, query: IndexQuery) -> IndexHits:
        with self._lock:
            try:
                lexical = self._lexical(owner, query)
                vectors = self._owner_vectors(owner)
            except sqlite3.Error as exc:
                raise IndexUnavailableError() from exc
        mask = self._mask(vectors, query.filters)
        semantic: dict[str, float] = {}
        vector_hits: list[tuple[str, float]] = []
        failure: str | None = None
        if query.vector is None:
            failure = "no_query_vector"
        elif any(model != query.embedding_model for model in vectors.models) or (
            vectors.node_ids and vectors.matrix.shape[1] != len(query.vector)
        ):
            failure = "embedding_model_mismatch"
        elif vectors.node_ids:
            q = np.asarray(query.vector, dtype=np.float32)
            # Score every row, then drop filtered rows: cheaper than copying the allowed rows.
            # einsum runs in this thread; a BLAS matmul would wake BLAS worker threads that
            # keep spinning afterwards and slow the next embedding on a small machine.
            scores = np.einsum("ij,j->i", vectors.matrix, q)
            allowed = int(mask.sum())
            if allowed:
                masked = np.where(mask, scores, -np.inf)
                k = min(query.vector_k, allowed)
                top = np.argpartition(-masked, k - 1)[:k]
                vector_hits = sorted(
                    ((vectors.node_ids[i], float(scores[i])) for i in top),
                    key=lambda kv: (-kv[1], kv[0]),
                )
                semantic.update(vector_hits)
            for node_id, _ in lexical:
                if node_id not in semantic and node_id in vectors.position:
                    semantic[node_id] = float(vectors.matrix[vectors.position[node_id]] @ q)
        return IndexHits(
            vector=tuple(vector_hits),
            lexical=tuple(lexical),
            semantic=semantic,
            vector_failure=failure,
        )

    def _session_predecessor(
        self, owner: OwnerKey, session_id: str, before: datetime, embedding_model: str
    ) -> tuple[str, tuple[float, ...]] | None:
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT node_id, model, COALESCE(content_vector, vector) FROM docs "
                    "WHERE tenant=? AND owner=? AND session_id=? "
                    "AND COALESCE(event_time, created_at) < ? "
                    "ORDER BY COALESCE(event_time, created_at) DESC, node_id DESC LIMIT 1",
                    (owner.tenant_id, owner.owner_id, session_id, before.timestamp()),
                ).fetchone()
            except sqlite3.Error as exc:
                raise IndexUnavailableError() from exc
        if row is None or row[1] != embedding_model or row[2] is None:
            return None
        return str(row[0]), _from_blob(row[2])

    def session_predecessors(
        self,
        owner: OwnerKey,
        lookups: Sequence[tuple[str, datetime]],
        embedding_model: str,
    ) -> list[tuple[str, tuple[float, ...]] | None]:
        # Each lookup is one descent of an index on a local file: a loop costs no round trips.
        return [self._session_predecessor(owner, s, t, embedding_model) for s, t in lookups]

    def session_neighbours(
        self, owner: OwnerKey, anchors: Sequence[tuple[str, datetime, str]], radius: int
    ) -> list[list[str]]:
        found: list[list[str]] = []
        key = "COALESCE(event_time, created_at)"
        with self._lock:
            try:
                for session_id, when, node_id in anchors:
                    at = when.timestamp()
                    params = (owner.tenant_id, owner.owner_id, session_id, at, at, node_id, radius)
                    before = self._conn.execute(
                        "SELECT node_id FROM docs WHERE tenant=? AND owner=? AND session_id=? "  # noqa: S608
                        f"AND ({key} < ? OR ({key} = ? AND node_id < ?)) "
                        f"ORDER BY {key} DESC, node_id DESC LIMIT ?",
                        params,
                    ).fetchall()
                    after = self._conn.execute(
                        "SELECT node_id FROM docs WHERE tenant=? AND owner=? AND session_id=? "  # noqa: S608
                        f"AND ({key} > ? OR ({key} = ? AND node_id > ?)) "
                        f"ORDER BY {key} ASC, node_id ASC LIMIT ?",
                        params,
                    ).fetchall()
                    found.append(alternate([r[0] for r in before], [r[0] for r in after]))
            except sqlite3.Error as exc:
                raise IndexUnavailableError() from exc
        return found

    def _lexical(self, owner: OwnerKey, query: IndexQuery) -> list[tuple[str, float]]:
        expression = match_expression(query.text)
        if expression is None or query.lexical_k <= 0:
            return []
        where, params = _filter_sql(query.filters)
        # FTS5 ranks fastest without a join: take a generous best-first window, then filter.
        # Only when filters (or other owners' documents) empty that window do we rank everything.
        window = max(query.lexical_k * 8, 400)
        rows = self._conn.execute(
            # Only placeholders are interpolated; every value is bound.
            "SELECT d.node_id, f.rank FROM (SELECT rowid, bm25(docs_fts) AS rank FROM docs_fts "  # noqa: S608
            "WHERE docs_fts MATCH ? ORDER BY rank LIMIT ?) f JOIN docs d ON d.rowid = f.rowid "
            f"WHERE d.tenant=? AND d.owner=?{where} ORDER BY f.rank, d.node_id LIMIT ?",
            (expression, window, owner.tenant_id, owner.owner_id, *params, query.lexical_k),
        ).fetchall()
        if len(rows) < query.lexical_k:
            rows = self._conn.execute(
                "SELECT d.node_id, bm25(docs_fts) AS rank FROM docs_fts JOIN docs d "  # noqa: S608
                "ON d.rowid = docs_fts.rowid WHERE docs_fts MATCH ? AND d.tenant=? AND d.owner=?"
                f"{where} ORDER BY rank, d.node_id LIMIT ?",
                (expression, owner.tenant_id, owner.owner_id, *params, query.lexical_k),
            ).fetchall()
        # FTS5's bm25() is lower-is-better; flip it so every channel reads higher-is-better.
        return [(node_id, -float(rank)) for node_id, rank in rows]

    def _owner_vectors(self, owner: OwnerKey) -> _OwnerVectors:
        key = (owner.tenant_id, owner.owner_id)
        row = self._conn.execute(
            "SELECT generation FROM generations WHERE tenant=? AND owner=?", key
        ).fetchone()
        generation = int(row[0]) if row else 0
        cached = self._vectors.get(key)
        if cached is not None and cached.generation == generation:
            return cached
        rows = self._conn.execute(
            "SELECT node_id, model, vector, node_type, source_type, epistemic_type, "
            "lifecycle_state, scope, event_time, expires_at, created_at, condition_state "
            "FROM docs WHERE tenant=? AND owner=? "
            "AND vector IS NOT NULL ORDER BY rowid",
            key,
        ).fetchall()
        # Every model seen, readable or not: a mix still reads as a model mismatch below.
        models = frozenset(r[1] for r in rows)
        rows = _readable_rows(rows)
        node_ids = [r[0] for r in rows]
        dim = len(rows[0][2]) // 4 if rows else 0
        matrix = (
            np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), dim)
            if rows
            else np.zeros((0, 0), dtype=np.float32)
        )
        loaded = _OwnerVectors(
            generation=generation,
            node_ids=node_ids,
            position={nid: i for i, nid in enumerate(node_ids)},
            matrix=matrix,
            models=models,
            columns={
                name: np.array([r[3 + i] for r in rows], dtype=np.str_)
                for i, name in enumerate(_FILTER_COLUMNS)
            },
            event_time=np.array([np.nan if r[8] is None else r[8] for r in rows], dtype=np.float64),
            effective_time=np.array(
                [r[10] if r[8] is None else r[8] for r in rows], dtype=np.float64
            ),
            expires_at=np.array([np.inf if r[9] is None else r[9] for r in rows], dtype=np.float64),
            condition_true=np.array([r[11] == "true" for r in rows], dtype=bool),
        )
        self._vectors[key] = loaded
        return loaded

    @staticmethod
    def _mask(vectors: _OwnerVectors, flt: IndexFilter) -> NDArray[np.bool_]:
        mask = np.ones(len(vectors.node_ids), dtype=bool)
        if not len(mask):
            return mask
        cols = vectors.columns
        if flt.exclude_node_types:
            mask &= ~np.isin(cols["node_type"], [t.value for t in flt.exclude_node_types])
        if flt.source_types is not None:
            mask &= np.isin(cols["source_type"], [t.value for t in flt.source_types])
        if flt.exclude_lifecycle_states:
            mask &= ~np.isin(
                cols["lifecycle_state"], [t.value for t in flt.exclude_lifecycle_states]
            )
        if flt.exclude_epistemic_types:
            mask &= ~np.isin(cols["epistemic_type"], [t.value for t in flt.exclude_epistemic_types])
        if flt.scopes is not None:
            mask &= np.isin(cols["scope"], [s.value for s in flt.scopes])
        if flt.conditions_must_hold:
            mask &= ~((cols["epistemic_type"] == _CONDITIONAL) & ~vectors.condition_true)
        if flt.not_expired_at is not None:
            mask &= vectors.expires_at > flt.not_expired_at.timestamp()
        if flt.event_time_from is not None:
            mask &= vectors.event_time >= flt.event_time_from.timestamp()
        if flt.event_time_to is not None:
            mask &= vectors.event_time <= flt.event_time_to.timestamp()
        if flt.time_from is not None:
            mask &= vectors.effective_time >= flt.time_from.timestamp()
        if flt.time_to is not None:
            mask &= vectors.effective_time <= flt.time_to.timestamp()
        return mask


def _filter_sql(flt: IndexFilter) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []

    def values_in(column: str, values: Sequence[str], negate: bool) -> None:
        marks = ",".join("?" * len(values))
        clauses.append(f"d.{column} {'NOT ' if negate else ''}IN ({marks})")
        params.extend(values)

    if flt.exclude_node_types:
        values_in("node_type", sorted(t.value for t in flt.exclude_node_types), True)
    if flt.source_types is not None:
        values_in("source_type", sorted(t.value for t in flt.source_types), False)
    if flt.exclude_lifecycle_states:
        values_in("lifecycle_state", sorted(t.value for t in flt.exclude_lifecycle_states), True)
    if flt.exclude_epistemic_types:
        values_in("epistemic_type", sorted(t.value for t in flt.exclude_epistemic_types), True)
    if flt.scopes is not None:
        values_in("scope", sorted(s.value for s in flt.scopes), False)
    if flt.conditions_must_hold:
        clauses.append("NOT (d.epistemic_type = ? AND COALESCE(d.condition_state, '') != ?)")
        params.extend([_CONDITIONAL, ConditionState.TRUE.value])
    for clause, bound in (
        ("(d.expires_at IS NULL OR d.expires_at > ?)", flt.not_expired_at),
        ("d.event_time >= ?", flt.event_time_from),
        ("d.event_time <= ?", flt.event_time_to),
        ("COALESCE(d.event_time, d.created_at) >= ?", flt.time_from),
        ("COALESCE(d.event_time, d.created_at) <= ?", flt.time_to),
    ):
        if bound is not None:
            clauses.append(clause)
            params.append(bound.timestamp())
    return ("".join(f" AND {c}" for c in clauses), params)


def _readable_rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The document rows vector search can use: vectors of the most common width, numeric
    times. A damaged row (or one of an older model's width) is left out of the vector
    channel, and logged by count, instead of failing every search of its owner."""
    blobs = [r for r in rows if isinstance(r[2], bytes)]
    widths = Counter(len(r[2]) for r in blobs if len(r[2]) and not len(r[2]) % 4)
    width = widths.most_common(1)[0][0] if widths else -1
    readable = [
        r
        for r in blobs
        if len(r[2]) == width and all(t is None or isinstance(t, int | float) for t in r[8:11])
    ]
    if len(readable) < len(rows):
        logger.warning("%d unreadable index vectors skipped", len(rows) - len(readable))
    return readable

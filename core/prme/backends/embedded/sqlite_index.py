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
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from prme.backends.embedded.sqlite import Synchronous, connect
from prme.backends.embedded.vector_clusters import VectorClusters
from prme.backends.query_words import query_words
from prme.backends.session_order import alternate
from prme.errors import IndexUnavailableError
from prme.model.conditions import ConditionState
from prme.model.enums import EpistemicType
from prme.model.records import OwnerKey
from prme.model.search import (
    IndexDocument,
    IndexFilter,
    IndexHits,
    IndexQuery,
    VectorSearchSettings,
)

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
    """An owner's documents as search reads them: every document's filter columns (so both
    channels filter in memory) and the matrix of the readable vectors."""

    generation: int
    # Every document of the owner with readable times, in rowid order.
    doc_ids: list[str]
    doc_of_rowid: dict[int, int]
    # False when a document's times were unreadable: lexical hits are then filtered in SQL.
    complete: bool
    codes: dict[str, NDArray[np.int32]]
    vocabulary: dict[str, dict[str, int]]
    event_time: NDArray[np.float64]
    effective_time: NDArray[np.float64]
    expires_at: NDArray[np.float64]
    condition_true: NDArray[np.bool_]
    # The vector rows: each one's document, node id and position.
    doc_of_row: NDArray[np.intp]
    node_ids: list[str]
    position: dict[str, int]
    matrix: NDArray[np.float32]
    models: frozenset[str | None]
    doc_of_node: dict[str, int]
    clusters: VectorClusters | None = None
    # Rows allocated past the matrix's end, so appending a document seldom copies it.
    rows: NDArray[np.float32] | None = None

    def append(self, added: Sequence[tuple[IndexDocument, int]]) -> None:
        """New documents (see `_appendable`), in rowid order after the cached ones: the
        same state a reload would give."""
        for doc, rowid in added:
            position = len(self.doc_ids)
            self.doc_of_node[doc.node_id] = position
            self.doc_of_rowid[rowid] = position
            self.doc_ids.append(doc.node_id)
        for name in _FILTER_COLUMNS:
            values = self.vocabulary[name]
            self.codes[name] = np.concatenate(
                [
                    self.codes[name],
                    np.array(
                        [values.setdefault(getattr(d, name).value, len(values)) for d, _ in added],
                        dtype=np.int32,
                    ),
                ]
            )
        docs = [d for d, _ in added]
        self.event_time = np.concatenate(
            [
                self.event_time,
                [np.nan if d.event_time is None else d.event_time.timestamp() for d in docs],
            ]
        )
        self.effective_time = np.concatenate(
            [self.effective_time, [d.effective_time.timestamp() for d in docs]]
        )
        self.expires_at = np.concatenate(
            [
                self.expires_at,
                [np.inf if d.expires_at is None else d.expires_at.timestamp() for d in docs],
            ]
        )
        self.condition_true = np.concatenate(
            [self.condition_true, [d.condition_state is ConditionState.TRUE for d in docs]]
        )
        with_vector = [(d, self.doc_of_node[d.node_id]) for d in docs if d.vector is not None]
        if not with_vector:
            return
        first = len(self.node_ids)
        vectors = np.array([d.vector for d, _ in with_vector], dtype=np.float32)
        end = first + len(vectors)
        if self.rows is None or len(self.rows) < end:
            self.rows = np.empty((end + end // 4 + 64, vectors.shape[1]), dtype=np.float32)
            self.rows[:first] = self.matrix
        self.rows[first:end] = vectors
        self.matrix = self.rows[:end]
        self.doc_of_row = np.concatenate(
            [self.doc_of_row, np.array([p for _, p in with_vector], dtype=np.intp)]
        )
        for d, _ in with_vector:
            self.position[d.node_id] = len(self.node_ids)
            self.node_ids.append(d.node_id)
        if self.clusters is not None:
            self.clusters.add(vectors, first)


def _appendable(cached: _OwnerVectors, documents: Sequence[IndexDocument]) -> bool:
    """Whether `documents` can join a cached owner in place: all new (none replaces one),
    and every vector of the width and model the cache already searches."""
    ids = [d.node_id for d in documents]
    if len(set(ids)) < len(ids) or any(i in cached.doc_of_node for i in ids):
        return False
    return all(
        d.vector is None
        or (
            cached.node_ids
            and len(d.vector) == cached.matrix.shape[1]
            and cached.models == frozenset([d.embedding_model])
        )
        for d in documents
    )


class SqliteVectorIndex:
    """Implements the `SearchIndex` port for the embedded backend."""

    def __init__(
        self,
        path: Path,
        *,
        synchronous: Synchronous = "normal",
        vector_search: VectorSearchSettings | None = None,
    ) -> None:
        self._conn = connect(path, synchronous)
        self._vector_search = vector_search or VectorSearchSettings()
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
                before = {key: self._generation(key) for key in owners}
                rowids: list[int] = []
                for doc in documents:
                    self._write(doc)
                    # The text's row, inserted last, takes the document's rowid.
                    rowids.append(conn.execute("SELECT last_insert_rowid()").fetchone()[0])
                for tenant, owner in owners:
                    conn.execute(_NEXT_GENERATION, (tenant, owner, time.time_ns()))
                after = {key: self._generation(key) for key in owners}
            for key in owners:
                self._keep_in_sync(key, before[key], after[key], documents, rowids)

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

    def search(self, owner: OwnerKey, query: IndexQuery, *, exact: bool = False) -> IndexHits:
        """Both channels' hits; `exact` scores every vector row even above the threshold
        (the benchmark's reference for the approximate search's recall)."""
        semantic: dict[str, float] = {}
        vector_hits: list[tuple[str, float]] = []
        failure: str | None = None
        # Under the lock throughout: a write of this process appends to the cached arrays.
        with self._lock:
            try:
                vectors = self._owner_vectors(owner)
                mask = self._mask(vectors, query.filters)
                lexical = self._lexical(owner, query, vectors, mask)
            except sqlite3.Error as exc:
                raise IndexUnavailableError() from exc
            if query.vector is None:
                failure = "no_query_vector"
            elif any(model != query.embedding_model for model in vectors.models) or (
                vectors.node_ids and vectors.matrix.shape[1] != len(query.vector)
            ):
                failure = "embedding_model_mismatch"
            elif vectors.node_ids:
                q = np.asarray(query.vector, dtype=np.float32)
                row_mask = mask[vectors.doc_of_row]
                found = None if exact else self._approximate(vectors, q, row_mask, query.vector_k)
                vector_hits = found if found is not None else _exact(vectors, q, row_mask, query)
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

    def vector_search_kind(self, owner: OwnerKey) -> str:
        """ "approximate" when the owner's vectors are searched through clusters, else "exact"."""
        with self._lock:
            vectors = self._owner_vectors(owner)
        return "approximate" if self._clusters(vectors) is not None else "exact"

    def _clusters(self, vectors: _OwnerVectors) -> VectorClusters | None:
        """The owner's clusters, built at the first search that needs them."""
        if len(vectors.node_ids) < self._vector_search.approximate_from:
            return None
        if vectors.clusters is None:
            vectors.clusters = VectorClusters.build(vectors.matrix)
        return vectors.clusters

    def _approximate(
        self,
        vectors: _OwnerVectors,
        q: NDArray[np.float32],
        row_mask: NDArray[np.bool_],
        k: int,
    ) -> list[tuple[str, float]] | None:
        """The best `k` allowed rows of the nearest clusters, or None (search exactly) when
        the owner is below the threshold or the filters leave fewer than `k` rows there."""
        clusters = self._clusters(vectors)
        if clusters is None:
            return None
        rows = clusters.shortlist(q, self._vector_search.probe)
        rows = rows[row_mask[rows]]
        if len(rows) < k:
            return None
        scores = np.einsum("ij,j->i", vectors.matrix[rows], q)
        top = np.argpartition(-scores, k - 1)[:k]
        return sorted(
            ((vectors.node_ids[rows[i]], float(scores[i])) for i in top),
            key=lambda kv: (-kv[1], kv[0]),
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

    def _lexical(
        self,
        owner: OwnerKey,
        query: IndexQuery,
        vectors: _OwnerVectors,
        mask: NDArray[np.bool_],
    ) -> list[tuple[str, float]]:
        expression = match_expression(query.text)
        if expression is None or query.lexical_k <= 0:
            return []
        # FTS5 ranks fastest without a join: take a generous best-first window, then keep the
        # owner's documents the filters allow (in memory: the mask of the vector channel).
        # Only when that leaves too few do we rank everything in SQL.
        window = max(query.lexical_k * 8, 400)
        if vectors.complete:
            kept: list[tuple[float, str]] = []
            for rowid, rank in self._conn.execute(
                "SELECT rowid, bm25(docs_fts) AS rank FROM docs_fts "
                "WHERE docs_fts MATCH ? ORDER BY rank LIMIT ?",
                (expression, window),
            ):
                doc = vectors.doc_of_rowid.get(rowid)
                if doc is not None and mask[doc]:
                    kept.append((rank, vectors.doc_ids[doc]))
            if len(kept) >= query.lexical_k:
                kept.sort()
                return [(node_id, -float(rank)) for rank, node_id in kept[: query.lexical_k]]
        where, params = _filter_sql(query.filters)
        rows = self._conn.execute(
            "SELECT d.node_id, bm25(docs_fts) AS rank FROM docs_fts JOIN docs d "  # noqa: S608
            "ON d.rowid = docs_fts.rowid WHERE docs_fts MATCH ? AND d.tenant=? AND d.owner=?"
            f"{where} ORDER BY rank, d.node_id LIMIT ?",
            (expression, owner.tenant_id, owner.owner_id, *params, query.lexical_k),
        ).fetchall()
        # FTS5's bm25() is lower-is-better; flip it so every channel reads higher-is-better.
        return [(node_id, -float(rank)) for node_id, rank in rows]

    def _generation(self, key: tuple[str, str]) -> int:
        row = self._conn.execute(
            "SELECT generation FROM generations WHERE tenant=? AND owner=?", key
        ).fetchone()
        return int(row[0]) if row else 0

    def _keep_in_sync(
        self,
        key: tuple[str, str],
        before: int,
        after: int,
        documents: Sequence[IndexDocument],
        rowids: list[int],
    ) -> None:
        """After this process wrote `documents`: the owner's cached documents take the new
        ones in place (appended, so its clusters stay), when the cache was current and every
        document is new and readable. Otherwise the cache is dropped and reloaded lazily at
        the owner's next search."""
        cached = self._vectors.get(key)
        if cached is None:
            return
        mine = [
            (d, r)
            for d, r in zip(documents, rowids, strict=True)
            if key == (d.tenant_id, d.owner_id)
        ]
        if cached.generation != before or not _appendable(cached, [d for d, _ in mine]):
            self._vectors.pop(key, None)
            return
        cached.append([(d, r) for d, r in mine])
        cached.generation = after

    def _owner_vectors(self, owner: OwnerKey) -> _OwnerVectors:
        key = (owner.tenant_id, owner.owner_id)
        generation = self._generation(key)
        cached = self._vectors.get(key)
        if cached is not None and cached.generation == generation:
            return cached
        rows = self._conn.execute(
            "SELECT node_id, model, vector, node_type, source_type, epistemic_type, "
            "lifecycle_state, scope, event_time, expires_at, created_at, condition_state, rowid "
            "FROM docs WHERE tenant=? AND owner=? ORDER BY rowid",
            key,
        ).fetchall()
        docs = [r for r in rows if all(t is None or isinstance(t, int | float) for t in r[8:11])]
        with_vector = [r for r in rows if r[2] is not None]
        # Every model seen, readable or not: a mix still reads as a model mismatch below.
        models = frozenset(r[1] for r in with_vector)
        readable = _readable_rows(with_vector)
        doc_of_rowid = {r[12]: i for i, r in enumerate(docs)}
        node_ids = [r[0] for r in readable]
        dim = len(readable[0][2]) // 4 if readable else 0
        matrix = (
            np.frombuffer(b"".join(r[2] for r in readable), dtype=np.float32).reshape(
                len(readable), dim
            )
            if readable
            else np.zeros((0, 0), dtype=np.float32)
        )
        vocabulary: dict[str, dict[str, int]] = {}
        codes: dict[str, NDArray[np.int32]] = {}
        for i, name in enumerate(_FILTER_COLUMNS):
            values = vocabulary[name] = {}
            codes[name] = np.array(
                [values.setdefault(r[3 + i], len(values)) for r in docs], dtype=np.int32
            )
        loaded = _OwnerVectors(
            generation=generation,
            doc_ids=[r[0] for r in docs],
            doc_of_rowid=doc_of_rowid,
            complete=len(docs) == len(rows),
            codes=codes,
            vocabulary=vocabulary,
            event_time=np.array([np.nan if r[8] is None else r[8] for r in docs], dtype=np.float64),
            effective_time=np.array(
                [r[10] if r[8] is None else r[8] for r in docs], dtype=np.float64
            ),
            expires_at=np.array([np.inf if r[9] is None else r[9] for r in docs], dtype=np.float64),
            condition_true=np.array([r[11] == "true" for r in docs], dtype=bool),
            doc_of_row=np.array([doc_of_rowid[r[12]] for r in readable], dtype=np.intp),
            node_ids=node_ids,
            position={nid: i for i, nid in enumerate(node_ids)},
            matrix=matrix,
            models=models,
            doc_of_node={r[0]: i for i, r in enumerate(docs)},
        )
        self._vectors[key] = loaded
        return loaded

    @staticmethod
    def _mask(vectors: _OwnerVectors, flt: IndexFilter) -> NDArray[np.bool_]:
        """Which of the owner's documents the filter allows (indexed like `doc_ids`)."""
        mask = np.ones(len(vectors.doc_ids), dtype=bool)
        if not len(mask):
            return mask

        def among(column: str, values: Iterable[str]) -> NDArray[np.bool_]:
            known = vectors.vocabulary[column]
            allowed = np.zeros(len(known), dtype=bool)
            allowed[[known[v] for v in values if v in known]] = True
            result: NDArray[np.bool_] = allowed[vectors.codes[column]]
            return result

        if flt.exclude_node_types:
            mask &= ~among("node_type", (t.value for t in flt.exclude_node_types))
        if flt.source_types is not None:
            mask &= among("source_type", (t.value for t in flt.source_types))
        if flt.exclude_lifecycle_states:
            mask &= ~among("lifecycle_state", (t.value for t in flt.exclude_lifecycle_states))
        if flt.exclude_epistemic_types:
            mask &= ~among("epistemic_type", (t.value for t in flt.exclude_epistemic_types))
        if flt.scopes is not None:
            mask &= among("scope", (s.value for s in flt.scopes))
        if flt.conditions_must_hold:
            mask &= ~(among("epistemic_type", [_CONDITIONAL]) & ~vectors.condition_true)
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


def _exact(
    vectors: _OwnerVectors, q: NDArray[np.float32], row_mask: NDArray[np.bool_], query: IndexQuery
) -> list[tuple[str, float]]:
    """The best `vector_k` allowed rows, every row scored."""
    # Score every row, then drop filtered rows: cheaper than copying the allowed rows.
    # einsum runs in this thread; a BLAS matmul would wake BLAS worker threads that
    # keep spinning afterwards and slow the next embedding on a small machine.
    scores = np.einsum("ij,j->i", vectors.matrix, q)
    allowed = int(row_mask.sum())
    if not allowed:
        return []
    masked = np.where(row_mask, scores, -np.inf)
    k = min(query.vector_k, allowed)
    top = np.argpartition(-masked, k - 1)[:k]
    return sorted(
        ((vectors.node_ids[i], float(scores[i])) for i in top),
        key=lambda kv: (-kv[1], kv[0]),
    )


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

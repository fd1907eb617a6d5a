"""The embedded index's vector search above its threshold: approximate through clusters,
close to exact, filters holding exactly, and in step with writes and deletes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from prme.backends.embedded.sqlite_index import SqliteVectorIndex
from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType
from prme.model.records import OwnerKey
from prme.model.search import IndexDocument, IndexFilter, IndexQuery, VectorSearchSettings

OWNER = OwnerKey(tenant_id="t1", owner_id="alice")
OTHER = OwnerKey(tenant_id="t1", owner_id="bob")
DIM = 24
RECORDS = 1500


def _unit(vector: np.ndarray) -> tuple[float, ...]:
    return tuple(float(x) for x in vector / np.linalg.norm(vector))


def _document(
    node_id: str,
    vector: tuple[float, ...] | None,
    *,
    owner: OwnerKey = OWNER,
    scope: Scope = Scope.PERSONAL,
    text: str | None = None,
) -> IndexDocument:
    return IndexDocument(
        tenant_id=owner.tenant_id,
        owner_id=owner.owner_id,
        node_id=node_id,
        text=text or f"note {node_id}",
        vector=vector,
        embedding_model="test",
        node_type=NodeType.NOTE,
        source_type=SourceType.USER_STATED,
        epistemic_type=EpistemicType.ASSERTED,
        lifecycle_state=LifecycleState.STABLE,
        scope=scope,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


# 40 topics: sentence vectors group around what they talk about.
TOPICS = np.random.default_rng(0).normal(size=(40, DIM))


def _records(rng: np.random.Generator, count: int) -> list[tuple[float, ...]]:
    return [
        _unit(TOPICS[rng.integers(len(TOPICS))] + rng.normal(scale=0.6, size=DIM))
        for _ in range(count)
    ]


@pytest.fixture
def index(tmp_path: Path) -> SqliteVectorIndex:
    opened = SqliteVectorIndex(
        tmp_path / "index.sqlite3",
        vector_search=VectorSearchSettings(approximate_from=1000, probe=8),
    )
    rng = np.random.default_rng(3)
    opened.upsert(
        [
            # One record in fifty is a project memory: the scope filter leaves few rows.
            _document(f"n{i:05d}", v, scope=Scope.PROJECT if i % 50 == 0 else Scope.PERSONAL)
            for i, v in enumerate(_records(rng, RECORDS))
        ]
    )
    return opened


def _query(vector: tuple[float, ...], k: int = 10, **filters: object) -> IndexQuery:
    return IndexQuery(
        text="unrelated",
        vector=vector,
        embedding_model="test",
        vector_k=k,
        lexical_k=0,
        filters=IndexFilter.model_validate(filters),
    )


def test_an_owner_above_the_threshold_is_searched_approximately_and_finds_what_exact_finds(
    index: SqliteVectorIndex, tmp_path: Path
) -> None:
    assert index.vector_search_kind(OWNER) == "approximate"
    rng = np.random.default_rng(11)
    found = 0
    for vector in _records(rng, 50):
        approximate = [n for n, _ in index.search(OWNER, _query(vector)).vector]
        exact = [n for n, _ in index.search(OWNER, _query(vector), exact=True).vector]
        assert len(approximate) == 10
        found += len(set(approximate) & set(exact))
    # 8 of about 38 clusters probed: recall@10 against exact search.
    assert found / 500 >= 0.9
    below = SqliteVectorIndex(
        tmp_path / "index.sqlite3", vector_search=VectorSearchSettings(approximate_from=RECORDS + 1)
    )
    try:
        assert below.vector_search_kind(OWNER) == "exact"
    finally:
        below.close()


def test_probing_every_cluster_gives_exactly_the_exact_ranking(tmp_path: Path) -> None:
    every = SqliteVectorIndex(
        tmp_path / "index.sqlite3",
        vector_search=VectorSearchSettings(approximate_from=10, probe=10_000),
    )
    rng = np.random.default_rng(5)
    every.upsert([_document(f"n{i}", v) for i, v in enumerate(_records(rng, 300))])
    for vector in _records(rng, 20):
        assert (
            every.search(OWNER, _query(vector)).vector
            == every.search(OWNER, _query(vector), exact=True).vector
        )


def test_filters_hold_exactly_and_a_narrow_filter_falls_back_to_exact_search(
    index: SqliteVectorIndex,
) -> None:
    rng = np.random.default_rng(12)
    for vector in _records(rng, 10):
        # 30 project memories: the probed clusters cannot hold 40, so all are ranked exactly.
        hits = index.search(OWNER, _query(vector, 40, scopes=[Scope.PROJECT])).vector
        exact = index.search(OWNER, _query(vector, 40, scopes=[Scope.PROJECT]), exact=True).vector
        assert hits == exact
        assert len(hits) == 30
        assert all(int(node_id[1:]) % 50 == 0 for node_id, _ in hits)
        for scope, allowed in ((Scope.PROJECT, 0), (Scope.PERSONAL, 1)):
            found = index.search(OWNER, _query(vector, scopes=[scope])).vector
            assert len(found) == 10
            assert all(min(int(node_id[1:]) % 50, 1) == allowed for node_id, _ in found)


def test_a_stored_record_is_found_at_once_and_a_deleted_one_never_again(
    index: SqliteVectorIndex,
) -> None:
    rng = np.random.default_rng(13)
    (vector,) = _records(rng, 1)
    index.search(OWNER, _query(vector))  # clusters built
    index.upsert([_document("fresh", vector)])
    best, score = index.search(OWNER, _query(vector)).vector[0]
    assert best == "fresh"
    assert score == pytest.approx(1.0)
    assert index.vector_search_kind(OWNER) == "approximate"
    index.delete(OWNER, ["fresh"])
    assert "fresh" not in {n for n, _ in index.search(OWNER, _query(vector)).vector}


def test_another_process_sees_records_this_one_appended(
    index: SqliteVectorIndex, tmp_path: Path
) -> None:
    reader = SqliteVectorIndex(
        tmp_path / "index.sqlite3", vector_search=VectorSearchSettings(approximate_from=1000)
    )
    try:
        rng = np.random.default_rng(14)
        (vector,) = _records(rng, 1)
        reader.search(OWNER, _query(vector))  # the reader caches alice's vectors
        index.upsert([_document("fresh", vector)])
        assert reader.search(OWNER, _query(vector)).vector[0][0] == "fresh"
    finally:
        reader.close()


def test_lexical_hits_are_the_owners_allowed_documents_with_or_without_a_vector(
    tmp_path: Path,
) -> None:
    index = SqliteVectorIndex(tmp_path / "index.sqlite3")
    index.upsert(
        [
            _document("plain", (1.0, 0.0), text="harbour walk on sunday"),
            _document("textonly", None, text="harbour festival tickets"),
            _document("project", (0.0, 1.0), scope=Scope.PROJECT, text="harbour project plan"),
            _document("bobs", (1.0, 0.0), owner=OTHER, text="harbour cruise"),
        ]
    )
    query = IndexQuery(text="harbour", vector=None, lexical_k=10, filters=IndexFilter())
    assert {n for n, _ in index.search(OWNER, query).lexical} == {"plain", "textonly", "project"}
    personal = query.model_copy(update={"filters": IndexFilter(scopes=frozenset([Scope.PERSONAL]))})
    assert {n for n, _ in index.search(OWNER, personal).lexical} == {"plain", "textonly"}
    # A record appended in place is searchable by its words and filtered like the rest.
    index.upsert([_document("later", None, scope=Scope.PROJECT, text="harbour later")])
    assert {n for n, _ in index.search(OWNER, personal).lexical} == {"plain", "textonly"}
    assert "later" in {n for n, _ in index.search(OWNER, query).lexical}

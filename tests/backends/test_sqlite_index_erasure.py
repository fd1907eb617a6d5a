"""The embedded index after an owner's erasure, seen from a second process on the same files:
its cached vectors of the erased owner are never used again."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from prme.backends.embedded.sqlite_index import SqliteVectorIndex
from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType
from prme.model.records import OwnerKey
from prme.model.search import IndexDocument, IndexQuery

OWNER = OwnerKey(tenant_id="t1", owner_id="alice")


def _document(node_id: str, vector: tuple[float, ...]) -> IndexDocument:
    return IndexDocument(
        tenant_id=OWNER.tenant_id,
        owner_id=OWNER.owner_id,
        node_id=node_id,
        text=f"note {node_id}",
        vector=vector,
        embedding_model="test",
        node_type=NodeType.NOTE,
        source_type=SourceType.USER_STATED,
        epistemic_type=EpistemicType.ASSERTED,
        lifecycle_state=LifecycleState.STABLE,
        scope=Scope.PERSONAL,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def _vector_hits(index: SqliteVectorIndex) -> set[str]:
    query = IndexQuery(text="unrelated", vector=(1.0, 0.0), embedding_model="test")
    return {node_id for node_id, _ in index.search(OWNER, query).vector}


def test_a_process_that_cached_an_erased_owner_reloads_after_the_erasure(tmp_path: Path) -> None:
    writer = SqliteVectorIndex(tmp_path / "index.sqlite3")
    reader = SqliteVectorIndex(tmp_path / "index.sqlite3")
    try:
        writer.upsert([_document("erased", (1.0, 0.0))])
        assert _vector_hits(reader) == {"erased"}  # the reader caches alice's vectors

        assert writer.delete_owner(OWNER) == 1
        writer.upsert([_document("new", (0.0, 1.0))])

        assert _vector_hits(reader) == {"new"}
    finally:
        writer.close()
        reader.close()

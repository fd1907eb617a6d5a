"""The index check every function runs before its first write or search, and writes that can
no longer create an index, against the real local OpenSearch node."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from prme.backends.aws.bootstrap import ensure_index
from prme.backends.aws.opensearch_index import (
    OpenSearchIndex,
    VectorShape,
    build_opensearch_client,
    index_problem,
)
from prme.backends.aws.resources import index_body, index_name
from prme.errors import IndexUnavailableError, SearchIndexMismatchError, status_for
from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType
from prme.model.search import IndexDocument, IndexQuery
from tests.harness.aws import AwsNames
from tests.harness.engines import ALICE

DIM = 8


def doc(node_id: str, dimension: int = DIM) -> IndexDocument:
    return IndexDocument.model_validate(
        {
            "tenant_id": ALICE.tenant_id,
            "owner_id": ALICE.owner_id,
            "node_id": node_id,
            "text": "renew the passport",
            "vector": (1.0,) + (0.0,) * (dimension - 1),
            "embedding_model": f"m@1/{dimension}",
            "node_type": NodeType.FACT,
            "source_type": SourceType.USER_STATED,
            "epistemic_type": EpistemicType.OBSERVED,
            "lifecycle_state": LifecycleState.STABLE,
            "scope": Scope.PERSONAL,
            "created_at": datetime(2026, 1, 1, tzinfo=UTC),
        }
    )


def query() -> IndexQuery:
    return IndexQuery.model_validate(
        {"text": "passport", "vector": (1.0,) + (0.0,) * (DIM - 1), "embedding_model": "m@1/8"}
    )


class CountingIndices:
    """The client's `indices` namespace, counting the GETs the check makes."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.gets = 0

    def get(self, **kwargs: Any) -> Any:
        self.gets += 1
        return self._inner.get(**kwargs)


class CountingClient:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.indices = CountingIndices(inner.indices)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def client(opensearch_url: str) -> Iterator[Any]:
    built = build_opensearch_client(opensearch_url, auth="none", region=None)
    yield built
    built.close()


@pytest.fixture
def alias(client: Any, aws_names: AwsNames) -> Iterator[str]:
    yield aws_names.index_alias
    client.indices.delete(index=f"{aws_names.index_alias}*", ignore_unavailable=True)


def test_a_write_to_a_missing_alias_creates_no_index(client: Any, alias: str) -> None:
    # No shape to check: only `require_alias` stands between the write and an auto-created index.
    index = OpenSearchIndex(client, alias, refresh_on_write=True)

    with pytest.raises(IndexUnavailableError):
        index.upsert([doc("n1")])

    assert not client.indices.exists(index=alias)


def test_the_right_index_is_checked_once_and_then_used(client: Any, alias: str) -> None:
    ensure_index(client, alias, DIM)
    counting = CountingClient(client)
    index = OpenSearchIndex(
        counting, alias, refresh_on_write=True, expected=VectorShape.expected(DIM)
    )

    index.upsert([doc("n1")])
    index.upsert([doc("n2")])
    hits = index.search(ALICE, query())

    assert {node_id for node_id, _ in hits.lexical} == {"n1", "n2"}
    assert counting.indices.gets == 1


def test_an_index_of_another_dimension_is_refused_and_left_untouched(
    client: Any, alias: str
) -> None:
    # What `prme bootstrap` made when PRME_EMBEDDER was not exported: MiniLM's 384 dimensions.
    ensure_index(client, alias, 384)
    heard: list[str] = []
    index = OpenSearchIndex(
        client,
        alias,
        refresh_on_write=True,
        expected=VectorShape.expected(1024),
        on_refused=heard.append,
    )

    with pytest.raises(SearchIndexMismatchError) as refused:
        index.upsert([doc("n1", 1024)])
    with pytest.raises(SearchIndexMismatchError):
        index.search(ALICE, query())

    assert status_for(refused.value) == 503
    assert "dimension 384" in refused.value.reason
    assert "dimension 1024" in refused.value.reason
    assert refused.value.reason not in refused.value.detail
    assert heard == [refused.value.reason, refused.value.reason]
    client.indices.refresh(index=alias)
    assert client.count(index=alias)["count"] == 0


def test_a_missing_alias_is_refused_without_creating_an_index(client: Any, alias: str) -> None:
    index = OpenSearchIndex(client, alias, expected=VectorShape.expected(DIM))

    with pytest.raises(SearchIndexMismatchError) as refused:
        index.upsert([doc("n1")])

    assert f"no alias {alias}" in refused.value.reason
    assert client.indices.get(index=f"{alias}*") == {}


def test_a_plain_index_named_like_the_alias_is_refused_and_not_adopted(
    client: Any, alias: str
) -> None:
    # What a write without `require_alias` used to leave behind: guessed mappings, no alias.
    client.index(index=alias, body={"text": "x"}, refresh=True)

    assert "plain index" in (index_problem(client, alias, VectorShape.expected(DIM)) or "")
    with pytest.raises(SearchIndexMismatchError):
        ensure_index(client, alias, DIM)
    assert not client.indices.exists(index=index_name(alias))


def test_another_engine_is_refused(client: Any, alias: str) -> None:
    body = index_body(DIM)
    body["mappings"]["properties"]["vector"]["method"]["engine"] = "faiss"
    body["mappings"]["properties"]["vector"]["method"].pop("parameters")
    body["mappings"]["properties"]["vector"]["method"]["space_type"] = "l2"
    client.indices.create(index=index_name(alias), body=body)
    client.indices.put_alias(index=index_name(alias), name=alias)

    problem = index_problem(client, alias, VectorShape.expected(DIM))

    assert problem is not None
    assert "engine faiss" in problem


def test_an_index_deleted_after_the_check_is_refused_not_retried_as_an_outage(
    client: Any, alias: str
) -> None:
    """Deleted by hand after a container checked it: writes and searches are refused with the
    reason (and the alarm's metric), and nothing creates an index in its place."""
    ensure_index(client, alias, DIM)
    heard: list[str] = []
    index = OpenSearchIndex(
        client,
        alias,
        refresh_on_write=True,
        expected=VectorShape.expected(DIM),
        on_refused=heard.append,
    )
    index.upsert([doc("n1")])
    client.indices.delete(index=index_name(alias))

    with pytest.raises(SearchIndexMismatchError) as refused:
        index.upsert([doc("n2")])
    with pytest.raises(SearchIndexMismatchError):
        index.search(ALICE, query())

    assert f"no alias {alias}" in refused.value.reason
    assert len(heard) == 2
    assert client.indices.get(index=f"{alias}*") == {}

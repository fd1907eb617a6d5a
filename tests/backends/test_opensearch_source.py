"""What an OpenSearch document keeps in `_source`: no vectors from index version 2 on (only a
session record's own vector, as float32 bytes, for the next record to read), while k-NN
search and session predecessors work, and documents of a version 1 index still read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from prme.backends.aws.bootstrap import ensure_index
from prme.backends.aws.opensearch_index import (
    OpenSearchIndex,
    build_opensearch_client,
    document_id,
    to_source,
)
from prme.backends.aws.resources import (
    CONTENT_VECTOR_BYTES_FIELD,
    CONTENT_VECTOR_FIELD,
    VECTOR_FIELD,
    index_body,
    index_name,
)
from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType
from prme.model.search import IndexDocument, IndexQuery
from tests.harness.aws import AwsNames
from tests.harness.engines import ALICE

DIM = 64
T0 = datetime(2026, 1, 1, tzinfo=UTC)
MODEL = "test-model@1/64"


def _unit(seed: int) -> tuple[float, ...]:
    v = np.random.default_rng(seed).normal(size=DIM)
    return tuple(float(x) for x in v / np.linalg.norm(v))


def _doc(node_id: str, vector: tuple[float, ...], **fields: Any) -> IndexDocument:
    values: dict[str, Any] = {
        "tenant_id": ALICE.tenant_id,
        "owner_id": ALICE.owner_id,
        "node_id": node_id,
        "text": "renew the passport",
        "vector": vector,
        "embedding_model": MODEL,
        "node_type": NodeType.FACT,
        "source_type": SourceType.USER_STATED,
        "epistemic_type": EpistemicType.OBSERVED,
        "lifecycle_state": LifecycleState.STABLE,
        "scope": Scope.PERSONAL,
        "created_at": T0,
        **fields,
    }
    return IndexDocument.model_validate(values)


@pytest.fixture
def client(opensearch_url: str) -> Any:
    return build_opensearch_client(opensearch_url, auth="none", region=None)


@pytest.fixture
def alias(client: Any, aws_names: AwsNames) -> Iterator[str]:
    ensure_index(client, aws_names.index_alias, DIM)
    yield aws_names.index_alias
    client.indices.delete(index=index_name(aws_names.index_alias))


def _source(client: Any, alias: str, node_id: str) -> dict[str, Any]:
    found = client.get(
        index=alias, id=document_id(ALICE.tenant_id, ALICE.owner_id, node_id), routing="t1"
    )
    source: dict[str, Any] = found["_source"]
    return source


def test_source_holds_no_vector_floats(client: Any, alias: str) -> None:
    index = OpenSearchIndex(client, alias, refresh_on_write=True)
    own, mixed = _unit(1), _unit(2)
    # Given a record outside any session and one of a session (searched by a mixed vector)
    index.upsert(
        [
            _doc("plain", own),
            _doc("said", mixed, content_vector=own, session_id="s1"),
        ]
    )

    plain, said = _source(client, alias, "plain"), _source(client, alias, "said")
    # Then neither keeps a vector's floats; the session record keeps its own as float32 bytes
    for source in (plain, said):
        assert VECTOR_FIELD not in source and CONTENT_VECTOR_FIELD not in source
    assert CONTENT_VECTOR_BYTES_FIELD not in plain
    assert len(json.dumps(plain)) < 1_000
    assert len(said[CONTENT_VECTOR_BYTES_FIELD]) < 4 * DIM * 4 / 3 + 4
    # And k-NN search still finds the session record by the vector it is searched by
    hits = index.search(
        ALICE, IndexQuery.model_validate({"text": "zzz", "vector": mixed, "embedding_model": MODEL})
    )
    assert hits.vector[0][0] == "said"


def test_a_session_predecessor_reads_its_own_vector_back(client: Any, alias: str) -> None:
    index = OpenSearchIndex(client, alias, refresh_on_write=True)
    own, mixed = _unit(3), _unit(4)
    first = _doc("first", mixed, content_vector=own, session_id="s1")
    index.upsert([first])

    (found,) = index.session_predecessors(
        ALICE, [("s1", first.effective_time + timedelta(seconds=1))], MODEL
    )

    assert found is not None and found[0] == "first"
    # The record's own vector (not the mixed one it is searched by), at float32 precision
    assert found[1] == tuple(float(x) for x in np.asarray(own, dtype=np.float32))


def test_documents_of_a_version_1_index_still_read_as_predecessors(
    client: Any, aws_names: AwsNames
) -> None:
    # Given an index made before vectors left `_source`, holding documents written then
    name = f"{aws_names.index_alias}-v1"
    body = index_body(DIM)
    del body["mappings"]["_source"]
    client.indices.create(index=name, body=body)
    client.indices.put_alias(index=name, name=aws_names.index_alias)
    try:
        own, mixed = _unit(5), _unit(6)
        older = to_source(_doc("older", mixed, session_id="s1"))
        older.pop(CONTENT_VECTOR_BYTES_FIELD)
        older[CONTENT_VECTOR_FIELD] = list(own)
        plain = to_source(_doc("plain", own, session_id="s2"))
        plain.pop(CONTENT_VECTOR_BYTES_FIELD)
        for node_id, source in (("older", older), ("plain", plain)):
            client.index(
                index=aws_names.index_alias,
                id=document_id(ALICE.tenant_id, ALICE.owner_id, node_id),
                body=source,
                routing="t1",
                refresh=True,
            )
        index = OpenSearchIndex(client, aws_names.index_alias, refresh_on_write=True)
        later = _doc("later", own).effective_time + timedelta(days=1)

        # Then their vectors are found where they were kept then
        found = index.session_predecessors(ALICE, [("s1", later), ("s2", later)], MODEL)

        as_float32 = tuple(float(x) for x in np.asarray(own, dtype=np.float32))
        assert found == [("older", as_float32), ("plain", as_float32)]
    finally:
        client.indices.delete(index=name)

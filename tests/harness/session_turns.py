"""Conversation turns for the session-context vector tests: index documents, stored turns at
given minutes, and the vector mix the index is expected to hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from prme.engine.vector_input import vector_segments
from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType
from prme.model.inputs import StoreInput
from prme.model.records import MemoryNode, OwnerKey
from prme.model.search import IndexDocument, IndexQuery
from tests.harness.engines import ALICE, Harness

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
W = 0.6


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def unit(rng: np.random.Generator, dim: int) -> tuple[float, ...]:
    v = rng.normal(size=dim)
    return tuple(float(x) for x in v / np.linalg.norm(v))


def document(
    node_id: str,
    vector: tuple[float, ...],
    *,
    model: str,
    session_id: str | None = "s1",
    owner: OwnerKey = ALICE,
    event_time: datetime | None = None,
    created_at: datetime = T0,
    **fields: Any,
) -> IndexDocument:
    values: dict[str, Any] = {
        "tenant_id": owner.tenant_id,
        "owner_id": owner.owner_id,
        "node_id": node_id,
        "text": f"record {node_id}",
        "vector": vector,
        "content_vector": vector,
        "embedding_model": model,
        "node_type": NodeType.NOTE,
        "source_type": SourceType.USER_STATED,
        "epistemic_type": EpistemicType.OBSERVED,
        "lifecycle_state": LifecycleState.TENTATIVE,
        "scope": Scope.PERSONAL,
        "session_id": session_id,
        "event_time": event_time,
        "created_at": created_at,
    }
    values.update(fields)
    return IndexDocument.model_validate(values)


def say(h: Harness, content: str, minute: float, session: str | None = "s1") -> MemoryNode:
    result = h.engine.store(
        ALICE,
        StoreInput(content=content, session_id=session, event_time=at(minute), speaker="Ana"),
    )
    assert result.node_id is not None
    return h.engine.get_node(ALICE, result.node_id)


def own(h: Harness, node: MemoryNode) -> NDArray[np.float64]:
    vector = h.embedder.embed_segmented([vector_segments(node)])[0]
    return np.asarray(vector, dtype=np.float64)


def mixed(first: NDArray[np.float64], before: NDArray[np.float64] | None) -> NDArray[np.float64]:
    if before is None:
        return first
    total = first + W * before
    return total / np.linalg.norm(total)


def cosine_in_index(h: Harness, node: MemoryNode, query: NDArray[np.float64]) -> float:
    """The cosine the index reports between the node's indexed vector and `query`."""
    hits = h.index.search(
        ALICE,
        IndexQuery(
            text="unrelated",
            vector=tuple(float(x) for x in query),
            embedding_model=h.embedder.model.key,
            vector_k=50,
            lexical_k=0,
        ),
    )
    return hits.semantic[node.id]


def assert_indexed_as(h: Harness, node: MemoryNode, expected: NDArray[np.float64]) -> None:
    """The indexed vector equals `expected`: seen through the cosines to two query vectors."""
    for query in (own(h, node), expected):
        assert cosine_in_index(h, node, query) == pytest.approx(float(expected @ query), abs=1e-4)


QUESTION = "Did you finally visit the pottery workshop downtown?"
REPLY = "Yes, last week!"

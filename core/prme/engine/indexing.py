"""Index documents: each node's searchable text and vectors (its own, and mixed with the record
said before it in its session), embedded and written to the search index."""

from __future__ import annotations

import math
import struct
from bisect import bisect_left
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

from prme.engine.deps import EngineDeps
from prme.engine.vector_input import vector_segments
from prme.errors import EmbeddingUnavailableError, IndexUnavailableError
from prme.model.enums import WorkFailure
from prme.model.records import MemoryNode, OwnerKey
from prme.model.search import IndexDocument

# A vector as the engine handles it: a tuple from an index, or a float64 row of embeddings.
Vector: TypeAlias = Sequence[float] | NDArray[np.float64]


def index_document(
    node: MemoryNode,
    vector: Sequence[float],
    model_key: str,
    *,
    content_vector: Sequence[float] | None = None,
) -> IndexDocument:
    """The node as the index stores it; `content_vector` (its own embedding) defaults to `vector`."""
    searched = _floats(vector)
    content = searched if content_vector is None else _floats(content_vector)
    return IndexDocument(**_document_fields(node, searched, content, model_key))


def _made_document(
    node: MemoryNode,
    vector: tuple[float, ...],
    content_vector: tuple[float, ...],
    model_key: str,
) -> IndexDocument:
    """`index_document` for vectors `index_nodes` has just made with `tolist`.

    Every field already has its model type (a validated node's fields, tuples of Python
    floats), so validation would only copy both vectors float by float: it is skipped."""
    return IndexDocument.model_construct(
        **_document_fields(node, vector, content_vector, model_key)
    )


def _document_fields(
    node: MemoryNode,
    vector: tuple[float, ...],
    content_vector: tuple[float, ...],
    model_key: str,
) -> dict[str, Any]:
    return {
        "tenant_id": node.tenant_id,
        "owner_id": node.owner_id,
        "node_id": node.id,
        "text": node.content,
        "vector": vector,
        "content_vector": content_vector,
        "embedding_model": model_key,
        "node_type": node.node_type,
        "source_type": node.source_type,
        "epistemic_type": node.epistemic_type,
        "lifecycle_state": node.lifecycle_state,
        "scope": node.scope,
        "session_id": node.session_id,
        "event_time": node.event_time,
        "created_at": node.created_at,
        "expires_at": node.expires_at,
        "condition_state": node.condition_state,
    }


def _floats(vector: Sequence[float] | NDArray[np.float64]) -> tuple[float, ...]:
    """A vector as a tuple of Python floats (tolist converts numpy arrays in one C call)."""
    if isinstance(vector, tuple):
        return vector
    values = np.asarray(vector, dtype=np.float64).tolist()
    return tuple(values)


def session_context_vector(
    own: Sequence[float], predecessor: Sequence[float] | None, weight: float
) -> tuple[float, ...]:
    """What vector search compares against: normalize(own + weight * predecessor).

    A short reply ("Yes, last week!") lands near what it answers. The own vector is kept
    as it is without a predecessor, with weight 0, or when the mix would have no direction."""
    mixed = _mixed(np.asarray(own, dtype=np.float64), predecessor, weight)
    return _floats(own) if mixed is None else _floats(mixed)


def _mixed(
    own: NDArray[np.float64], predecessor: Vector | None, weight: float
) -> NDArray[np.float64] | None:
    """normalize(own + weight * predecessor), or None where `session_context_vector` keeps
    the own vector. Works on arrays so indexing converts each vector to a tuple only once."""
    if predecessor is None or weight <= 0:
        return None
    before = _array(predecessor)
    if before.shape != own.shape:
        return None
    mixed = own + weight * before
    # np.linalg.norm of a 1-d vector is sqrt(x.dot(x)): the same value without its checks.
    norm = math.sqrt(mixed.dot(mixed))
    if not math.isfinite(norm) or norm == 0.0:
        return None
    mixed /= norm
    return mixed


def _array(vector: Vector) -> NDArray[np.float64]:
    """A vector as a float64 array. A tuple of floats is packed as C doubles in one call:
    the same values for about half the work of `np.asarray`, which inspects each item."""
    if isinstance(vector, tuple):
        return np.frombuffer(struct.pack(f"{len(vector)}d", *vector), dtype=np.float64)
    return np.asarray(vector, dtype=np.float64)


def _order(node: MemoryNode) -> tuple[datetime, str]:
    # Predecessors are compared by effective time, then node id: the rule of the index lookup.
    return (node.effective_time, node.id)


def _batch_predecessors(nodes: Sequence[MemoryNode]) -> dict[int, int]:
    """For each node with a session, the position of the latest earlier node of its owner
    and session in the same batch (equal times are not earlier; ties: greatest node id)."""
    sessions: dict[tuple[str, str, str], list[int]] = {}
    for i, node in enumerate(nodes):
        if node.session_id is not None:
            key = (node.tenant_id, node.owner_id, node.session_id)
            sessions.setdefault(key, []).append(i)
    found: dict[int, int] = {}
    for members in sessions.values():
        members.sort(key=lambda i: _order(nodes[i]))
        times = [nodes[i].effective_time for i in members]
        for i in members:
            earlier = bisect_left(times, nodes[i].effective_time)
            if earlier:
                found[i] = members[earlier - 1]
    return found


def session_predecessors(
    deps: EngineDeps, nodes: Sequence[MemoryNode], own: Sequence[Vector]
) -> list[Vector | None]:
    """The own vector of the record said just before each node in its session, if any.

    The latest earlier record among this batch and the index: a batch need not hold every
    record of a session (a reindex of some records, a late turn), and a record must get the
    same vector whatever batch it is indexed in. One batched index lookup per owner."""
    result: list[Vector | None] = [None] * len(nodes)
    if deps.config.vector_session_context <= 0:
        return result
    model_key = deps.embedder.model.key
    in_batch = _batch_predecessors(nodes)
    batch_ids = {node.id for node in nodes}
    # Index answers that compete with a batch candidate: the later of the two wins.
    contested: dict[int, str] = {}
    for i, found in _indexed_predecessors(deps, nodes, model_key).items():
        batch = in_batch.get(i)
        if found is None or found[0] in batch_ids:
            # Nothing indexed, or an older copy of a node of this batch: the batch's
            # candidate is at least as late and its vector is fresh.
            result[i] = own[batch] if batch is not None else None
        else:
            result[i] = found[1]
            if batch is not None:
                contested[i] = found[0]
    indexed = _ledger_orders(deps, nodes, contested)
    for i, node_id in contested.items():
        batch = in_batch[i]
        order = indexed.get((_owner_of(nodes[i]), node_id))
        # A document whose node was never committed (a failed store) loses to the batch.
        if order is None or order < _order(nodes[batch]):
            result[i] = own[batch]
    return result


def _indexed_predecessors(
    deps: EngineDeps, nodes: Sequence[MemoryNode], model_key: str
) -> dict[int, tuple[str, tuple[float, ...]] | None]:
    """The index's answer for every node with a session, by position: one call per owner."""
    by_owner: dict[OwnerKey, list[int]] = {}
    for i, node in enumerate(nodes):
        if node.session_id is not None:
            by_owner.setdefault(_owner_of(node), []).append(i)
    found: dict[int, tuple[str, tuple[float, ...]] | None] = {}
    for owner, positions in by_owner.items():
        lookups = [(nodes[i].session_id or "", nodes[i].effective_time) for i in positions]
        answers = deps.index.session_predecessors(owner, lookups, model_key)
        found.update(zip(positions, answers, strict=True))
    return found


def _owner_of(node: MemoryNode) -> OwnerKey:
    return _owner_key(node.tenant_id, node.owner_id)


@lru_cache(maxsize=1024)
def _owner_key(tenant_id: str, owner_id: str) -> OwnerKey:
    # Keys are frozen, so one per partition is shared; indexing asks for it once a record.
    return OwnerKey(tenant_id=tenant_id, owner_id=owner_id)


def _ledger_orders(
    deps: EngineDeps, nodes: Sequence[MemoryNode], wanted: dict[int, str]
) -> dict[tuple[OwnerKey, str], tuple[datetime, str]]:
    """The (effective time, id) of indexed predecessors, read from the ledger per owner."""
    by_owner: dict[OwnerKey, set[str]] = {}
    for i, node_id in wanted.items():
        by_owner.setdefault(_owner_of(nodes[i]), set()).add(node_id)
    return {
        (owner, node_id): _order(node)
        for owner, node_ids in by_owner.items()
        for node_id, node in deps.ledger.get_nodes(owner, sorted(node_ids)).items()
    }


def write_index_documents(deps: EngineDeps, nodes: Sequence[MemoryNode]) -> None:
    """Embed nodes and upsert their index documents. Raises EmbeddingUnavailableError or
    IndexUnavailableError when a dependency is down."""
    if not nodes:
        return
    config = deps.config
    embedded = deps.embedder.embed_segmented(
        [vector_segments(node, config.vector_text, config.vector_segments) for node in nodes]
    )
    # Float64 rows (the embedder's values exactly): mixing reads them without copies and
    # each vector becomes a tuple of floats once, for its index document.
    own: list[NDArray[np.float64]] = list(np.asarray(embedded, dtype=np.float64))
    before = session_predecessors(deps, nodes, own)
    weight = config.vector_session_context
    model_key = deps.embedder.model.key
    documents: list[IndexDocument] = []
    for node, vector, previous in zip(nodes, own, before, strict=True):
        content = _floats(vector)
        mixed = _mixed(vector, previous, weight)
        searched = content if mixed is None else _floats(mixed)
        documents.append(_made_document(node, searched, content, model_key))
    deps.index.upsert(documents)


def index_nodes(deps: EngineDeps, nodes: Sequence[MemoryNode]) -> WorkFailure | None:
    """Embed and index nodes; the failure when a dependency is down, else None."""
    try:
        write_index_documents(deps, nodes)
    except EmbeddingUnavailableError:
        return WorkFailure.EMBEDDING_UNAVAILABLE
    except IndexUnavailableError:
        return WorkFailure.INDEX_UNAVAILABLE
    return None

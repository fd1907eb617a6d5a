"""Reindexing: one owner's index documents rebuilt from the ledger with the current embedder.

Every vector setting (the MiniLM precision, what the vector text holds, sentence vectors,
session-context mixing) applies when a record is indexed, and an index never compares
vectors of two embedding models: after such a change, records indexed before it are
either searched with the old rule or, for another model, leave the vector channel
reporting `embedding_model_mismatch`. A reindex re-embeds every record of the owner, so
the index holds what storing the same records today would produce.

Records go oldest first (effective time, then id: the session-context rule's order), in
batches: a record's session predecessor is then either in its own batch or already
reindexed, so it mixes in the predecessor's new vector, never a stale one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prme.engine.deps import EngineDeps
from prme.engine.indexing import write_index_documents
from prme.model.records import OwnerKey

REINDEX_BATCH = 128

# Called after each batch with (records reindexed so far, records in total).
ReindexProgress = Callable[[int, int], None]


@dataclass(frozen=True)
class ReindexReport:
    """What a reindex did: records re-embedded and indexed, under which embedding model."""

    nodes: int
    batches: int
    embedding_model: str


def reindex_owner(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    batch_size: int = REINDEX_BATCH,
    progress: ReindexProgress | None = None,
) -> ReindexReport:
    """Re-embed and re-index every record of `owner`, oldest first.

    Stops at the first batch the embedder or the index cannot take, raising
    `EmbeddingUnavailableError` or `IndexUnavailableError`: the batches before it are
    already rewritten, and running the reindex again redoes everything (it writes whole
    documents, so repeating it is safe). The ledger is only read."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    nodes = sorted(deps.ledger.list_nodes(owner), key=lambda n: (n.effective_time, n.id))
    batches = 0
    for start in range(0, len(nodes), batch_size):
        write_index_documents(deps, nodes[start : start + batch_size])
        batches += 1
        if progress is not None:
            progress(min(start + batch_size, len(nodes)), len(nodes))
    return ReindexReport(nodes=len(nodes), batches=batches, embedding_model=deps.embedder.model.key)

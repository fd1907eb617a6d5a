"""A batch read of memory nodes by id: the nodes found, in the order asked, and the ids not found."""

from __future__ import annotations

from dataclasses import dataclass

from prme.model.records import MemoryNode

# Ids one batch read takes: one DynamoDB BatchGetItem reads at most 100 keys.
MAX_NODE_BATCH = 100


@dataclass(frozen=True)
class NodeBatch:
    """`items`: the owner's readable nodes among the ids asked, in the order asked;
    `missing_ids`: the other ids, in the order asked (unknown, deleted, another owner's, or
    quarantined as unreadable; a caller cannot tell these apart)."""

    items: list[MemoryNode]
    missing_ids: list[str]

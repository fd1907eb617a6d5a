"""Reading many memory nodes by id in one call, scoped to one owner like every read."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from prme.engine.deps import EngineDeps
from prme.errors import InvalidRequestError
from prme.model.node_batch import MAX_NODE_BATCH, NodeBatch
from prme.model.records import OwnerKey


def get_nodes(deps: EngineDeps, owner: OwnerKey, node_ids: Sequence[str]) -> NodeBatch:
    """The owner's nodes among `node_ids` in the order asked, and the ids not found.

    The ledger reads them in as few round trips as it can (one SQLite query, one DynamoDB
    BatchGetItem) and skips a record that fails to load, so an unreadable node is missing
    here as it is from every read of many records."""
    ids = _checked_ids(node_ids)
    found = deps.ledger.get_nodes(owner, ids)
    return NodeBatch(
        items=[found[node_id] for node_id in ids if node_id in found],
        missing_ids=[node_id for node_id in ids if node_id not in found],
    )


def _checked_ids(node_ids: Sequence[str]) -> list[str]:
    # The HTTP route validates the same rules; checked here too so an in-process caller
    # meets the same 422 and the ledger never sees a key it would not have written.
    if not 1 <= len(node_ids) <= MAX_NODE_BATCH:
        raise InvalidRequestError(f"node_ids: give 1 to {MAX_NODE_BATCH} ids", field=("node_ids",))
    ids: list[str] = []
    for value in node_ids:
        try:
            ids.append(str(uuid.UUID(str(value))))
        except ValueError:
            raise InvalidRequestError(
                "node_ids: Input should be a valid UUID", field=("node_ids",)
            ) from None
    if len(set(ids)) != len(ids):
        raise InvalidRequestError("node_ids: an id is repeated", field=("node_ids",))
    return ids

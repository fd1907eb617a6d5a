"""The packed context of a saved retrieval, rebuilt from its receipt and the nodes stored now."""

from __future__ import annotations

from prme.engine.deps import EngineDeps
from prme.engine.reads import get_receipt
from prme.model.records import OwnerKey
from prme.retrieval.context_rebuild import RebuiltContext, rebuild_context


def get_retrieval_context(deps: EngineDeps, owner: OwnerKey, request_id: str) -> RebuiltContext:
    """The context text as the model saw it, when every memory it showed is stored unchanged;
    an unknown, foreign or expired receipt is NotFoundError, as on the receipt read."""
    receipt = get_receipt(deps, owner, request_id)
    node_ids = sorted({str(entry["node_id"]) for entry in receipt.context.entries})
    # A strong read: a memory deleted or moved just before must not read as still there.
    nodes = deps.ledger.get_nodes(owner, node_ids) if node_ids else {}
    return rebuild_context(receipt, nodes)

"""A saved retrieval's packed context rebuilt from its receipt and the memories stored now.

A receipt keeps the context's digest and entries, not its text, so a deleted memory's words
do not outlive it in receipts. The text is rendered again by the packer's own code from the
entries, the receipt's format and layout, and the nodes as stored now; its digest says
whether it is exactly what the model saw.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from prme.model.canonical import sha256_text
from prme.model.records import MemoryNode
from prme.retrieval.packing import ContextFormat, PackingLayout, layout_of, render_context
from prme.retrieval.receipts import RetrievalReceipt


class RebuiltContext(BaseModel):
    """A retrieval's context as rebuilt now, and whether it is what the model saw."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    request_id: str = Field(description="The retrieval whose context this is")
    context_format: ContextFormat = Field(description="reader or auditable, as the retrieval used")
    layout: PackingLayout = Field(
        description="ranked (records in rank order) or sessions (reader records grouped under a "
        "date-and-session header), as the retrieval packed them"
    )
    context: str = Field(
        description="The context text rendered again from the receipt's entries and the "
        "memories as stored now; a memory deleted since is left out (no line, no placeholder)"
    )
    saved_context_sha256: str = Field(
        description="SHA-256 hex of the context the model saw, as the receipt saved it"
    )
    rebuilt_context_sha256: str = Field(description="SHA-256 hex of `context`")
    matches: bool = Field(
        description="True when the rebuilt text is exactly the text the model saw (the digests "
        "are equal)"
    )
    references: dict[str, str] = Field(
        description="Each reference of the context (m1, m2, ...) to the memory node it names, "
        "in ref order, folded references included"
    )
    folded_into: dict[str, str] = Field(
        description="Each folded reference (its text repeated an earlier entry's, so it has no "
        "line) to the reference whose line holds the text"
    )
    missing_node_ids: list[str] = Field(
        description="Memories of the context no longer stored (deleted or erased since), in "
        "ref order: their lines are left out, so the text does not match"
    )
    changed_node_ids: list[str] = Field(
        description="Memories of the context still stored that changed after the retrieval (a "
        "different content digest, or updated since: e.g. now contested), in ref order: their "
        "lines may read differently now. `matches` is the exact check"
    )


def rebuild_context(receipt: RetrievalReceipt, nodes: Mapping[str, MemoryNode]) -> RebuiltContext:
    """The receipt's context rendered from `nodes` (the stored nodes by id; an absent one was
    deleted)."""
    entries = receipt.context.entries
    references = {str(e["ref"]): str(e["node_id"]) for e in entries}
    folded = {
        str(e["ref"]): str(e["folded_into"])
        for e in entries
        if e["representation"] == "folded" and e.get("folded_into") is not None
    }
    full = [
        (str(e["ref"]), nodes[str(e["node_id"])])
        for e in entries
        if e["representation"] == "full" and str(e["node_id"]) in nodes
    ]
    context_format: ContextFormat = (
        "auditable" if receipt.config.context_format == "auditable" else "reader"
    )
    layout = layout_of(receipt.config.packing_order)
    context = render_context(full, context_format=context_format, layout=layout)
    rebuilt_sha256 = sha256_text(context)
    saved_digests = {c.node_id: c.content_sha256 for c in receipt.candidates}
    node_ids = list(dict.fromkeys(references.values()))
    return RebuiltContext(
        request_id=receipt.request_id,
        context_format=context_format,
        layout=layout,
        context=context,
        saved_context_sha256=receipt.context.context_sha256,
        rebuilt_context_sha256=rebuilt_sha256,
        matches=rebuilt_sha256 == receipt.context.context_sha256,
        references=references,
        folded_into=folded,
        missing_node_ids=[i for i in node_ids if i not in nodes],
        changed_node_ids=[
            i for i in node_ids if i in nodes and _changed(nodes[i], saved_digests.get(i), receipt)
        ],
    )


def _changed(node: MemoryNode, saved_sha256: str | None, receipt: RetrievalReceipt) -> bool:
    # Compact receipts keep the digest of every record the context showed; a lifecycle move
    # or a metadata change (a note marked partly outdated) leaves it and bumps updated_at.
    rewritten = saved_sha256 is not None and saved_sha256 != node.content_sha256
    return rewritten or node.updated_at > receipt.created_at

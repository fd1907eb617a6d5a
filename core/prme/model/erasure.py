"""Erasing an owner: the counts removed from each store, and the erasure record that is both the
receipt a caller gets and the tenant's audit trail (it names the owner only by a slow hash)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

# Journal operations counted apart from the rest of the journal (see `journal_count_field`).
_RECEIPT_OPERATIONS = frozenset({"retrieval_receipt"})
_FEEDBACK_OPERATIONS = frozenset({"relevance_feedback", "answer_citation"})
_ALIAS_OPERATIONS = frozenset({"alias_proposal", "alias_review", "alias_scan_progress"})

# PBKDF2 rounds of the owner reference: a guess of a user id costs as much as this many
# hashes, so an audit record does not give a cheap dictionary test of likely ids (emails).
OWNER_REFERENCE_ROUNDS = 100_000


def owner_reference(tenant_id: str, owner_id: str) -> str:
    """The name an erasure record gives its owner: the same for the same tenant and owner (so a
    second call finds the first one's record and resumes it), the user id itself never stored."""
    digest = hashlib.pbkdf2_hmac(
        "sha256",
        owner_id.encode("utf-8"),
        f"prme-owner-erasure:{tenant_id}".encode(),
        OWNER_REFERENCE_ROUNDS,
    )
    return digest.hex()


class ErasureCounts(BaseModel):
    """How many records of the owner an erasure removed from each store."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    events: int = Field(default=0, description="Source events")
    nodes: int = Field(default=0, description="Memory nodes, in every lifecycle state")
    node_links: int = Field(
        default=0,
        description="Links from events to the nodes derived from them, expiries, and the "
        "references from nodes to the journal records of their operation history",
    )
    edges: int = Field(default=0, description="Edges between nodes (alias links and others)")
    journal_records: int = Field(
        default=0,
        description="Journal records of writes, lifecycle moves and deletions (receipts, "
        "feedback and alias records are counted apart)",
    )
    retrieval_receipts: int = Field(
        default=0, description="Saved retrieval receipts, with their value bindings"
    )
    feedback_records: int = Field(default=0, description="Relevance judgments and answer citations")
    alias_records: int = Field(
        default=0, description="Alias proposals, reviews and alias scan progress"
    )
    idempotency_records: int = Field(default=0, description="Idempotency-Key records")
    work_items: int = Field(default=0, description="Work items, pending or finished")
    index_documents: int = Field(default=0, description="Search index documents")
    api_keys: int = Field(default=0, description="The owner's API keys, revoked or not")

    def plus(self, added: Mapping[str, int]) -> ErasureCounts:
        """These counts with `added` (field name -> count) added."""
        totals = self.model_dump()
        for name, count in added.items():
            totals[name] += count
        return ErasureCounts.model_validate(totals)

    @property
    def total(self) -> int:
        return sum(self.model_dump().values())


def journal_count_field(operation: str) -> str:
    """The `ErasureCounts` field a removed journal record of `operation` is counted under."""
    if operation in _RECEIPT_OPERATIONS:
        return "retrieval_receipts"
    if operation in _FEEDBACK_OPERATIONS:
        return "feedback_records"
    if operation in _ALIAS_OPERATIONS:
        return "alias_records"
    return "journal_records"


class OwnerErasure(BaseModel):
    """The receipt of an owner's erasure: what was removed from each store and when; no user id
    and nothing of the owner's content. The same record is kept at tenant level as the audit
    trail, and a repeated erase continues and answers from it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    erasure_id: str = Field(
        description="A slow salted hash of the tenant and user id (PBKDF2-SHA256): whoever knows "
        "the user id can recompute it to find this record; the id itself is not stored"
    )
    started_at: datetime = Field(description="When the first erase call for this owner began")
    finished_at: datetime | None = Field(
        description="When nothing of the owner was left (null while complete is false)"
    )
    complete: bool = Field(
        description="True when every store was found empty of the owner; false when the owner "
        "was too large for one call: call again (the same confirmation) to continue"
    )
    removed: ErasureCounts = Field(
        description="Records removed from each store, over every call of this erasure"
    )

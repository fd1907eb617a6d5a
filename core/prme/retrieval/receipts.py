"""Retrieval receipts: a saved, checksummed account of one ranking that replays without the store."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from prme.model.bindings import VisibleValueBinding
from prme.retrieval.fusion import FusionConfig, FusionInput, fuse

RECEIPT_SCHEMA_VERSION = 22
RECEIPT_SCHEMA_VERSION_UNFOLDED = 19
RECEIPT_OPERATION = "retrieval_receipt"


class ReceiptCandidate(BaseModel):
    """One fused candidate: its channel ranks and raw scores, content digest and outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node_id: str
    content_sha256: str
    time: float | None
    ranks: dict[str, int]
    # Query-dependent inputs of the fusion (e.g. speaker_named); empty in older receipts.
    features: dict[str, float] = Field(default_factory=dict)
    # Its session, which the session-neighbour term reads; None in older receipts.
    session_id: str | None = None
    # Set on a record that was not a candidate and entered as session context of this
    # result; such records take no part in fusion (see RetrievalReceipt.session_context).
    context_of: str | None = None
    channel_scores: dict[str, float]
    semantic_relevance: float | None
    score: float
    score_provenance: dict[str, Any]
    evidence_refs: list[str]
    outcome: str = Field(
        description="returned, or why it was left out: filtered, min_score, source_limit, "
        "evidence_limit, limit, token_budget, response_size (past the server's response byte "
        "limit)"
    )


class ReceiptConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # The retrieval profile whose techniques were on unless a setting overrode one (each
    # technique's own setting is saved below); None in receipts saved before profiles.
    retrieval_profile: str | None = None
    fusion: FusionConfig
    mode: str
    limit: int
    token_budget: int
    min_score: float | None
    min_score_skipped: bool
    max_per_source: int | None
    max_per_evidence: int | None
    context_format: str
    packing_order: str
    fold_repeated_text: bool
    session_context_rank_fusion_score_decay: float
    filters: dict[str, Any]
    embedding_model: str | None
    token_counter: str
    # No limit was asked: the results are what the token budget held (up to `limit`).
    fill_budget: bool = False
    # What the vector channel embedded for each record ("content" in older receipts).
    vector_text: str = "content"
    # The weight of the previous record of the session in each indexed vector (0 in older
    # receipts: each record's own embedding).
    vector_session_context: float = 0.0
    # How each record's own vector was made ("whole" in older receipts: the whole text).
    vector_segments: str = "whole"
    # Session context of a budget fill (0 when none was added: older receipts, limits, caps).
    session_context_anchors: int = 0
    session_context_radius: int = 0


class SessionContextEntry(BaseModel):
    """A record placed right after the first results because it was said next to one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node_id: str
    anchor: str


class ReceiptContext(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    context_sha256: str
    tokens_used: int
    entries: list[dict[str, Any]]
    excluded: list[dict[str, Any]]
    # The value bindings the bundle exposed (presentation survived packing): what a tool
    # call made from this context may resolve against. Empty in receipts saved before.
    visible_value_bindings: list[VisibleValueBinding] = Field(default_factory=list)


class RetrievalReceipt(BaseModel):
    """Everything needed to explain and replay the ranking of one retrieval."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int
    request_id: str
    owner_id: str
    created_at: datetime
    query: str
    query_sha256: str
    reference_time: datetime
    config: ReceiptConfig
    backend_failures: list[str]
    candidates: list[ReceiptCandidate]
    returned_node_ids: list[str]
    context: ReceiptContext
    # In order, the records session context put right after the first results.
    session_context: list[SessionContextEntry] = Field(default_factory=list)

    def replay_ranking(self) -> list[str]:
        """Recompute the fused order of every candidate from the saved ranks and config alone."""
        inputs = [
            FusionInput(c.node_id, c.ranks, c.time, c.features, c.session_id)
            for c in self.candidates
            if c.context_of is None
        ]
        return [c.node_id for c in fuse(inputs, self.config.fusion)]

    def saved_ranking(self) -> list[str]:
        """The order the fused candidates were saved in (the live fused order); records
        that entered only as session context follow them and are not part of it."""
        return [c.node_id for c in self.candidates if c.context_of is None]

    def replay_matches(self) -> bool:
        return self.replay_ranking() == self.saved_ranking()

"""Retrieval receipts: a saved, checksummed account of one ranking that replays without the store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from prme.model.bindings import SavedValueBinding, VisibleValueBinding
from prme.retrieval.compact_receipt import compact_payload, expand_payload
from prme.retrieval.fusion import FusionConfig, FusionInput, fuse

# Receipts are stored compact (retrieval/compact_receipt.py) from these versions on; the
# unfolded version is the one a retrieval with fold_repeated_text off saves.
RECEIPT_SCHEMA_VERSION = 24
RECEIPT_SCHEMA_VERSION_UNFOLDED = 23
COMPACT_RECEIPT_SCHEMA_VERSIONS = frozenset(
    {RECEIPT_SCHEMA_VERSION, RECEIPT_SCHEMA_VERSION_UNFOLDED}
)
RECEIPT_OPERATION = "retrieval_receipt"


class ReceiptCandidate(BaseModel):
    """One fused candidate: its channel ranks and raw scores, content digest and outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node_id: str = Field(description="The memory node's id")
    content_sha256: str | None = Field(
        default=None,
        description="SHA-256 hex of its content when ranked; in compact receipts kept only for "
        "the records returned or in the context (null for the others)",
    )
    time: float | None = Field(
        description="Its event time, or creation time without one, in epoch seconds"
    )
    ranks: dict[str, int] = Field(description="Search channel to its 1-based rank there")
    features: dict[str, float] = Field(
        default_factory=dict,
        description="Query-dependent inputs of the fusion (e.g. speaker_named); empty in older "
        "receipts",
    )
    session_id: str | None = Field(
        default=None,
        description="Its session, which the session-neighbour term reads; null in older receipts",
    )
    context_of: str | None = Field(
        default=None,
        description="Set on a record that was not a candidate and entered as session context "
        "of this result; such records take no part in fusion",
    )
    channel_scores: dict[str, float] = Field(
        default_factory=dict,
        description="Search channel to its raw score; empty in compact receipts",
    )
    semantic_relevance: float | None = Field(
        default=None,
        description="Cosine similarity of the query and the memory; null when not scored, and "
        "in compact receipts for a record neither returned nor in the context",
    )
    score: float = Field(
        description="The fused score (in compact receipts recomputed on read from the saved ranks)"
    )
    score_provenance: dict[str, Any] = Field(
        description="How the score was made: the per-channel RRF terms and each adjustment in "
        "order, or for a session-context record its anchor and decay; given for every "
        "candidate, returned or left out (empty for left-out candidates of receipts saved "
        "before schema 23)"
    )
    evidence_refs: list[str] = Field(
        default_factory=list,
        description="Ids of the source events behind it; empty in compact receipts",
    )
    outcome: str = Field(
        description="returned, or why it was left out: filtered, min_score, source_limit, "
        "evidence_limit, limit, token_budget, response_size (past the server's response byte "
        "limit)"
    )


class ReceiptConfig(BaseModel):
    """Every setting a retrieval's ranking, selection and packing used."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    retrieval_profile: str | None = Field(
        default=None,
        description="The retrieval profile whose techniques were on unless a setting overrode "
        "one (each technique's own setting is saved here too); null in receipts saved before "
        "profiles",
    )
    ranking_profile_id: str | None = Field(
        default=None,
        description="The learned ranking profile whose weights are in `fusion` (null: none "
        "was active for the retrieval's scopes)",
    )
    fusion: FusionConfig = Field(description="The fusion settings, enough to replay the ranking")
    mode: str = Field(description="default or explicit")
    limit: int = Field(description="The result limit applied")
    token_budget: int = Field(description="The token budget applied")
    min_score: float | None = Field(description="The minimum semantic relevance asked")
    min_score_skipped: bool = Field(
        description="True when min_score was not applied because no semantic scores were available"
    )
    max_per_source: int | None = Field(description="The cap per source applied")
    max_per_evidence: int | None = Field(description="The cap per evidence set applied")
    context_format: str = Field(description="reader or auditable")
    packing_order: str = Field(
        description="rank, or rank_admitted_session_grouped: admitted in rank order, printed "
        "grouped by date and session"
    )
    fold_repeated_text: bool = Field(
        description="True when an entry repeating an earlier entry's text was folded into it"
    )
    session_context_rank_fusion_score_decay: float = Field(
        description="A record added as session context scores its anchor's score times this"
    )
    filters: dict[str, Any] = Field(description="The filters of the request")
    embedding_model: str | None = Field(description="The model the vector channel used")
    token_counter: str = Field(description="The tokenizer that counted the context")
    fill_budget: bool = Field(
        default=False,
        description="No limit was asked: the results are what the token budget held (up to limit)",
    )
    vector_text: str = Field(
        default="content",
        description="What the vector channel embedded for each record (content in older receipts)",
    )
    vector_session_context: float = Field(
        default=0.0,
        description="The weight of the previous record of the session in each indexed vector "
        "(0 in older receipts: each record's own embedding)",
    )
    vector_segments: str = Field(
        default="whole",
        description="How each record's own vector was made (whole in older receipts: the whole "
        "text)",
    )
    session_context_anchors: int = Field(
        default=0,
        description="Results whose session neighbours were added as context (0 when none was "
        "added: older receipts, limits, caps)",
    )
    session_context_radius: int = Field(
        default=0, description="Neighbours added on each side of an anchor (0 when none)"
    )
    candidate_depth: int | None = Field(
        default=None,
        description="How many best matches each search channel returned at most (its k): a "
        "memory ranked below that in every channel was not a candidate; null in older receipts",
    )


class SessionContextEntry(BaseModel):
    """A record placed right after the first results because it was said next to one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node_id: str = Field(description="The record added")
    anchor: str = Field(description="The result it was said next to")


class ReceiptContext(BaseModel):
    """The packed context of a retrieval as saved: its digest, entries and exclusions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    context_sha256: str = Field(description="SHA-256 hex of the context")
    tokens_used: int = Field(description="Tokens the context took")
    entries: list[dict[str, Any]] = Field(description="The context's entries, in ref order")
    excluded: list[dict[str, Any]] = Field(description="Candidates left out, with reasons")
    # Receipts saved before deletes existed kept the forms themselves (VisibleValueBinding).
    visible_value_bindings: list[SavedValueBinding | VisibleValueBinding] = Field(
        default_factory=list,
        description="The value bindings the context exposed, as node, reference, kind and a "
        "digest of the forms (never the forms): what a tool call made from it may resolve "
        "against; empty in older receipts",
    )


class RetrievalReceipt(BaseModel):
    """Everything needed to explain and replay the ranking of one retrieval."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = Field(description="The receipt format's version")
    request_id: str = Field(description="The retrieval's id")
    owner_id: str = Field(description="Whose memory was searched")
    created_at: datetime = Field(description="When the retrieval ran")
    query: str = Field(description="The query as sent")
    query_sha256: str = Field(description="SHA-256 hex of the query")
    reference_time: datetime = Field(description="'Now' for recency and relative dates")
    config: ReceiptConfig = Field(description="Every setting the retrieval used")
    backend_failures: list[str] = Field(description="Search channels that failed")
    candidates: list[ReceiptCandidate] = Field(description="Every candidate, in fused order")
    returned_node_ids: list[str] = Field(description="The results returned, in order")
    context: ReceiptContext = Field(description="The packed context")
    session_context: list[SessionContextEntry] = Field(
        default_factory=list,
        description="In order, the records session context put right after the first results",
    )

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> RetrievalReceipt:
        """The receipt from its journaled payload, compact or in the full older form."""
        if payload.get("schema_version") in COMPACT_RECEIPT_SCHEMA_VERSIONS:
            return cls.model_validate(expand_payload(payload))
        return cls.model_validate(payload)

    def fusion_inputs(self) -> list[FusionInput]:
        """The fused candidates as fusion saw them, in saved order (session-context records,
        which were not fused, left out)."""
        return [
            FusionInput(c.node_id, c.ranks, c.time, c.features, c.session_id)
            for c in self.candidates
            if c.context_of is None
        ]

    def replay_ranking(self, fusion: FusionConfig | None = None) -> list[str]:
        """Recompute the fused order of every candidate from the saved ranks and config alone;
        with `fusion`, the order those settings give the same candidates instead."""
        return rank_candidates(self.fusion_inputs(), fusion or self.config.fusion)

    def saved_ranking(self) -> list[str]:
        """The order the fused candidates were saved in (the live fused order); records
        that entered only as session context follow them and are not part of it."""
        return [c.node_id for c in self.candidates if c.context_of is None]

    def replay_matches(self) -> bool:
        return self.replay_ranking() == self.saved_ranking()


def rank_candidates(inputs: Sequence[FusionInput], fusion: FusionConfig) -> list[str]:
    """The node ids of saved candidates in the order `fusion` ranks them: what a replay
    computes, and what an offline evaluation of other settings computes."""
    return [c.node_id for c in fuse(inputs, fusion)]


def stored_receipt_payload(full: dict[str, Any]) -> dict[str, Any]:
    """What the journal keeps of a receipt given as JSON values: the compact form."""
    return compact_payload(full)

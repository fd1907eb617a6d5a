"""Alias proposals (two entity nodes that may name the same thing) and their human reviews.

Both live in the journal as checksummed records; these models are their decoded payloads.
A proposal is advice only: accepting it adds a verified `alias_of` edge, and neither a
proposal nor a review ever merges or changes a node.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, ConfigDict

from prme.model.enums import CredentialRole, LifecycleState, Scope
from prme.model.records import JournalRecord

ALIAS_PROPOSAL_OPERATION = "alias_proposal"
ALIAS_REVIEW_OPERATION = "alias_review"
ALIAS_PROPOSAL_PREFIX = f"{ALIAS_PROPOSAL_OPERATION}:"
ALIAS_REVIEW_PREFIX = f"{ALIAS_REVIEW_OPERATION}:"
ALIAS_EDGE_TYPE = "alias_of"
MAX_REVIEWER_ID_CHARS = 200
MAX_REVIEW_REASON_CHARS = 2000


class AliasStatus(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class AliasDecision(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class AliasSignal(BaseModel):
    """One name-matching rule that fired, with the score it gave the pair."""

    model_config = ConfigDict(frozen=True)

    name: str
    score: float


class NodeAssessment(BaseModel):
    """The state of a node when the pair was scored; a review of a changed node is stale."""

    model_config = ConfigDict(frozen=True)

    content_sha256: str
    lifecycle_state: LifecycleState
    updated_at: AwareDatetime


class AliasCandidate(BaseModel):
    """One side of a proposal: the entity node, its name and the evidence behind it."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    name: str
    evidence_refs: tuple[str, ...]
    # The source words the extractor grounded this entity in, when it came from extraction.
    evidence_quote: str | None
    assessed: NodeAssessment


class AliasProposal(BaseModel):
    """The decoded payload of an `alias_proposal` journal record."""

    model_config = ConfigDict(frozen=True)

    proposal_operation_id: str
    scope: Scope
    similarity: float
    threshold: float
    scanner: str
    signals: tuple[AliasSignal, ...]
    nodes: tuple[AliasCandidate, AliasCandidate]

    @property
    def node_ids(self) -> tuple[str, str]:
        return (self.nodes[0].node_id, self.nodes[1].node_id)


class AliasReview(BaseModel):
    """The decoded payload of an `alias_review` journal record: one human decision."""

    model_config = ConfigDict(frozen=True)

    proposal_operation_id: str
    decision: AliasDecision
    # The caller's own label for who decided; free text, so not evidence of identity.
    reviewer_id: str
    reason: str | None
    # The verified alias_of edge an acceptance created; None for a rejection.
    edge_id: str | None
    node_ids: tuple[str, str]
    # Who the decision was authenticated as: the API key's id (None when no key was used:
    # keyless local mode or the in-process client) and its role. Reviews journaled before
    # these were recorded decode with both None.
    reviewed_by_key_id: str | None = None
    reviewed_by_role: CredentialRole | None = None


class AliasProposalItem(BaseModel):
    """A proposal with its review (when one exists), decoded and as journaled."""

    model_config = ConfigDict(frozen=True)

    status: AliasStatus
    proposal: AliasProposal
    review: AliasReview | None
    proposal_journal: JournalRecord
    review_journal: JournalRecord | None

    @property
    def proposal_operation_id(self) -> str:
        return self.proposal.proposal_operation_id

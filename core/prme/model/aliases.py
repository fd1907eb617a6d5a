"""Alias proposals (two entity nodes that may name the same thing) and their human reviews.

Both live in the journal as checksummed records; these models are their decoded payloads.
A proposal is advice only: accepting it adds a verified `alias_of` edge, and neither a
proposal nor a review ever merges or changes a node.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from prme.model.enums import CredentialRole, LifecycleState, Scope
from prme.model.records import JournalRecord

ALIAS_PROPOSAL_OPERATION = "alias_proposal"
ALIAS_REVIEW_OPERATION = "alias_review"
ALIAS_PROPOSAL_PREFIX = f"{ALIAS_PROPOSAL_OPERATION}:"
ALIAS_REVIEW_PREFIX = f"{ALIAS_REVIEW_OPERATION}:"
ALIAS_SCAN_PROGRESS_OPERATION = "alias_scan_progress"
ALIAS_SCAN_PROGRESS_PREFIX = f"{ALIAS_SCAN_PROGRESS_OPERATION}:"
ALIAS_EDGE_TYPE = "alias_of"
MAX_REVIEWER_ID_CHARS = 200
MAX_REVIEW_REASON_CHARS = 2000


class AliasStatus(StrEnum):
    """Where a proposal stands: pending until reviewed, then accepted or rejected."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class AliasDecision(StrEnum):
    """A reviewer's decision on a proposal."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"


class AliasSignal(BaseModel):
    """One name-matching rule that fired, with the score it gave the pair."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="The rule that fired")
    score: float = Field(description="The score it gave the pair")


class NodeAssessment(BaseModel):
    """The state of a node when the pair was scored; a review of a changed node is stale."""

    model_config = ConfigDict(frozen=True)

    content_sha256: str = Field(description="SHA-256 hex of the node's content then")
    lifecycle_state: LifecycleState = Field(description="The node's lifecycle state then")
    updated_at: AwareDatetime = Field(description="When the node had last changed then")


class AliasCandidate(BaseModel):
    """One side of a proposal: the entity node, its name and the evidence behind it."""

    model_config = ConfigDict(frozen=True)

    node_id: str = Field(description="The entity node's id")
    name: str = Field(description="The entity's name (the node's content)")
    evidence_refs: tuple[str, ...] = Field(description="Ids of the source events behind it")
    evidence_quote: str | None = Field(
        description="The source words the extractor grounded this entity in, when it came "
        "from extraction"
    )
    assessed: NodeAssessment = Field(description="The node's state when the pair was scored")


class AliasProposal(BaseModel):
    """The decoded payload of an `alias_proposal` journal record."""

    model_config = ConfigDict(frozen=True)

    proposal_operation_id: str = Field(description="The proposal's id")
    scope: Scope = Field(description="The scope both nodes share")
    similarity: float = Field(description="How alike the two names scored")
    threshold: float = Field(description="The similarity a pair needs to be proposed")
    scanner: str = Field(description="The scanner and its version that proposed the pair")
    signals: tuple[AliasSignal, ...] = Field(description="The name-matching rules that fired")
    nodes: tuple[AliasCandidate, AliasCandidate] = Field(description="The two entity nodes")

    @property
    def node_ids(self) -> tuple[str, str]:
        return (self.nodes[0].node_id, self.nodes[1].node_id)


class AliasReview(BaseModel):
    """The decoded payload of an `alias_review` journal record: one human decision."""

    model_config = ConfigDict(frozen=True)

    proposal_operation_id: str = Field(description="The proposal reviewed")
    decision: AliasDecision = Field(description="accepted or rejected")
    reviewer_id: str = Field(
        description="The caller's own label for who decided; free text, so not evidence of identity"
    )
    reason: str | None = Field(description="Why; required to reject")
    edge_id: str | None = Field(
        description="The verified alias_of edge an acceptance created; null for a rejection"
    )
    node_ids: tuple[str, str] = Field(description="The two entity nodes of the proposal")
    # Reviews journaled before the authenticated reviewer was recorded decode with both None.
    reviewed_by_key_id: str | None = Field(
        default=None,
        description="The API key the decision was authenticated with; null when no key was "
        "used (keyless local mode or the in-process client)",
    )
    reviewed_by_role: CredentialRole | None = Field(
        default=None, description="The role of that key"
    )


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


class AliasScanProgress(BaseModel):
    """The decoded payload of an `alias_scan_progress` journal record: where a scan that
    spanned several runs stopped, so the next run continues there.

    Names are visited in the order of their digests, so the record holds a digest, never a
    name."""

    model_config = ConfigDict(frozen=True)

    sequence: int
    # When the first run of this scan listed the nodes: alias work older than this is
    # covered once the scan completes.
    scan_started_at: AwareDatetime
    runs: int
    pairs_compared: int
    complete: bool
    # The last name visited: its scope and the sha256 of its normalized text.
    scope: Scope
    after_digest: str

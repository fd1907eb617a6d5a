"""Pages of an owner's stored memory, the record of a deleted memory, and per-owner counts."""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field

from prme.model.enums import INACTIVE_LIFECYCLE_STATES, LifecycleState, NodeType, Role, Scope
from prme.model.input_policy import check_text
from prme.model.records import Event, JournalRecord, MemoryEdge, MemoryNode, OwnerKey, WorkItem

MEMORY_DELETION_OPERATION = "memory_deletion"
MEMORY_DELETION_PREFIX = "memory-deletion:"
EVIDENCE_UNLINK_OPERATION = "evidence_unlink"
EVIDENCE_UNLINK_PREFIX = "evidence-unlink:"


MAX_SEARCH_TEXT_CHARS = 200


def _check_search_text(value: str) -> str:
    # The message never repeats the value: a search names what the owner remembers.
    check_text(value)
    if any(unicodedata.category(char) == "Cc" for char in value):
        raise ValueError("must not contain control characters")
    return value


# What a listing's `text` filter looks for: printable text, short enough that matching it
# against every record a page reads stays cheap.
SearchText = Annotated[
    str,
    Field(min_length=1, max_length=MAX_SEARCH_TEXT_CHARS),
    AfterValidator(_check_search_text),
]


def folded(content: str) -> str:
    """`content` for caseless matching: Unicode case folded, so "STRASSE" finds "Straße".

    Stored content is not normalized: that costs several times the folding on long non-ASCII
    text, and a listing folds every record it reads (the search text is, see `_contains`)."""
    if content.isascii():
        return content.lower()  # the common case, and the same as folding for ASCII
    return content.casefold()


def _contains(content: str, text: str | None) -> bool:
    # Compared as plain strings: "%" and "_" are themselves, never wildcards. The search text
    # is composed (NFC), as keyboards and browsers write text, and so is most stored text.
    return text is None or folded(unicodedata.normalize("NFC", text)) in folded(content)


def _within(moment: datetime, since: datetime | None, until: datetime | None) -> bool:
    return (since is None or moment >= since) and (until is None or moment < until)


class NodeFilter(BaseModel):
    """Which of an owner's nodes a listing returns; every field set must match."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node_type: NodeType | None = None
    lifecycle_state: LifecycleState | None = None
    scope: Scope | None = None
    session_id: str | None = None
    include_inactive: bool = False
    # Bounds on the node's effective time (its event time, else when it was created), the one
    # time order of records that retrieval's time filters use too; `until` is exclusive.
    since: AwareDatetime | None = None
    until: AwareDatetime | None = None
    # A caseless substring of the node's content.
    text: SearchText | None = None

    def matches(self, node: MemoryNode) -> bool:
        if self.lifecycle_state is not None:
            if node.lifecycle_state is not self.lifecycle_state:
                return False
        elif not self.include_inactive and node.lifecycle_state in INACTIVE_LIFECYCLE_STATES:
            return False
        return (
            (self.node_type is None or node.node_type is self.node_type)
            and (self.scope is None or node.scope is self.scope)
            and (self.session_id is None or node.session_id == self.session_id)
            and _within(node.effective_time, self.since, self.until)
            and _contains(node.content, self.text)
        )


class EventFilter(BaseModel):
    """Which of an owner's source events a listing returns; every field set must match."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str | None = None
    role: Role | None = None
    since: AwareDatetime | None = None
    until: AwareDatetime | None = None
    # A caseless substring of the event's verbatim content.
    text: SearchText | None = None

    def matches(self, event: Event) -> bool:
        return (
            (self.session_id is None or event.session_id == self.session_id)
            and (self.role is None or event.role is self.role)
            and _within(event.effective_time, self.since, self.until)
            and _contains(event.content, self.text)
        )


class NodePage(BaseModel):
    """One page of an owner's memory nodes, in node id order."""

    model_config = ConfigDict(frozen=True)

    items: list[MemoryNode]
    next_after_id: str | None


class EventPage(BaseModel):
    """One page of an owner's source events, in event id order."""

    model_config = ConfigDict(frozen=True)

    items: list[Event]
    next_after_id: str | None


class EventDeletion(BaseModel):
    """What the ledger removes, in one transaction with its journal record, to delete a memory:
    the event, the nodes derived from it, their edges and the event's work items."""

    model_config = ConfigDict(frozen=True)

    owner: OwnerKey
    # The id alone: an unreadable (quarantined) source can be deleted too.
    event_id: str
    nodes: list[MemoryNode]
    edges: list[MemoryEdge]
    work: list[WorkItem]
    journal: JournalRecord
    # Journal records that name the deleted nodes (alias proposals and their reviews).
    removed_journal_ids: list[str] = []


class MemoryDeletion(BaseModel):
    """The record of one deleted memory: ids and counts, never content."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_id: str = Field(description="The deleted source event")
    deleted_node_ids: list[str] = Field(
        description="The memory nodes derived from the event, deleted with it (and their "
        "search index documents)"
    )
    edges_removed: int = Field(description="Edges (such as alias links) of those nodes removed")
    work_items_removed: int = Field(description="Work items of the event removed, pending or not")
    alias_proposals_removed: int = Field(
        default=0,
        description="Alias proposals naming a deleted node removed, with their reviews (they "
        "held its name and the source words it was grounded in)",
    )
    unlinked_node_ids: list[str] = Field(
        default_factory=list,
        description="Nodes of other sources that the event had reinforced (or been merged "
        "into): kept, they no longer name it as evidence",
    )
    journal_id: str = Field(description="The journal record of the deletion")
    deleted_at: datetime = Field(description="When the memory was deleted")


class OwnerStats(BaseModel):
    """Counts of one owner's stored memory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    events: int = Field(description="Source events stored")
    nodes: int = Field(description="Memory nodes stored, in every lifecycle state")
    nodes_by_lifecycle_state: dict[LifecycleState, int] = Field(
        description="Memory nodes per lifecycle state (states with none are left out)"
    )
    nodes_by_type: dict[NodeType, int] = Field(
        description="Memory nodes per node type (types with none are left out)"
    )
    pending_materializations: int = Field(description="Memories waiting to be built and indexed")
    pending_extractions: int = Field(description="Ingested messages waiting for extraction")

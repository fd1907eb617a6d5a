"""Closed vocabularies of the memory model; their string values are part of the HTTP contract."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

WorkFamily = Literal["materialize", "extract", "alias"]


class Role(StrEnum):
    """Who wrote a source: the owner (user), another person, an assistant, a tool or the system."""

    USER = "user"
    PARTICIPANT = "participant"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


class NodeType(StrEnum):
    """The kind of a memory node."""

    ENTITY = "entity"
    EVENT = "event"
    FACT = "fact"
    DECISION = "decision"
    PREFERENCE = "preference"
    TASK = "task"
    SUMMARY = "summary"
    NOTE = "note"
    INSTRUCTION = "instruction"


class Scope(StrEnum):
    """Who a memory is visible to."""

    PERSONAL = "personal"
    PROJECT = "project"
    ORGANISATION = "organisation"
    AGENT = "agent"
    SYSTEM = "system"
    SANDBOX = "sandbox"


class LifecycleState(StrEnum):
    """Where a memory is in its lifecycle; it only moves forward."""

    TENTATIVE = "tentative"
    STABLE = "stable"
    CONTESTED = "contested"
    SUPERSEDED = "superseded"
    DEPRECATED = "deprecated"
    ARCHIVED = "archived"


class SourceType(StrEnum):
    """Where a memory came from (its provenance class)."""

    USER_STATED = "user_stated"
    USER_DEMONSTRATED = "user_demonstrated"
    SYSTEM_INFERRED = "system_inferred"
    EXTERNAL_DOCUMENT = "external_document"
    TOOL_OUTPUT = "tool_output"


class EpistemicType(StrEnum):
    """How certain a memory is, from observed to retracted (deprecated)."""

    OBSERVED = "observed"
    ASSERTED = "asserted"
    INFERRED = "inferred"
    HYPOTHETICAL = "hypothetical"
    CONDITIONAL = "conditional"
    DEPRECATED = "deprecated"
    UNVERIFIED = "unverified"


class RetrievalMode(StrEnum):
    """default leaves out inactive and speculative memories; explicit returns them too."""

    DEFAULT = "default"
    EXPLICIT = "explicit"


class ProcessingStatus(StrEnum):
    """The summary of a source's work: pending, completed or failed."""

    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"


class WorkKind(StrEnum):
    INDEX_NODE = "index_node"
    # A fast-ingested event still needs its node built (then indexed).
    MATERIALIZE_EVENT = "materialize_event"
    # An ingested message waits for its extraction (rules or an LLM).
    EXTRACT = "extract"
    # New entity nodes of an owner wait for the maintenance job's alias proposal scan.
    ALIAS_SCAN = "alias_scan"

    @property
    def family(self) -> WorkFamily:
        """Materialization never calls a model; extraction may; alias scans run in maintenance.

        Each family is listed and processed apart from the others."""
        if self is WorkKind.EXTRACT:
            return "extract"
        if self is WorkKind.ALIAS_SCAN:
            return "alias"
        return "materialize"


class WorkStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class WorkFailure(StrEnum):
    """Why a work item failed: its `last_error`, and the `reason_code` of a waiting ingest.

    The values are stored with work items and shown by the API, so none may change.
    Extraction spells its failures in CamelCase, like the extractor's codes, and other work
    in snake_case: a missing source and a down index have one spelling per kind of work."""

    # A dependency was down; the item is retried.
    EMBEDDING_UNAVAILABLE = "embedding_unavailable"
    INDEX_UNAVAILABLE = "index_unavailable"
    EXTRACTION_INDEX_UNAVAILABLE = "IndexUnavailable"
    # The extractor failed (`ExtractionUnavailableError.reason_code`); the item is retried.
    EXTRACTION_FAILED = "ExtractionFailed"
    EXTRACTOR_TIMEOUT = "Timeout"
    EXTRACTOR_PROVIDER_ERROR = "ProviderError"
    EXTRACTOR_INVALID_OUTPUT = "InvalidOutput"
    # The source is gone or unreadable: no retry can mend it.
    SOURCE_MISSING = "source_missing"
    EXTRACTION_SOURCE_MISSING = "SourceMissing"
    CORRUPT_RECORD = "CorruptRecord"
    # Given up: the queue's last receive, or still overdue after the sweeper's announcements.
    RETRIES_EXHAUSTED = "retries_exhausted"
    SWEEPS_EXHAUSTED = "overdue_after_retries"


class CredentialRole(StrEnum):
    """What an API key may do: act for its owner, or operate for every owner."""

    OWNER = "owner"
    OPERATOR = "operator"


# Lifecycle states that leave default retrieval; explicit mode still sees them.
INACTIVE_LIFECYCLE_STATES = frozenset(
    {LifecycleState.SUPERSEDED, LifecycleState.DEPRECATED, LifecycleState.ARCHIVED}
)
# Epistemic classes default retrieval leaves out: speculation and retracted statements.
DEFAULT_EXCLUDED_EPISTEMIC_TYPES = frozenset({EpistemicType.HYPOTHETICAL, EpistemicType.DEPRECATED})

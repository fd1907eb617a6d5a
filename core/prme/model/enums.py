"""Closed vocabularies of the memory model; their string values are part of the HTTP contract."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

WorkFamily = Literal["materialize", "extract", "alias"]


class Role(StrEnum):
    USER = "user"
    PARTICIPANT = "participant"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


class NodeType(StrEnum):
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
    PERSONAL = "personal"
    PROJECT = "project"
    ORGANISATION = "organisation"
    AGENT = "agent"
    SYSTEM = "system"
    SANDBOX = "sandbox"


class LifecycleState(StrEnum):
    TENTATIVE = "tentative"
    STABLE = "stable"
    CONTESTED = "contested"
    SUPERSEDED = "superseded"
    DEPRECATED = "deprecated"
    ARCHIVED = "archived"


class SourceType(StrEnum):
    USER_STATED = "user_stated"
    USER_DEMONSTRATED = "user_demonstrated"
    SYSTEM_INFERRED = "system_inferred"
    EXTERNAL_DOCUMENT = "external_document"
    TOOL_OUTPUT = "tool_output"


class EpistemicType(StrEnum):
    OBSERVED = "observed"
    ASSERTED = "asserted"
    INFERRED = "inferred"
    HYPOTHETICAL = "hypothetical"
    CONDITIONAL = "conditional"
    DEPRECATED = "deprecated"
    UNVERIFIED = "unverified"


class RetrievalMode(StrEnum):
    DEFAULT = "default"
    EXPLICIT = "explicit"


class ProcessingStatus(StrEnum):
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


class CredentialRole(StrEnum):
    OWNER = "owner"
    OPERATOR = "operator"


# Lifecycle states that leave default retrieval; explicit mode still sees them.
INACTIVE_LIFECYCLE_STATES = frozenset(
    {LifecycleState.SUPERSEDED, LifecycleState.DEPRECATED, LifecycleState.ARCHIVED}
)
# Epistemic classes default retrieval leaves out: speculation and retracted statements.
DEFAULT_EXCLUDED_EPISTEMIC_TYPES = frozenset({EpistemicType.HYPOTHETICAL, EpistemicType.DEPRECATED})

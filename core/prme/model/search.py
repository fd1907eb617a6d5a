"""What the engine hands the search index and what it gets back (index-side records)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from prme.model.conditions import ConditionState
from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType


class EmbeddingModelInfo(BaseModel):
    """Identity of a vector space: vectors of different keys are never compared."""

    model_config = ConfigDict(frozen=True)

    name: str
    version: str
    dimension: int

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}/{self.dimension}"


class IndexDocument(BaseModel):
    """One memory node as the index sees it: searchable text, its vector and filter fields."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    owner_id: str
    node_id: str
    text: str
    # What vector search compares against: the record's own embedding, mixed with the one
    # said just before it in its session when session context is on.
    vector: tuple[float, ...] | None = None
    # The record's own embedding alone: what the next record of the session mixes in.
    content_vector: tuple[float, ...] | None = None
    embedding_model: str | None = None
    node_type: NodeType
    source_type: SourceType
    epistemic_type: EpistemicType
    lifecycle_state: LifecycleState
    scope: Scope
    session_id: str | None = None
    event_time: datetime | None = None
    created_at: datetime
    expires_at: datetime | None = None
    # A conditional memory's condition state (None for other memories): default retrieval
    # keeps a conditional memory only while its condition is true.
    condition_state: ConditionState | None = None

    @property
    def effective_time(self) -> datetime:
        """When it happened if known, else when it was recorded (as `MemoryNode`'s)."""
        return self.event_time or self.created_at


class Filterable(Protocol):
    """The fields filters read; both `MemoryNode` and `IndexDocument` have them."""

    @property
    def node_type(self) -> NodeType: ...
    @property
    def source_type(self) -> SourceType: ...
    @property
    def epistemic_type(self) -> EpistemicType: ...
    @property
    def lifecycle_state(self) -> LifecycleState: ...
    @property
    def scope(self) -> Scope: ...
    @property
    def event_time(self) -> datetime | None: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def effective_time(self) -> datetime: ...
    @property
    def expires_at(self) -> datetime | None: ...
    @property
    def condition_state(self) -> ConditionState | None: ...


class IndexFilter(BaseModel):
    """Filters every index query applies; tenant and owner are always applied on top.

    `time_from`/`time_to` bound a record's effective time (its event time, else its
    creation); `event_time_from`/`event_time_to` bound the event time and leave out
    records without one.
    """

    model_config = ConfigDict(frozen=True)

    exclude_node_types: frozenset[NodeType] = frozenset()
    source_types: frozenset[SourceType] | None = None
    exclude_lifecycle_states: frozenset[LifecycleState] = frozenset()
    exclude_epistemic_types: frozenset[EpistemicType] = frozenset()
    scopes: frozenset[Scope] | None = None
    event_time_from: datetime | None = None
    event_time_to: datetime | None = None
    time_from: datetime | None = None
    time_to: datetime | None = None
    not_expired_at: datetime | None = None
    # Leave out conditional memories whose condition is not evaluated true.
    conditions_must_hold: bool = False

    def matches(self, item: Filterable) -> bool:
        """The reference reading of this filter, for adapters that filter in Python."""
        return self._matches_classes(item) and self._matches_times(item)

    def _matches_classes(self, item: Filterable) -> bool:
        return (
            item.node_type not in self.exclude_node_types
            and (self.source_types is None or item.source_type in self.source_types)
            and item.lifecycle_state not in self.exclude_lifecycle_states
            and item.epistemic_type not in self.exclude_epistemic_types
            and (self.scopes is None or item.scope in self.scopes)
            and not (self.conditions_must_hold and condition_unmet(item))
        )

    def _matches_times(self, item: Filterable) -> bool:
        expiry, horizon = item.expires_at, self.not_expired_at
        if horizon is not None and expiry is not None and expiry <= horizon:
            return False
        if self.event_time_from is not None or self.event_time_to is not None:
            if item.event_time is None:
                return False
            if self.event_time_from is not None and item.event_time < self.event_time_from:
                return False
            if self.event_time_to is not None and item.event_time > self.event_time_to:
                return False
        effective = item.effective_time
        if self.time_from is not None and effective < self.time_from:
            return False
        return not (self.time_to is not None and effective > self.time_to)


def condition_unmet(item: Filterable) -> bool:
    """A conditional memory whose condition is not (yet) known to hold."""
    return item.epistemic_type is EpistemicType.CONDITIONAL and (
        item.condition_state is not ConditionState.TRUE
    )


class IndexQuery(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    vector: tuple[float, ...] | None = None
    embedding_model: str | None = None
    vector_k: int = 50
    lexical_k: int = 50
    filters: IndexFilter = Field(default_factory=IndexFilter)


class IndexHits(BaseModel):
    """Ranked hits of each channel, best first, plus the cosine of every candidate it knows."""

    model_config = ConfigDict(frozen=True)

    vector: tuple[tuple[str, float], ...] = ()
    lexical: tuple[tuple[str, float], ...] = ()
    semantic: dict[str, float] = Field(default_factory=dict)
    vector_failure: str | None = None


class VectorSearchSettings(BaseModel):
    """How the embedded index searches an owner's vectors: exactly (every row scored) up to
    `approximate_from` rows, above it through clusters (`probe` nearest ones scored exactly),
    falling back to exact whenever the filters leave too few rows in the probed clusters."""

    model_config = ConfigDict(frozen=True)

    approximate_from: int = Field(default=50_000, ge=1)
    probe: int = Field(default=24, ge=1)

"""Building sources and the direct node of a source: shared by store, fast ingest and materialization."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from prme.engine.deps import EngineDeps
from prme.engine.inference import default_confidence, infer_epistemic_type, infer_source_type
from prme.model.canonical import sha256_text
from prme.model.conditions import CONDITION_METADATA_KEY, ConditionEvaluation, ConditionState
from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType
from prme.model.inputs import SourceInput
from prme.model.records import SPEAKER_METADATA_KEY, Event, MemoryNode, OwnerKey


def new_event(
    deps: EngineDeps,
    owner: OwnerKey,
    source: SourceInput,
    *,
    now: datetime,
    metadata: dict[str, Any] | None = None,
) -> Event:
    """The immutable source record: content verbatim, the speaker under its reserved key.
    `metadata`, when given, is kept instead of the source's own (a store adds bindings)."""
    stored = dict((source.metadata if metadata is None else metadata) or {})
    if source.speaker is not None:
        stored[SPEAKER_METADATA_KEY] = source.speaker
    return Event(
        id=deps.ids(),
        tenant_id=owner.tenant_id,
        owner_id=owner.owner_id,
        content=source.content,
        content_sha256=sha256_text(source.content),
        role=source.role,
        session_id=source.session_id,
        scope=source.scope or Scope.PERSONAL,
        event_time=source.event_time,
        ingested_at=now,
        metadata=stored,
    )


@dataclass(frozen=True)
class NodeChoices:
    """What a caller may set about the direct node; None means the engine's default."""

    node_type: NodeType | None = None
    indexed_text: str | None = None
    source_type: SourceType | None = None
    epistemic_type: EpistemicType | None = None
    confidence: float | None = None
    ttl_given: bool = False
    ttl_days: int | None = None
    # When the memory starts to hold, if not when its source happened (a dated claim).
    valid_from: datetime | None = None


def node_from_event(
    deps: EngineDeps,
    event: Event,
    *,
    node_id: str,
    now: datetime,
    choices: NodeChoices = NodeChoices(),
    metadata: dict[str, Any] | None = None,
) -> MemoryNode:
    """The node of one source; `metadata`, when given, replaces a copy of the source's own."""
    config = deps.config
    node_type = choices.node_type or config.default_node_type
    ttl_days = choices.ttl_days if choices.ttl_given else config.default_ttl_days.get(node_type)
    source_type = choices.source_type or infer_source_type(event.role)
    epistemic_type = choices.epistemic_type or infer_epistemic_type(source_type)
    confidence = choices.confidence
    if confidence is None:
        confidence = default_confidence(epistemic_type)
    text = choices.indexed_text if choices.indexed_text is not None else event.content
    kept = dict(event.metadata) if metadata is None else metadata
    if epistemic_type is EpistemicType.CONDITIONAL and CONDITION_METADATA_KEY not in kept:
        # Not evaluated yet: out of default retrieval until its condition is known to hold.
        kept = {
            **kept,
            CONDITION_METADATA_KEY: ConditionEvaluation(state=ConditionState.UNKNOWN).as_metadata(),
        }
    return MemoryNode(
        id=node_id,
        tenant_id=event.tenant_id,
        owner_id=event.owner_id,
        node_type=node_type,
        content=text,
        content_sha256=sha256_text(text),
        scope=event.scope,
        session_id=event.session_id,
        source_type=source_type,
        epistemic_type=epistemic_type,
        confidence=confidence,
        lifecycle_state=LifecycleState.TENTATIVE,
        event_time=event.event_time,
        valid_from=choices.valid_from or event.event_time or now,
        created_at=now,
        updated_at=now,
        ttl_days=ttl_days,
        # TTL runs from node creation, not from the (possibly historical) event time.
        expires_at=now + timedelta(days=ttl_days) if ttl_days is not None else None,
        evidence_refs=(event.id,),
        metadata=kept,
    )

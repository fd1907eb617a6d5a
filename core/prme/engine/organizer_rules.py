"""The organizer's thresholds (`OrganizerConfig`, `PRME_ORGANIZER__*`) and the pure rules each
job applies to one memory node: whether it is due for promotion, its decayed values, whether
it falls under the archive or deprecation thresholds, and the text dedup compares."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from prme.model.enums import EpistemicType, LifecycleState, NodeType
from prme.model.records import DECAY_METADATA_KEY, MemoryNode

# States the organizer acts on: the memories retrieval serves by default. Superseded,
# deprecated and archived nodes are past every job but the TTL sweep.
ACTIVE_STATES = frozenset(
    {LifecycleState.TENTATIVE, LifecycleState.STABLE, LifecycleState.CONTESTED}
)

# Decay rate per day of each profile (PRME's decay profiles).
DECAY_PER_DAY: Mapping[str, float] = {
    "permanent": 0.0,
    "slow": 0.005,
    "medium": 0.02,
    "fast": 0.07,
    "rapid": 0.2,
}
DECAY_PROFILE: Mapping[EpistemicType, str] = {
    EpistemicType.OBSERVED: "slow",
    EpistemicType.ASSERTED: "medium",
    EpistemicType.INFERRED: "fast",
    EpistemicType.HYPOTHETICAL: "rapid",
    EpistemicType.CONDITIONAL: "medium",
    EpistemicType.DEPRECATED: "permanent",
    EpistemicType.UNVERIFIED: "rapid",
}
# Values are written rounded: a rerun at the same time computes the same numbers.
_DIGITS = 4


class OrganizerConfig(BaseModel):
    """Thresholds of the organizer's jobs (PRME 0.15's defaults)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # A tentative node this old, with at least this many evidence events, becomes stable.
    promotion_age_days: float = Field(default=7.0, ge=0.0)
    promotion_min_evidence: int = Field(default=1, ge=0)
    # Archive when both salience and confidence are below these; archive whatever the
    # confidence when salience is below the force threshold.
    archive_salience: float = Field(default=0.10, ge=0.0, le=1.0)
    archive_confidence: float = Field(default=0.40, ge=0.0, le=1.0)
    force_archive_salience: float = Field(default=0.05, ge=0.0, le=1.0)
    # Deprecate when confidence is below this.
    deprecate_confidence: float = Field(default=0.15, ge=0.0, le=1.0)
    # Decay writes a node again only once a value has moved by this much since its last
    # write: it bounds the writes (each a journal record) a node costs as it ages.
    decay_write_step: float = Field(default=0.01, gt=0.0, le=1.0)
    # Nodes one ledger read takes while a job scans an owner.
    page_size: int = Field(default=100, ge=1, le=1000)
    # The maintenance function's pass over every owner runs only inside a daily window: it
    # lists each tenant's owners (a table Scan on DynamoDB) and reads every node of each, so
    # running it on every 5-minute pass would read the whole table over and over. The window
    # opens at this hour (UTC; None: never, organizing is left to POST /v1/organize) and
    # stays open this many minutes; work it leaves resumes from its cursors the next day.
    scheduled_hour_utc: int | None = Field(default=3, ge=0, le=23)
    scheduled_window_minutes: int = Field(default=10, ge=1, le=1440)


def scheduled_pass_due(now: datetime, config: OrganizerConfig) -> bool:
    """Whether `now` falls in the daily window of the maintenance function's pass."""
    if config.scheduled_hour_utc is None:
        return False
    moment = now.astimezone(UTC)
    opened = moment.replace(hour=config.scheduled_hour_utc, minute=0, second=0, microsecond=0)
    if opened > moment:
        opened -= timedelta(days=1)
    return moment - opened < timedelta(minutes=config.scheduled_window_minutes)


def promotion_due(node: MemoryNode, now: datetime, config: OrganizerConfig) -> bool:
    age_days = (now - node.created_at).total_seconds() / 86400
    return (
        node.lifecycle_state is LifecycleState.TENTATIVE
        and age_days >= config.promotion_age_days
        and len(node.evidence_refs) >= config.promotion_min_evidence
    )


def decay_rate(node: MemoryNode) -> float:
    """Per-day rate of the node's profile; instructions always decay slowly."""
    if node.node_type is NodeType.INSTRUCTION:
        return DECAY_PER_DAY["slow"]
    return DECAY_PER_DAY[DECAY_PROFILE[node.epistemic_type]]


def decay_base(node: MemoryNode) -> tuple[float, float, datetime]:
    """The salience and confidence decay starts from, and since when: the values last set by
    a store or a reinforcement (kept under the decay metadata key once decay has written)."""
    saved = node.metadata.get(DECAY_METADATA_KEY)
    if isinstance(saved, dict):
        try:
            return (
                float(saved["salience"]),
                float(saved["confidence"]),
                datetime.fromisoformat(str(saved["since"])),
            )
        except (KeyError, TypeError, ValueError):
            pass  # a damaged record restarts decay from the current values
        return node.salience, node.confidence, node.updated_at
    return node.salience, node.confidence, node.created_at


def decay_record(salience: float, confidence: float, since: datetime) -> dict[str, Any]:
    """The metadata value that makes these values the base of further decay."""
    return {"salience": salience, "confidence": confidence, "since": since.isoformat()}


def decayed_values(node: MemoryNode, now: datetime) -> tuple[float, float]:
    salience, confidence, since = decay_base(node)
    days = max(0.0, (now - since).total_seconds() / 86400)
    factor = math.exp(-decay_rate(node) * days)
    return round(salience * factor, _DIGITS), round(confidence * factor, _DIGITS)


def decay_due(
    node: MemoryNode, now: datetime, config: OrganizerConfig
) -> tuple[float, float] | None:
    """The values to write, when decay has moved either by at least a write step."""
    if node.lifecycle_state not in ACTIVE_STATES or decay_rate(node) == 0.0:
        return None
    salience, confidence = decayed_values(node, now)
    moved = max(abs(node.salience - salience), abs(node.confidence - confidence))
    # A small tolerance: values computed from the same base differ only by rounding.
    if moved + 1e-9 < config.decay_write_step:
        return None
    return salience, confidence


def archive_due(node: MemoryNode, config: OrganizerConfig) -> str | None:
    """Why the node is archived ("force" or "thresholds"), or None."""
    if node.lifecycle_state not in ACTIVE_STATES:
        return None
    if node.salience < config.force_archive_salience:
        return "force"
    if node.salience < config.archive_salience and node.confidence < config.archive_confidence:
        return "thresholds"
    return None


def deprecation_due(node: MemoryNode, config: OrganizerConfig) -> bool:
    return node.lifecycle_state in ACTIVE_STATES and node.confidence < config.deprecate_confidence


def dedup_text(content: str) -> str:
    """What two memories must share to be duplicates: the text, case and spacing aside."""
    return " ".join(content.casefold().split())


def keeper_rank(node: MemoryNode) -> tuple[float, float, datetime, str]:
    """Among duplicates the highest rank is kept: the more confident, then the more salient,
    then the newer (and the id, so every run picks the same one)."""
    return (node.confidence, node.salience, node.created_at, node.id)

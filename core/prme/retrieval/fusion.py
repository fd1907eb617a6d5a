"""Reciprocal rank fusion, query-dependent adjustments, and an event-time tie-break.

The score of a candidate is its RRF score, then in order: the named-speaker boost, the
mentioned-date boost, the session-neighbour term (a share of the best base score among the candidates said just
before or after it in the same session), and the recency boost for current-state queries.

Live retrieval and receipt replay both call `fuse`, so a replay recomputes exactly the
arithmetic that produced the saved order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict


class FusionConfig(BaseModel):
    """Everything the ranking depends on besides the candidates; saved in every receipt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fusion: str = "rrf"
    rrf_k: int = 60
    recency_boost: float = 0.25
    tie_break: str = "event_time"
    current_state: bool = False
    # Multiplier bonus for a candidate spoken by a person the query names (0 disables).
    speaker_boost: float = 0.0
    # Multiplier bonus for a candidate said within a calendar period the query names.
    time_mention_boost: float = 0.0
    # Share of the best score among a candidate's session neighbours added to its own
    # (0 disables); neighbours are the `session_neighbour_span` candidates before and after
    # it in time within the same session.
    session_neighbour_weight: float = 0.0
    session_neighbour_span: int = 2


@dataclass(frozen=True)
class FusionInput:
    """One candidate as fusion sees it: 1-based rank per channel and a time in epoch seconds."""

    node_id: str
    ranks: Mapping[str, int]
    time: float | None
    # Query-dependent facts about the candidate, e.g. {"speaker_named": 1.0}; saved in receipts.
    features: Mapping[str, float] = field(default_factory=dict)
    session: str | None = None


@dataclass
class FusedCandidate:
    node_id: str
    ranks: dict[str, int]
    time: float | None
    rrf_terms: dict[str, float]
    score: float
    adjustments: list[dict[str, float | str]] = field(default_factory=list)
    features: dict[str, float] = field(default_factory=dict)
    session: str | None = None

    @property
    def rrf_score(self) -> float:
        return sum(self.rrf_terms.values())

    def provenance(self) -> dict[str, object]:
        """How the score was made: the per-channel terms and each ordered adjustment."""
        return {
            "formula_version": 2,
            "rrf_terms": dict(self.rrf_terms),
            "rrf_score": self.rrf_score,
            "adjustments": list(self.adjustments),
            "score": self.score,
        }


def fuse(candidates: Sequence[FusionInput], config: FusionConfig) -> list[FusedCandidate]:
    """Score and order candidates: sum of 1/(k + rank) over channels, then the recency boost."""
    fused = [
        FusedCandidate(
            node_id=c.node_id,
            ranks=dict(c.ranks),
            time=c.time,
            rrf_terms={ch: 1.0 / (config.rrf_k + rank) for ch, rank in c.ranks.items()},
            score=0.0,
            features=dict(c.features),
            session=c.session,
        )
        for c in candidates
    ]
    for candidate in fused:
        candidate.score = candidate.rrf_score
    for feature, boost in (
        ("speaker_named", config.speaker_boost),
        ("time_mentioned", config.time_mention_boost),
    ):
        if boost > 0:
            _apply_feature_boost(fused, feature, boost)
    if config.session_neighbour_weight > 0 and config.session_neighbour_span > 0:
        _add_session_neighbours(
            fused, config.session_neighbour_weight, config.session_neighbour_span
        )
    if config.current_state and config.recency_boost > 0:
        _apply_recency_boost(fused, config.recency_boost)
    fused.sort(key=lambda c: _order_key(c, config))
    return fused


def _apply_feature_boost(fused: list[FusedCandidate], feature: str, boost: float) -> None:
    """Candidates with the query-dependent `feature` score `1 + boost` times as much."""
    factor = 1.0 + boost
    for candidate in fused:
        if candidate.features.get(feature, 0.0) > 0:
            candidate.score *= factor
            candidate.adjustments.append({"op": feature, "coefficient": factor})


def _add_session_neighbours(fused: list[FusedCandidate], weight: float, span: int) -> None:
    """A record said next to a strong match is likely part of the same exchange: the
    question it answers, or the answer to it. Each candidate gains `weight` times the best
    score among the `span` candidates before and after it (by time) in its session. Scores
    are read before any candidate gains, so the order of updates does not matter."""
    by_session: dict[str, list[FusedCandidate]] = {}
    for candidate in fused:
        if candidate.session is not None and candidate.time is not None:
            by_session.setdefault(candidate.session, []).append(candidate)
    gains: list[tuple[FusedCandidate, str, float]] = []
    for members in by_session.values():
        members.sort(key=lambda c: (c.time or 0.0, c.node_id))
        for position, candidate in enumerate(members):
            around = (
                members[max(0, position - span) : position]
                + members[position + 1 : position + 1 + span]
            )
            if around:
                # Ties go to the earliest neighbour, so the choice is reproducible.
                best = max(around, key=lambda c: c.score)
                gains.append((candidate, best.node_id, weight * best.score))
    for candidate, neighbour_id, term in gains:
        candidate.score += term
        candidate.adjustments.append(
            {"op": "session_neighbour", "neighbour": neighbour_id, "term": term}
        )


def _apply_recency_boost(fused: list[FusedCandidate], boost: float) -> None:
    # The newest candidate gains `boost` of its score, the oldest nothing, linearly by time rank.
    timed = sorted((c for c in fused if c.time is not None), key=lambda c: c.time or 0.0)
    if len(timed) < 2:
        return
    last = len(timed) - 1
    for position, candidate in enumerate(timed):
        fraction = position / last
        factor = 1.0 + boost * fraction
        candidate.score *= factor
        candidate.adjustments.append(
            {"op": "recency_boost", "fraction": fraction, "coefficient": factor}
        )


def _order_key(candidate: FusedCandidate, config: FusionConfig) -> tuple[float, float, str]:
    newest_first = -(candidate.time or 0.0) if config.tie_break == "event_time" else 0.0
    return (-candidate.score, newest_first, candidate.node_id)

"""Fusion owns how candidates are scored: reciprocal rank fusion, the named adjustment
steps, the scores of session-context records, and an event-time tie-break.

The score of a candidate is its RRF score, then each step of `FUSION_STEPS` its config
enables, in order: the named-speaker boost, the mentioned-date boost, the session-neighbour
term (a share of the best base score among the candidates said just before or after it in
the same session), and the recency boost for current-state queries. The retrieval profile
(retrieval/profiles.py) decides which steps a live retrieval's config enables.

Live retrieval and receipt replay both call `fuse`, so a replay recomputes exactly the
arithmetic that produced the saved order.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from pydantic import BaseModel, ConfigDict, Field

# Query-dependent facts about a candidate, read by the boost steps and saved in receipts.
SPEAKER_NAMED = "speaker_named"
TIME_MENTIONED = "time_mentioned"
# The candidate is a claim that superseded an earlier value of its fact on ingest.
CURRENT_VALUE = "current_value"
# The candidate corrects something said before ("Actually it's ...", "I meant ...").
CORRECTION = "correction"
# The candidate is an entity node (a bare name) that another candidate record names.
NAMED_ENTITY = "named_entity"


class FusionConfig(BaseModel):
    """Everything the ranking depends on besides the candidates; saved in every receipt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fusion: str = Field(default="rrf", description="The fusion method: reciprocal rank fusion")
    rrf_k: int = Field(default=60, description="k of 1/(k + rank), summed over channels")
    channel_weights: dict[str, float] = Field(
        default_factory=dict,
        description="Multiplier of each search channel's 1/(k + rank) term, by channel name; a "
        "channel not named counts 1 (empty in receipts saved before learned weights)",
    )
    recency_boost: float = Field(
        default=0.25,
        description="When current_state is true, the newest candidate gains this share of its "
        "score, the oldest nothing, linearly by time rank",
    )
    tie_break: str = Field(
        default="event_time", description="event_time: equal scores rank newest first"
    )
    current_state: bool = Field(
        default=False, description="True when the query asks for the current state"
    )
    weak_lexical_share: float = Field(
        default=0.0,
        description="A lexical hit whose BM25 score is below this share of the best hit's "
        "is fused without its lexical rank (0 disables); saved so a receipt says so",
    )
    speaker_boost: float = Field(
        default=0.0,
        description="Multiplier bonus for a candidate spoken by a person the query names "
        "(0 disables)",
    )
    time_mention_boost: float = Field(
        default=0.0,
        description="Multiplier bonus for a candidate said within a calendar period the query "
        "names (0 disables)",
    )
    session_neighbour_weight: float = Field(
        default=0.0,
        description="Share of the best score among a candidate's session neighbours added to "
        "its own (0 disables)",
    )
    session_neighbour_span: int = Field(
        default=2,
        description="The neighbours: this many candidates before and after it in time within "
        "the same session",
    )
    current_value_boost: float = Field(
        default=0.0,
        description="When current_state is true, a claim that superseded an earlier value of "
        "its fact scores (1 + boost) times as much (0 disables)",
    )
    correction_boost: float = Field(
        default=0.0,
        description="A record worded as a correction of something said before scores "
        "(1 + boost) times as much, whatever the query (0 disables)",
    )
    current_state_entities_last: bool = Field(
        default=False,
        description="When current_state is true, entity nodes that a candidate record names "
        "rank after every record (false keeps them where their score puts them)",
    )


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


@dataclass(frozen=True)
class FusionStep:
    """One named adjustment of the fused scores, applied after RRF when `enabled`."""

    name: str
    enabled: Callable[[FusionConfig], bool]
    apply: Callable[[list[FusedCandidate], FusionConfig], None]


# In the order they apply; the profiles module names each one as a technique.
FUSION_STEPS: tuple[FusionStep, ...] = (
    FusionStep(
        "speaker_boost",
        lambda config: config.speaker_boost > 0,
        lambda fused, config: _apply_feature_boost(fused, SPEAKER_NAMED, config.speaker_boost),
    ),
    FusionStep(
        "time_mention_boost",
        lambda config: config.time_mention_boost > 0,
        lambda fused, config: _apply_feature_boost(
            fused, TIME_MENTIONED, config.time_mention_boost
        ),
    ),
    FusionStep(
        "session_neighbours",
        lambda config: config.session_neighbour_weight > 0 and config.session_neighbour_span > 0,
        lambda fused, config: _add_session_neighbours(
            fused, config.session_neighbour_weight, config.session_neighbour_span
        ),
    ),
    FusionStep(
        "current_state_recency",
        lambda config: config.current_state and config.recency_boost > 0,
        lambda fused, config: _apply_recency_boost(fused, config.recency_boost),
    ),
    FusionStep(
        "current_value_boost",
        lambda config: config.current_state and config.current_value_boost > 0,
        lambda fused, config: _apply_graded_boost(fused, CURRENT_VALUE, config.current_value_boost),
    ),
    FusionStep(
        "correction_boost",
        lambda config: config.correction_boost > 0,
        lambda fused, config: _apply_feature_boost(fused, CORRECTION, config.correction_boost),
    ),
    FusionStep(
        "current_state_entities_last",
        lambda config: config.current_state and config.current_state_entities_last,
        lambda fused, _config: _put_named_entities_last(fused),
    ),
)


def enabled_steps(config: FusionConfig) -> list[FusionStep]:
    return [step for step in FUSION_STEPS if step.enabled(config)]


def fuse(candidates: Sequence[FusionInput], config: FusionConfig) -> list[FusedCandidate]:
    """Score and order candidates: sum of w/(k + rank) over channels (w the channel's weight,
    1 unless the config names it), then the enabled steps."""
    weights = config.channel_weights
    fused = [
        FusedCandidate(
            node_id=c.node_id,
            ranks=dict(c.ranks),
            time=c.time,
            rrf_terms={
                ch: weights.get(ch, 1.0) / (config.rrf_k + rank) for ch, rank in c.ranks.items()
            },
            score=0.0,
            features=dict(c.features),
            session=c.session,
        )
        for c in candidates
    ]
    for candidate in fused:
        candidate.score = candidate.rrf_score
    for step in enabled_steps(config):
        step.apply(fused, config)
    fused.sort(key=lambda c: _order_key(c, config))
    return fused


def query_features(
    speaker: str | None,
    when: datetime,
    named: set[str],
    periods: Sequence[tuple[date, date]],
) -> dict[str, float]:
    """What the query says about a candidate (said by `speaker` at `when`): whether it names
    the speaker, whether it names a period the candidate was said in."""
    features: dict[str, float] = {}
    if speaker in named:
        features[SPEAKER_NAMED] = 1.0
    if periods:
        day = when.astimezone(UTC).date()
        if any(start <= day < end for start, end in periods):
            features[TIME_MENTIONED] = 1.0
    return features


def context_scores(
    anchor_of: Mapping[str, str],
    fetched: Container[str],
    fused: Sequence[FusedCandidate],
    semantic: Mapping[str, float],
    decay: float,
) -> dict[str, tuple[float, float | None]]:
    """A record that entered only as session context (`fetched`) scores its anchor's score
    times `decay`, and its semantic relevance is its anchor's (the memory that pulled it in)."""
    score_by_id = {c.node_id: c.score for c in fused}
    return {
        node_id: (score_by_id.get(anchor, 0.0) * decay, semantic.get(anchor))
        for node_id, anchor in anchor_of.items()
        if node_id in fetched
    }


def weak_lexical_hits(lexical_scores: Mapping[str, float], share: float) -> set[str]:
    """The lexical hits whose score (higher is better) is below `share` of the best one's.

    Such a hit matched little more than a common word of the query ("new", "feel"), yet its
    rank would count as much as a semantic match of the same rank: the lexical channel's
    100th hit is rarely worth the 100th nearest vector. Retrieval fuses it without its
    lexical rank (it keeps its other channels' ranks and stays a candidate); the receipt's
    ranks are those fused, so replay needs nothing more."""
    if share <= 0 or not lexical_scores:
        return set()
    best = max(lexical_scores.values())
    if best <= 0:
        return set()
    return {node_id for node_id, score in lexical_scores.items() if score < share * best}


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


def _apply_graded_boost(fused: list[FusedCandidate], feature: str, boost: float) -> None:
    """Candidates score `1 + boost * strength` times as much, `strength` the feature's value."""
    for candidate in fused:
        strength = candidate.features.get(feature, 0.0)
        if strength > 0:
            factor = 1.0 + boost * strength
            candidate.score *= factor
            candidate.adjustments.append({"op": feature, "coefficient": factor})


def _put_named_entities_last(fused: list[FusedCandidate]) -> None:
    """A bare name says nothing about the present that the record naming it does not: "Dublin"
    above "The lease in Dublin ended and we found a place in Galway" answers nothing. Named
    entities share one factor that puts the highest of them just below the lowest record, so
    they keep their order among themselves and every score still orders the results."""
    named = [c for c in fused if c.features.get(NAMED_ENTITY, 0.0) > 0]
    records = [c.score for c in fused if c.features.get(NAMED_ENTITY, 0.0) <= 0]
    if not named or not records:
        return
    highest = max(c.score for c in named)
    floor = min(records)
    if highest < floor or highest <= 0:
        return
    factor = _BELOW * floor / highest
    for candidate in named:
        candidate.score *= factor
        candidate.adjustments.append({"op": NAMED_ENTITY, "coefficient": factor})


# How far below the lowest record the highest named entity lands: a strict gap, so the event
# time tie-break never lifts an entity above a record.
_BELOW = 0.99


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

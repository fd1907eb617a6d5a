"""Retrieval profiles own the list of conversation retrieval techniques: each one's name, the
engine settings it reads, what it does, where it acts, and the named profiles that turn it on.

A profile sets the defaults of those settings: `conversation` keeps every technique at the
value its setting declares (engine/config.py), `plain` turns every one off. A setting given
explicitly still overrides its profile (`PRME_RETRIEVAL_PROFILE=plain` with
`PRME_SCORING__SPEAKER_BOOST=2` is plain plus the speaker boost). The ablation benchmark
reads its rows from `TECHNIQUES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

ProfileName = Literal["plain", "conversation"]
DEFAULT_PROFILE: ProfileName = "conversation"
PROFILE_NAMES: tuple[ProfileName, ...] = ("plain", "conversation")

SettingValue = float | int | str


@dataclass(frozen=True)
class Technique:
    """One switchable technique; `off` maps each engine setting it reads (a dotted path in
    `EngineConfig`, e.g. `scoring.speaker_boost`) to the value that turns it off."""

    name: str
    does: str
    acts_in: str
    off: Mapping[str, SettingValue]


TECHNIQUES: tuple[Technique, ...] = (
    Technique(
        name="weak_lexical",
        does="a lexical hit scoring below a share of the best lexical hit is fused without "
        "its lexical rank",
        acts_in="retrieval/fusion.py weak_lexical_hits, applied in engine/retrieve.py",
        off={"scoring.weak_lexical_share": 0.0},
    ),
    Technique(
        name="speaker_boost",
        does="records spoken by a person the query names score (1 + boost) times as much",
        acts_in="retrieval/fusion.py step speaker_boost",
        off={"scoring.speaker_boost": 0.0},
    ),
    Technique(
        name="time_mention_boost",
        does="records said on a day, month or year the query names score (1 + boost) times as much",
        acts_in="retrieval/fusion.py step time_mention_boost",
        off={"scoring.time_mention_boost": 0.0},
    ),
    Technique(
        name="session_neighbours",
        does="each candidate gains a share of the best score among the candidates said "
        "just before or after it in its session",
        acts_in="retrieval/fusion.py step session_neighbours",
        off={"scoring.session_neighbour_weight": 0.0},
    ),
    Technique(
        name="current_state_recency",
        does="for a question about the current state, newer candidates score up to "
        "(1 + boost) times as much",
        acts_in="retrieval/fusion.py step current_state_recency",
        off={"scoring.rrf_recency_boost": 0.0},
    ),
    Technique(
        name="session_context",
        does="a budget fill puts the records said around each of the first results right "
        "after them",
        acts_in="engine/session_context.py, scored by retrieval/fusion.py context_scores",
        off={"retrieval.session_context_anchors": 0},
    ),
    Technique(
        name="session_context_vectors",
        does="a record's vector mixes in the vector of the session's previous record "
        "(needs a reindex)",
        acts_in="engine/indexing.py",
        off={"vector_session_context": 0.0},
    ),
    Technique(
        name="sentence_vectors",
        does="a record's own vector is the mean of its sentences' vectors, not one vector "
        "of the whole text (needs a reindex)",
        acts_in="engine/vector_input.py",
        off={"vector_segments": "whole"},
    ),
    Technique(
        name="speaker_vector_text",
        does="the vector channel embeds the speaker's name before the text (needs a reindex)",
        acts_in="engine/vector_input.py",
        off={"vector_text": "content"},
    ),
    Technique(
        name="session_layout",
        does="the reader context groups records under date-and-session headers in time "
        "order instead of one line per record in rank order",
        acts_in="retrieval/packing.py",
        off={"packing.reader_layout": "ranked"},
    ),
    Technique(
        name="current_value_boost",
        does="for a question about the current state, a claim that superseded an earlier "
        "value of its fact on ingest scores (1 + boost) times as much",
        acts_in="retrieval/fusion.py step current_value_boost",
        off={"scoring.current_value_boost": 0.0},
    ),
    Technique(
        name="correction_boost",
        does="a record worded as a correction of something said before scores (1 + boost) "
        "times as much, whatever the query",
        acts_in="retrieval/fusion.py step correction_boost",
        off={"scoring.correction_boost": 0.0},
    ),
    Technique(
        name="current_state_entities_last",
        does="for a question about the current state, an entity node (a bare name) that a "
        "candidate record names ranks after every record",
        acts_in="retrieval/fusion.py step current_state_entities_last",
        off={"scoring.current_state_entities_last": False},
    ),
)

# The techniques each profile turns on.
PROFILES: dict[ProfileName, frozenset[str]] = {
    "plain": frozenset(),
    "conversation": frozenset(t.name for t in TECHNIQUES),
}


def profile_settings(profile: ProfileName) -> dict[str, SettingValue]:
    """The settings a profile changes from their declared defaults: the off value of every
    technique it leaves out."""
    enabled = PROFILES[profile]
    return {
        path: value
        for technique in TECHNIQUES
        if technique.name not in enabled
        for path, value in technique.off.items()
    }

"""Ranking for knowledge updates: which records read as a change or a correction, and the
fusion steps that put the current value first."""

from __future__ import annotations

import pytest

from prme.retrieval.fusion import (
    CORRECTION,
    CURRENT_VALUE,
    NAMED_ENTITY,
    FusionConfig,
    FusionInput,
    fuse,
)
from prme.retrieval.update_wording import (
    names_mentioned,
    worded_as_change,
    worded_as_correction,
)


@pytest.mark.parametrize(
    "text",
    [
        "I moved from Lisbon to Berlin.",
        "These days I live in Kampala.",
        "I'm not vegetarian anymore.",
        "Quit keto, it wasn't for me.",
        "Formula 1 has become my favourite thing to watch on TV.",
    ],
)
def test_the_speakers_own_changes_read_as_changes(text: str) -> None:
    assert worded_as_change(text)


@pytest.mark.parametrize(
    "text",
    [
        "My brother just quit his job at the bank to become a pilot.",
        "My colleague Priya left Arup for Jacobs.",
        "I live in Lisbon.",
    ],
)
def test_someone_elses_changes_and_plain_facts_do_not(text: str) -> None:
    assert not worded_as_change(text)


def test_corrections_are_recognised() -> None:
    assert worded_as_correction("Sorry, I meant the 21st of May, not the 12th.")
    assert worded_as_correction("Actually it's a Honda Civic.")
    assert not worded_as_correction("My car is a silver Toyota Corolla.")
    assert worded_as_correction("Hold on, I looked again: it's 2029, not 2027.")
    assert worded_as_correction("Make that 7 o'clock.")


def ranked(config: FusionConfig, features: dict[str, float]) -> list[str]:
    # "old" wins both channels; "new" carries the feature under test.
    candidates = [
        FusionInput("old", {"vector": 1, "lexical": 1}, 1.0),
        FusionInput("new", {"vector": 2}, 2.0, features),
    ]
    return [c.node_id for c in fuse(candidates, config)]


def test_a_current_value_wins_only_for_a_question_about_now() -> None:
    boosted = FusionConfig(rrf_k=1, recency_boost=0.0, current_value_boost=3.0)

    assert ranked(boosted.model_copy(update={"current_state": True}), {CURRENT_VALUE: 1.0}) == [
        "new",
        "old",
    ]
    assert ranked(boosted, {CURRENT_VALUE: 1.0}) == ["old", "new"]
    # A weak signal (strength 0.1) does not outweigh the stronger match.
    assert ranked(boosted.model_copy(update={"current_state": True}), {CURRENT_VALUE: 0.1}) == [
        "old",
        "new",
    ]


def test_a_correction_wins_whatever_the_question() -> None:
    config = FusionConfig(rrf_k=1, recency_boost=0.0, correction_boost=3.0)

    assert ranked(config, {CORRECTION: 1.0}) == ["new", "old"]
    assert ranked(config.model_copy(update={"correction_boost": 0.0}), {CORRECTION: 1.0}) == [
        "old",
        "new",
    ]


def test_a_named_entity_ranks_after_the_records_for_a_question_about_now() -> None:
    # The bare name wins both channels; the record that names it is weaker and older.
    candidates = [
        FusionInput("Dublin", {"vector": 1, "lexical": 1}, 2.0, {NAMED_ENTITY: 1.0}),
        FusionInput("Oslo", {"vector": 2}, 2.0, {NAMED_ENTITY: 1.0}),
        FusionInput("record", {"vector": 3}, 1.0),
        FusionInput("other", {"lexical": 4}, 1.0),
    ]
    now = FusionConfig(rrf_k=1, current_state=True, current_state_entities_last=True)

    fused = fuse(candidates, now)
    assert [c.node_id for c in fused] == ["record", "other", "Dublin", "Oslo"]
    # Scores still order the results.
    assert [c.score for c in fused] == sorted((c.score for c in fused), reverse=True)
    # Not for other questions, and not when the setting is off.
    assert fuse(candidates, now.model_copy(update={"current_state": False}))[0].node_id == "Dublin"
    off = now.model_copy(update={"current_state_entities_last": False})
    assert fuse(candidates, off)[0].node_id == "Dublin"


def test_an_entity_counts_as_named_only_by_whole_words() -> None:
    names = {"a": "Dublin", "b": "Ash", "c": "New York"}
    texts = ["The lease in dublin ended.", "We moved to New York.", "Washington"]
    assert names_mentioned(names, texts) == {"a", "c"}

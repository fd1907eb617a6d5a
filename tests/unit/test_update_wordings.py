"""Update wordings in the rule extractor: which value is current, what it replaces, and the
assertion key that lets a later claim find the earlier one."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from prme.extraction import RuleExtractor, validate_grounded
from prme.model.extraction import (
    SINGLE_VALUED_KEYS,
    ExtractedClaim,
    assertion_key,
    claim_assertion_key,
    object_key,
)

REFERENCE = datetime(2024, 3, 10, 18, 0, tzinfo=UTC)


def only_claim(text: str) -> ExtractedClaim:
    extraction = RuleExtractor().extract(text, reference_time=REFERENCE)
    (claim,) = extraction.claims
    # Every field, the replaced value included, stays a span of the source.
    assert validate_grounded(extraction, text) == extraction
    return claim


@pytest.mark.parametrize(
    ("text", "key", "value", "replaces", "polarity"),
    [
        ("I moved from Lisbon to Berlin.", "i|lives_in", "berlin", "Lisbon", "affirmed"),
        (
            "Last year I relocated from New York to Austin.",
            "i|lives_in",
            "austin",
            "New York",
            "affirmed",
        ),
        # "We moved": the speaker's household, so the speaker's home.
        ("We moved to Berlin in 2023.", "i|lives_in", "berlin", None, "affirmed"),
        ("I'm in Kyoto now, moved last weekend.", "i|lives_in", "kyoto", None, "affirmed"),
        ("I now live in Berlin.", "i|lives_in", "berlin", None, "affirmed"),
        ("I now work at Siemens.", "i|works_at", "siemens", None, "affirmed"),
        ("I'm now at Siemens.", "i|works_at", "siemens", None, "affirmed"),
        ("I switched from tea to coffee.", "i|prefers", "coffee", "tea", "affirmed"),
        ("I no longer live in Lisbon.", "i|lives_in", "lisbon", None, "negated"),
        ("I don't eat meat anymore.", "i|eat", "meat", None, "negated"),
        ("Actually, I live in Berlin, not Lisbon.", "i|lives_in", "berlin", "Lisbon", "affirmed"),
        ("I left Google and joined Siemens.", "i|works_at", "siemens", "Google", "affirmed"),
        ("I started a new job at Acme last week.", "i|works_at", "acme", None, "affirmed"),
        ("I used to like tea but now I prefer coffee.", "i|prefers", "coffee", "tea", "affirmed"),
        # Corrections that name both values, numbers included.
        ("Sorry, I meant the 21st, not the 12th.", "i|meant", "21st", "the 12th", "affirmed"),
        ("Hold on: it's 2029, not 2027.", "it|s", "2029", "2027", "affirmed"),
        ("Actually it's Tuesday, not Thursday.", "it|s", "tuesday", "Thursday", "affirmed"),
        (
            "Oops, I said Greenfield; it's Greenwood.",
            "i|said",
            "greenwood",
            "Greenfield",
            "affirmed",
        ),
    ],
)
def test_update_wordings_name_the_current_value_and_what_it_replaces(
    text: str, key: str, value: str, replaces: str | None, polarity: str
) -> None:
    claim = only_claim(text)

    assert claim_assertion_key(claim) == key
    assert object_key(claim.object) == value
    assert claim.replaces_object == replaces
    assert claim.polarity == polarity


@pytest.mark.parametrize(
    ("text", "key"),
    [
        # Someone else's move is about them, never about the speaker's residence.
        ("My sister moved to Berlin.", "my sister|lives_in"),
        ("My sister Ana lives in Porto.", "my sister ana|lives_in"),
        # A possibility, history, and moving furniture are other facts.
        ("I might move to Berlin.", "i|might_move"),
        ("I lived in Lisbon for 5 years.", "i|lived"),
        ("I moved the couch.", "i|moved"),
        # A home that names no place, and renting something that is not a home.
        ("My place is a mess.", "my place|is"),
        ("I rent a car in Lisbon.", "i|rent"),
    ],
)
def test_wordings_that_are_not_updates_of_my_residence(text: str, key: str) -> None:
    claim = only_claim(text)

    assert claim_assertion_key(claim) == key
    assert claim.replaces_object is None
    assert claim.polarity == "affirmed"


@pytest.mark.parametrize(
    "text",
    ["Did you move from Lisbon to Berlin?", "If I moved from Lisbon to Berlin, I'd be happy."],
)
def test_questions_and_conditionals_state_no_update(text: str) -> None:
    extraction = RuleExtractor().extract(text, reference_time=REFERENCE)

    assert all(c.replaces_object is None for c in extraction.claims)


def test_predicates_of_one_meaning_share_a_key() -> None:
    lives = {
        assertion_key("I", predicate, obj)
        for predicate, obj in [
            ("live", "in Lisbon"),
            ("lives_in", "Lisbon"),
            ("living", "in Lisbon"),
            ("moved_to", "Berlin"),
            ("relocated", "to Berlin"),
            ("no_longer_live_in", "Lisbon"),
        ]
    }
    works = {
        assertion_key("I", predicate, obj)
        for predicate, obj in [
            ("works_at", "Acme"),
            ("work", "for Acme"),
            ("joined", "Acme"),
            ("started_at", "Acme"),
            ("now_at", "Acme"),
        ]
    }

    assert lives == {"i|lives_in"}
    assert works == {"i|works_at"}
    assert assertion_key("  My   Sister ", "lives", "in Porto") == "my sister|lives_in"
    assert {"lives_in", "works_at"} <= SINGLE_VALUED_KEYS
    assert "prefers" not in SINGLE_VALUED_KEYS


@pytest.mark.parametrize(
    "text",
    [
        "Home for me is a little village called Hallstatt, by the lake.",
        "My new place is in Greenwich.",
        "Our flat is in Leeds.",
        "My house is on Maple Street.",
        "I rent a room in Shoreditch.",
        "We share a flat in Leeds.",
    ],
)
def test_the_speakers_home_named_is_where_they_live(text: str) -> None:
    # So "We moved to Vienna" later finds it under the same single-valued key.
    assert claim_assertion_key(only_claim(text)) == "i|lives_in"

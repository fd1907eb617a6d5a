"""Name matching behind alias proposals: which pairs reach the threshold, and why."""

from __future__ import annotations

import random
import string
from itertools import combinations

import pytest

from prme.engine.alias_names import (
    ALIAS_THRESHOLD,
    candidate_pairs,
    compare_keys,
    compare_names,
    name_key,
)


def signal_names(a: str, b: str) -> list[str]:
    return [name for name, _ in compare_names(a, b).signals]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Lisbon", "lisbon."),
        ("José Saramago", "Jose Saramago"),
        ("Dr. Smith", "Smith"),
        ("The Beatles", "Beatles"),
        ("Acme Inc.", "ACME"),
        ("Smith, John", "John Smith"),
        ("OpenAI", "Open AI"),
        ("IBM", "International Business Machines"),
        ("I.B.M.", "International Business Machines Corp."),
        ("NASA", "National Aeronautics and Space Administration"),
        ("Dr. Smith", "John Smith"),
        ("Jon Smith", "John Smith"),
    ],
)
def test_pairs_that_likely_name_one_thing_reach_the_threshold(a: str, b: str) -> None:
    match = compare_names(a, b)
    assert match.similarity >= ALIAS_THRESHOLD
    assert 0.0 <= match.similarity <= 1.0
    # Symmetric: the order of the two names changes nothing.
    assert compare_names(b, a) == match


def test_each_rule_names_itself_as_the_strongest_signal() -> None:
    assert signal_names("Lisbon", "LISBON!")[0] == "normalized_equal"
    assert signal_names("Dr. Smith", "Smith")[0] == "core_equal"
    assert signal_names("Smith, John", "John Smith")[0] == "token_set_equal"
    assert signal_names("OpenAI", "Open AI")[0] == "compact_equal"
    assert signal_names("IBM", "International Business Machines")[0] == "acronym"
    assert signal_names("Dr. Smith", "John Smith")[0] == "tail_token_containment"
    assert signal_names("Caroline", "Caroline Jones")[0] == "token_containment"
    assert signal_names("Jon Smith", "John Smith")[0] == "character_similarity"
    # Supporting signals are reported with the one that decided.
    assert "token_overlap" in signal_names("Dr. Smith", "John Smith")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Lisbon", "London"),
        ("Austria", "Australia"),
        ("Mark", "Mary"),
        ("John Smith", "Jane Smith"),
        ("May 5", "May 6"),
        ("Flight 12", "Flight"),
        ("Smith", "John Smith Memorial Hospital"),
        ("IBM", "Intel"),
        ("", "Lisbon"),
        ("!!!", "???"),
    ],
)
def test_different_things_stay_below_the_threshold(a: str, b: str) -> None:
    assert compare_names(a, b).similarity < ALIAS_THRESHOLD


def test_different_numbers_rule_a_pair_out() -> None:
    match = compare_names("Apollo 11", "Apollo 13")
    assert match.similarity == 0.0
    assert match.signals == (("numbers_differ", 0.0),)


def test_scores_are_deterministic_and_rounded() -> None:
    first = compare_names("Alexander Hamilton", "Alexandr Hamilton")
    assert first == compare_names("Alexander Hamilton", "Alexandr Hamilton")
    assert all(round(score, 4) == score for _, score in first.signals)


def test_candidate_pairs_never_drop_a_pair_a_full_comparison_would_propose() -> None:
    rng = random.Random(7)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 8))) for _ in range(60)]
    names = [" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(150)]
    # Near spellings, initials and titles, so every signal has pairs to find.
    names += [n[:-1] for n in names[:20]] + [f"Dr. {n}" for n in names[20:30]]
    names += ["".join(w[0] for w in n.split()) for n in names[30:40] if " " in n]
    keys = [name_key(n) for n in names]
    full = {
        (i, j)
        for i, j in combinations(range(len(keys)), 2)
        if compare_keys(keys[i], keys[j]).similarity >= ALIAS_THRESHOLD
    }
    pruned = {
        (i, j)
        for i, j in candidate_pairs(keys)
        if compare_keys(keys[i], keys[j]).similarity >= ALIAS_THRESHOLD
    }
    assert full
    assert pruned == full

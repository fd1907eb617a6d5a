"""Name matching behind alias proposals: which pairs reach the threshold, and why."""

from __future__ import annotations

import random
import string
from itertools import combinations

import pytest

from prme.engine.alias_names import (
    ALIAS_THRESHOLD,
    MAX_PARTNERS_PER_NAME,
    CandidateIndex,
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


def near_spellings(seed: int) -> list[str]:
    """Names built from a small vocabulary (shared words, numbers, titles, designators),
    with deletions, insertions, substitutions, reorderings and initials of some of them."""
    rng = random.Random(seed)
    words = ["".join(rng.choices("abdeilmnorst", k=rng.randint(2, 9))) for _ in range(25)]
    words += ["dr", "the", "inc", "of", "and", "5", "12"]
    names = [
        " ".join(rng.choice(words) for _ in range(rng.choice([1, 1, 2, 2, 3, 4, 8, 9])))
        for _ in range(80)
    ]
    for name in names[:40]:
        k = rng.randrange(len(name))
        names += [
            name[:k] + name[k + 1 :],
            name[:k] + rng.choice("ab ") + name[k:],
            name[:k] + rng.choice("xyz") + name[k + 1 :],
            "".join(w[0] for w in name.split()),
            " ".join([*rng.sample(name.split(), len(name.split())), rng.choice(words)]),
        ]
    return list(dict.fromkeys(names))


@pytest.mark.parametrize("seed", range(6))
def test_blocking_finds_every_pair_of_near_spellings(seed: int) -> None:
    keys = [k for k in map(name_key, near_spellings(seed)) if k.text]
    full = {
        (i, j)
        for i, j in combinations(range(len(keys)), 2)
        if compare_keys(keys[i], keys[j]).similarity >= ALIAS_THRESHOLD
    }
    pruned = set(candidate_pairs(keys))
    assert full <= pruned
    # And it prunes: far fewer candidates than pairs.
    assert len(pruned) < len(keys) * (len(keys) - 1) / 20


def sharing_a_word(count: int) -> list[str]:
    """`count` distinct names that all end in the same word, as a street list would: half
    of them a misspelling of the other half (a letter left out), so each has a partner."""
    rng = random.Random(count)
    words: set[str] = set()
    while len(words) < count // 2:
        words.add("".join(rng.choices(string.ascii_lowercase, k=rng.randint(6, 10))))
    names = {f"{w.title()} Street" for w in words}
    for word in sorted(words):
        k = rng.randrange(1, len(word))
        names.add(f"{(word[:k] + word[k + 1 :]).title()} Street")
    return sorted(names)[:count]


def compared_pairs(names: list[str]) -> tuple[int, int]:
    """Pairs the index has compared, and how many of them reach the threshold."""
    keys = [name_key(n) for n in names]
    index = CandidateIndex(keys)
    searches = [(i, index.partners(i)) for i in range(len(index))]
    assert not any(s.capped for _, s in searches)
    pairs = [(i, j) for i, s in searches for j in s.indexes]
    proposed = sum(compare_keys(keys[i], keys[j]).similarity >= ALIAS_THRESHOLD for i, j in pairs)
    return len(pairs), proposed


def test_compared_pairs_grow_about_linearly_with_names_sharing_a_word() -> None:
    (small, small_found), (large, large_found) = (
        compared_pairs(sharing_a_word(300)),
        compared_pairs(sharing_a_word(1200)),
    )
    # Every planted misspelling is found, and little else is compared: four times the
    # names, about four times the pairs (the pairs sharing the word grow sixteenfold).
    assert small_found >= 140 and large_found >= 590
    assert small <= 2 * small_found and large <= 2 * large_found
    assert large <= 5 * small


def test_a_name_contained_in_thousands_is_compared_with_a_capped_number_and_says_so() -> None:
    names = ["Smith", *(n.replace("Street", "Smith") for n in sharing_a_word(2000))]
    index = CandidateIndex([name_key(n) for n in names])

    contained = index.partners(0)

    # Every "<word> Smith" would be a proposal; one name still costs a bounded amount.
    assert len(contained.indexes) == MAX_PARTNERS_PER_NAME
    assert contained.capped
    assert not index.partners(1).capped

"""The rule extractor: useful artifacts from plain sentences, and never a word the source lacks."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from prme.extraction import RuleExtractor, resolve_relative_dates, validate_grounded
from prme.model.extraction import Extraction
from prme.ports import Extractor

# A Sunday evening; "yesterday" is Saturday the 9th, "last week" Sunday the 3rd.
REFERENCE = datetime(2024, 3, 10, 18, 0, tzinfo=UTC)
EXTRACTOR: Extractor = RuleExtractor()

VARIED_SENTENCES = [
    "I paid $1,200 for the new bike yesterday.",
    "Caroline moved to Lisbon in May.",
    "My sister Ana works at Siemens.",
    "We ran 12 km on Sunday.",
    "I adopted 2 cats last week.",
    "Ana is my best friend!",
    "Dr. Smith said I didn't need surgery.",
    "Yesterday, Mark and I swam 2 km and cycled 30 km.",
    "I never eat meat.",
    "The rent is €950 a month.",
    "Zoë López visited Kraków on 2024-02-03.",
    "My mom, Rosa, lives in São Paulo.",
    "Email me at ana.silva@example.com or ping @ana_s.",
    "The docs are at https://example.org/guide, see section 4.",
    "I lost 3 kg in 45 minutes of sauna... just kidding.",
    "Our son Tomás started school 3 days ago.",
    "Did you pay the bill?",
    "If I win the lottery, I'll buy a boat.",
    "Sales grew 20% last year.",
    "I’m learning Japanese with my friend Kenji.",
    "We   met   Olga\non the train to Kyiv last Friday.",
    '"Honestly," she said, "the concert was great."',
    "Mr. and Mrs. Okafor hosted 12 guests tonight.",
    "I walked 10,000 steps today; my goal is 12,500.",
    "Bought 3 books (used) for £18.50 — bargain!",
    "My boss Priya works at Deutsche Bank in Frankfurt.",
    "He studied at the University of Porto.",
    "Tomorrow I fly to New York for 5 days.",
    "Ich wohne in Berlin. 我住在北京。",
    "Note: the meeting moved to 10:30, not 9.",
    "Jean-Luc O'Neill sold his car for $8,000 last month.",
]


def extract(text: str, reference: datetime = REFERENCE) -> Extraction:
    return EXTRACTOR.extract(text, reference_time=reference)


def test_a_payment_yields_a_dated_claim_and_a_currency_quantity() -> None:
    result = extract("I paid $1,200 for the new bike yesterday.")

    (claim,) = result.claims
    assert (claim.subject, claim.predicate) == ("I", "paid")
    assert claim.object == "$1,200 for the new bike yesterday"
    assert claim.occurred_on == date(2024, 3, 9)
    (quantity,) = result.quantities
    assert (quantity.subject, quantity.predicate) == ("I", "paid")
    assert (quantity.value, quantity.unit) == (Decimal(1200), "$")
    assert result.extractor == "rules/1" == EXTRACTOR.name


def test_a_move_yields_names_places_and_a_relationship() -> None:
    result = extract("Caroline moved to Lisbon in May.")

    assert {(e.name, e.kind) for e in result.entities} == {
        ("Caroline", "name"),
        ("Lisbon", "place"),
        ("May", "date"),
    }
    (claim,) = result.claims
    # A move is an update wording: the claim names the new place alone.
    assert (claim.subject, claim.predicate, claim.object) == ("Caroline", "moved_to", "Lisbon")
    assert {(r.source, r.relation, r.target) for r in result.relationships} == {
        ("Caroline", "moved_to", "Lisbon")
    }


def test_family_and_employer_relationships() -> None:
    result = extract("My sister Ana works at Siemens.")

    assert {(r.source, r.relation, r.target) for r in result.relationships} == {
        ("My", "sister", "Ana"),
        ("Ana", "works_at", "Siemens"),
    }
    assert {(e.name, e.kind) for e in result.entities} == {
        ("Ana", "person"),
        ("Siemens", "organization"),
    }
    (claim,) = result.claims
    assert (claim.subject, claim.predicate) == ("My sister Ana", "works")


def test_distance_and_counted_quantities() -> None:
    ran = extract("We ran 12 km on Sunday.")
    adopted = extract("I adopted 2 cats last week.")

    assert [(q.subject, q.predicate, q.value, q.unit) for q in ran.quantities] == [
        ("We", "ran", Decimal(12), "km")
    ]
    assert [(q.subject, q.predicate, q.value, q.unit) for q in adopted.quantities] == [
        ("I", "adopted_cats", Decimal(2), "cats")
    ]
    assert adopted.claims[0].occurred_on == date(2024, 3, 3)


def test_each_number_takes_the_verb_before_it() -> None:
    result = extract("Yesterday, Mark and I swam 2 km and cycled 30 km.")

    assert [(q.subject, q.predicate, q.value) for q in result.quantities] == [
        ("Mark and I", "swam", Decimal(2)),
        ("Mark and I", "cycled", Decimal(30)),
    ]


def test_negation_stays_in_the_predicate() -> None:
    assert extract("I never eat meat.").claims[0].predicate == "never_eat"
    assert extract("I didn't buy the car.").claims[0].predicate == "didn't_buy"


def test_questions_and_conditionals_state_no_facts() -> None:
    assert extract("Did you pay the bill?").claims == ()
    result = extract("If I win the lottery, I'll buy a boat.")
    assert (result.claims, result.quantities) == ((), ())


def test_patterns_become_entities() -> None:
    result = extract("Email me at ana.silva@example.com or see https://example.org/guide today.")

    kinds = {e.kind: e.name for e in result.entities}
    assert kinds["email"] == "ana.silva@example.com"
    assert kinds["url"] == "https://example.org/guide"
    assert {e.name for e in extract("Ping @ana_s about it.").entities} == {"@ana_s"}


def test_sentences_split_around_abbreviations() -> None:
    result = extract("Dr. Smith called. I paid $40 yesterday! Did it help?")

    assert [c.evidence_quote for c in result.claims] == [
        "Dr. Smith called.",
        "I paid $40 yesterday!",
    ]
    assert ("Dr. Smith", "name") in {(e.name, e.kind) for e in result.entities}


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("today", date(2024, 3, 10)),
        ("yesterday", date(2024, 3, 9)),
        ("tomorrow", date(2024, 3, 11)),
        ("the day before yesterday", date(2024, 3, 8)),
        ("last Friday", date(2024, 3, 8)),
        ("last Sunday", date(2024, 3, 3)),
        ("next Monday", date(2024, 3, 11)),
        ("3 days ago", date(2024, 3, 7)),
        ("two weeks ago", date(2024, 2, 25)),
        ("last week", date(2024, 3, 3)),
        ("last month", date(2024, 2, 10)),
        ("last year", date(2023, 3, 10)),
    ],
)
def test_relative_dates_resolve_against_the_reference(phrase: str, expected: date) -> None:
    assert resolve_relative_dates(f"We met {phrase}.", REFERENCE) == [(phrase, expected)]


def test_relative_dates_use_the_reference_timezone_and_clamp_months() -> None:
    # 01:30 at UTC-6 on March 10 is already March 10 07:30 UTC; the local day is what counts.
    local = datetime(2024, 3, 10, 1, 30, tzinfo=timezone(timedelta(hours=-6)))
    late_utc = datetime(2024, 3, 10, 23, 30, tzinfo=UTC).astimezone(timezone(timedelta(hours=5)))

    assert resolve_relative_dates("yesterday", local) == [("yesterday", date(2024, 3, 9))]
    assert resolve_relative_dates("yesterday", late_utc) == [("yesterday", date(2024, 3, 10))]
    assert resolve_relative_dates("last month", datetime(2024, 3, 31, tzinfo=UTC)) == [
        ("last month", date(2024, 2, 29))
    ]
    assert extract("Yesterday I ran 5 km.", local).claims[0].occurred_on == date(2024, 3, 9)


def _source_words(text: str) -> set[str]:
    return {word.lower() for word in re.findall(r"[^\W_]+", text)}


@pytest.mark.parametrize("sentence", VARIED_SENTENCES)
def test_no_artifact_holds_text_absent_from_the_source(sentence: str) -> None:
    text = f"Intro line.\n{sentence} Closing words here."
    result = extract(text)
    words = _source_words(text)

    def verbatim(span: str | None) -> None:
        assert span is None or span in text, span

    def labelled(label: str) -> None:
        assert set(re.findall(r"[^\W_]+", label.lower())) <= words, label

    for entity in result.entities:
        verbatim(entity.evidence_quote)
        verbatim(entity.name)
    for claim in result.claims:
        for span in (claim.evidence_quote, claim.statement, claim.subject, claim.object):
            verbatim(span)
        labelled(claim.predicate)
    for quantity in result.quantities:
        for span in (quantity.evidence_quote, quantity.subject, quantity.unit):
            verbatim(span)
        labelled(quantity.predicate)
    for relationship in result.relationships:
        for span in (relationship.evidence_quote, relationship.source, relationship.target):
            verbatim(span)
        labelled(relationship.relation)
    assert validate_grounded(result, text) == result


def test_varied_sentences_yield_claims() -> None:
    result = extract(" ".join(VARIED_SENTENCES))

    # Not every sentence is a fact (questions, conditionals), but most state one.
    assert len(result.claims) >= 20
    assert len(result.quantities) >= 10
    assert len(result.relationships) >= 5


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"])
def test_empty_text_gives_an_empty_extraction(text: str) -> None:
    assert extract(text) == Extraction(extractor="rules/1")


def test_two_thousand_sentences_run() -> None:
    text = " ".join(VARIED_SENTENCES * (2000 // len(VARIED_SENTENCES) + 1))

    result = extract(text)

    assert len(result.claims) > 1000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A framing opener is not the subject: the claim keys on what the sentence is about.
        ("These days my favourite colour is green.", ("my favourite colour", "is", "green")),
        ("Just so you know, I live in Oslo.", ("I", "live", "in Oslo")),
        ("Lately I cook Korean food.", ("I", "cook", "Korean food")),
        # A contraction's pronoun is the subject of an update wording.
        ("I've moved to Oslo.", ("I", "moved_to", "Oslo")),
    ],
)
def test_openers_and_contractions_leave_the_plain_subject(
    text: str, expected: tuple[str, str, str]
) -> None:
    (claim,) = extract(text).claims

    assert (claim.subject, claim.predicate, claim.object) == expected

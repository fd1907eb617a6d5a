"""The grounding gate: artifacts whose quote or text is not in the source are dropped, not raised."""

from __future__ import annotations

from decimal import Decimal

import pytest

from prme.extraction import parse_decimal, validate_grounded
from prme.model.extraction import (
    ExtractedClaim,
    ExtractedEntity,
    ExtractedQuantity,
    ExtractedRelationship,
    Extraction,
)

SOURCE = "Yesterday I paid $1,200 for the new bike.\nMy sister  Ana works at Siemens."


def claim(quote: str, *, subject: str = "I", statement: str | None = None) -> ExtractedClaim:
    return ExtractedClaim(
        statement=statement or quote,
        subject=subject,
        predicate="paid",
        evidence_quote=quote,
    )


def quantity(quote: str, value: str) -> ExtractedQuantity:
    return ExtractedQuantity(
        subject="I", predicate="paid", value=Decimal(value), unit="$", evidence_quote=quote
    )


def test_ungrounded_artifacts_are_dropped_and_grounded_ones_kept() -> None:
    kept = claim("I paid $1,200 for the new bike.")
    extraction = Extraction(
        extractor="test",
        entities=(
            ExtractedEntity(name="Siemens", evidence_quote="works at Siemens"),
            ExtractedEntity(name="Bosch", evidence_quote="works at Bosch"),
            ExtractedEntity(name="Lisbon", evidence_quote="works at Siemens"),
        ),
        claims=(kept, claim("I paid $1,300 for the new car.")),
        relationships=(
            ExtractedRelationship(
                source="Ana", relation="works_at", target="Siemens", evidence_quote="Ana works"
            ),
            ExtractedRelationship(
                source="Ana", relation="employed_by", target="Siemens", evidence_quote="Ana works"
            ),
        ),
    )

    grounded = validate_grounded(extraction, SOURCE)

    assert [e.name for e in grounded.entities] == ["Siemens"]
    assert grounded.claims == (kept,)
    assert [r.relation for r in grounded.relationships] == ["works_at"]
    assert grounded.extractor == "test"


def test_a_claim_with_a_subject_or_statement_word_absent_from_the_source_is_dropped() -> None:
    quote = "I paid $1,200 for the new bike."
    extraction = Extraction(
        extractor="test",
        claims=(
            claim(quote, subject="The user"),
            claim(quote, statement="The user bought an expensive bike."),
            claim(quote, statement="I paid $1,200 for the bike."),
        ),
    )

    grounded = validate_grounded(extraction, SOURCE)

    assert [c.statement for c in grounded.claims] == ["I paid $1,200 for the bike."]


def test_a_quote_matching_after_collapsing_whitespace_is_accepted() -> None:
    spread = ExtractedEntity(name="Ana", evidence_quote="bike. My sister Ana")
    extraction = Extraction(extractor="test", entities=(spread,))

    assert validate_grounded(extraction, SOURCE).entities == (spread,)


def test_a_quote_differing_in_case_is_rejected() -> None:
    extraction = Extraction(
        extractor="test",
        entities=(ExtractedEntity(name="Siemens", evidence_quote="WORKS AT SIEMENS"),),
        claims=(claim("i paid $1,200 for the new bike."),),
    )

    grounded = validate_grounded(extraction, SOURCE)

    assert (grounded.entities, grounded.claims) == ((), ())


def test_a_quantity_whose_value_is_not_in_its_quote_is_dropped() -> None:
    good = quantity("I paid $1,200", "1200")
    extraction = Extraction(
        extractor="test",
        quantities=(good, quantity("I paid $1,200", "1300"), quantity("I paid", "1200")),
    )

    assert validate_grounded(extraction, SOURCE).quantities == (good,)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1,200", Decimal(1200)),
        ("$1,200.50", Decimal("1200.50")),
        ("€ 12", Decimal(12)),
        ("-3.5", Decimal("-3.5")),
        ("12,00", None),
        ("twelve", None),
        ("", None),
    ],
)
def test_parse_decimal(text: str, expected: Decimal | None) -> None:
    assert parse_decimal(text) == expected

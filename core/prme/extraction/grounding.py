"""The grounding gate every extractor's output passes: artifacts whose text is not in the source are dropped.

A quote must occur verbatim (runs of whitespace may differ); names and subjects must occur in the
source; normalized labels (predicates, relations) may only use words of the source.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from prme.model.extraction import (
    ExtractedClaim,
    ExtractedEntity,
    ExtractedQuantity,
    ExtractedRelationship,
    Extraction,
)

_WHITESPACE = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# A number as people write it: optional currency sign, thousands groups, decimals.
_NUMBER = re.compile(r"(?<![\w.,])[$€£¥]?\s?[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")
_DECIMAL_TEXT = re.compile(
    r"[$€£¥]?\s?(?P<sign>[-+]?)(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?"
)


def parse_decimal(text: str) -> Decimal | None:
    """The value of one written number ("$1,200", "12", "3.5"), or None when it is not one."""
    match = _DECIMAL_TEXT.fullmatch(text.strip())
    if match is None:
        return None
    digits = match["sign"] + match["int"].replace(",", "") + (match["frac"] or "")
    try:
        return Decimal(digits)
    except InvalidOperation:  # pragma: no cover - the pattern only admits valid digits
        return None


def numbers_in(text: str) -> set[Decimal]:
    """Every number written in `text`, as decimals (so "1,200" and "1200.0" compare equal)."""
    found: set[Decimal] = set()
    for match in _NUMBER.finditer(text):
        value = parse_decimal(match.group())
        if value is not None:
            found.add(value)
    return found


class _Source:
    """The source text prepared once for many membership checks."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.collapsed = _WHITESPACE.sub(" ", text)
        self.words = {word.lower() for word in _WORD.findall(text)}

    def contains(self, span: str) -> bool:
        # Exact first; the collapsed form only forgives line breaks and repeated spaces.
        if span in self.text:
            return True
        return _WHITESPACE.sub(" ", span.strip()) in self.collapsed

    def has_words_of(self, label: str) -> bool:
        """True when every word of a normalized label ("works_at") is a word of the source."""
        words = [word.lower() for word in _WORD.findall(label)]
        return bool(words) and all(word in self.words for word in words)


def _quote_ok(quote: str, source: _Source) -> bool:
    return bool(quote.strip()) and source.contains(quote)


def _entity_ok(entity: ExtractedEntity, source: _Source) -> bool:
    return _quote_ok(entity.evidence_quote, source) and source.contains(entity.name)


def _claim_ok(claim: ExtractedClaim, source: _Source) -> bool:
    if not _quote_ok(claim.evidence_quote, source):
        return False
    if not (source.contains(claim.subject) and source.has_words_of(claim.predicate)):
        return False
    if claim.object is not None and not source.contains(claim.object):
        return False
    if claim.replaces_object is not None and not source.contains(claim.replaces_object):
        return False
    # A statement may be a tidied clause, but it may not bring in a word the source lacks.
    return source.has_words_of(claim.statement)


def _quantity_ok(quantity: ExtractedQuantity, source: _Source) -> bool:
    quote = quantity.evidence_quote
    if not _quote_ok(quote, source) or quantity.value not in numbers_in(quote):
        return False
    if quantity.unit is not None and quantity.unit not in quote:
        return False
    return source.contains(quantity.subject) and source.has_words_of(quantity.predicate)


def _relationship_ok(relationship: ExtractedRelationship, source: _Source) -> bool:
    return (
        _quote_ok(relationship.evidence_quote, source)
        and source.contains(relationship.source)
        and source.contains(relationship.target)
        and source.has_words_of(relationship.relation)
    )


def validate_grounded(extraction: Extraction, source_text: str) -> Extraction:
    """The extraction without the artifacts that are not grounded in `source_text`."""
    source = _Source(source_text)
    return extraction.model_copy(
        update={
            "entities": tuple(e for e in extraction.entities if _entity_ok(e, source)),
            "claims": tuple(c for c in extraction.claims if _claim_ok(c, source)),
            "quantities": tuple(q for q in extraction.quantities if _quantity_ok(q, source)),
            "relationships": tuple(
                r for r in extraction.relationships if _relationship_ok(r, source)
            ),
        }
    )

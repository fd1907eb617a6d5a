"""What an extractor derives from one source: entities, claims, quantities and relationships.

Every artifact carries an evidence quote that must occur verbatim in the source; providers
that return anything else are rejected, so no text absent from the source becomes memory.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field


class _Artifact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    evidence_quote: str = Field(min_length=1, max_length=2000)


class ExtractedEntity(_Artifact):
    name: str = Field(min_length=1, max_length=200)
    kind: str = Field(default="thing", min_length=1, max_length=40)


class ExtractedClaim(_Artifact):
    """A statement the source makes, phrased from the source (the quote is its grounding)."""

    statement: str = Field(min_length=1, max_length=2000)
    subject: str = Field(min_length=1, max_length=200)
    predicate: str = Field(min_length=1, max_length=80)
    object: str | None = Field(default=None, max_length=500)
    # A relative date in the source ("yesterday") resolved against the source's time.
    occurred_on: date | None = None


class ExtractedQuantity(_Artifact):
    subject: str = Field(min_length=1, max_length=200)
    predicate: str = Field(min_length=1, max_length=80)
    value: Decimal
    unit: str | None = Field(default=None, max_length=40)


class ExtractedRelationship(_Artifact):
    source: str = Field(min_length=1, max_length=200)
    relation: str = Field(min_length=1, max_length=80)
    target: str = Field(min_length=1, max_length=200)


class Extraction(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    extractor: str
    entities: tuple[ExtractedEntity, ...] = ()
    claims: tuple[ExtractedClaim, ...] = ()
    quantities: tuple[ExtractedQuantity, ...] = ()
    relationships: tuple[ExtractedRelationship, ...] = ()

"""What an extractor derives from one source: entities, claims, quantities and relationships.

Every artifact carries an evidence quote that must occur verbatim in the source; providers
that return anything else are rejected, so no text absent from the source becomes memory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from prme.model.records import EXTRACTION_METADATA_KEY


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
    # "negated" states that the subject no longer holds the object ("I don't live there
    # anymore"); `replaces_object` names the earlier value this claim replaces, as written.
    polarity: Literal["affirmed", "negated"] = "affirmed"
    replaces_object: str | None = Field(default=None, max_length=500)


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


# Assertion keys: one spelling for subject + predicate so that a later claim about the same
# fact finds the earlier one, whatever verb form or update wording either one used.
_LABEL_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that qualify a predicate without changing which fact it is about.
_QUALIFIERS = _word_set(
    "not never no longer anymore now still actually currently just recently finally also "
    "really am is are was were be been do does did have has had to in at for from "
    "with of the a an new"
)
# Past forms ("I lived in Lisbon") tell history, not the current value: they keep their own key.
_LIVE = _word_set("live lives living reside resides residing based")
_MOVE = _word_set("move moves moved moving relocate relocates relocated relocating")
_WORK = _word_set("work works working employed job")
_JOIN = _word_set("join joins joined joining")
_START = _word_set("start starts started starting")
_PREFER = _word_set(
    "prefer prefers preferred preferring switch switches switched switching favourite "
    "favorite like likes liked love loves loved"
)
_PLACE_PREPOSITIONS = frozenset({"in", "to", "from"})
_JOB_PREPOSITIONS = frozenset({"at", "for", "with"})

LIVES_IN = "lives_in"
WORKS_AT = "works_at"
PREFERS = "prefers"
FAVOURITE = "favourite"
# Keys one subject holds one value of at a time: a new value replaces the old one.
SINGLE_VALUED_KEYS = frozenset({LIVES_IN, WORKS_AT, FAVOURITE})


def normalize_phrase(text: str) -> str:
    """Casefolded with whitespace collapsed: the form assertion keys and objects compare in."""
    return " ".join(text.casefold().split())


def _words(text: str) -> list[str]:
    return [w.replace("’", "'") for w in _LABEL_WORD.findall(text.casefold())]


def _is_negation(word: str) -> bool:
    return word in {"not", "never", "no"} or word.endswith("n't")


def predicate_key(predicate: str, obj: str | None = None) -> str:
    """The predicate family ("lives_in", "works_at", "prefers") or the predicate's own words."""
    words = _words(predicate)
    content = [w for w in words if w not in _QUALIFIERS and not _is_negation(w)]
    object_words = _words(obj or "")
    prepositions = {w for w in words if w in _PLACE_PREPOSITIONS | _JOB_PREPOSITIONS}
    if object_words:
        prepositions.add(object_words[0])
    verb = content[0] if content else ""
    if not content and {"now", "at"} <= set(words):
        return WORKS_AT  # "I'm now at Siemens"
    if verb in _LIVE:
        return LIVES_IN
    if verb in _MOVE and prepositions & {"to", "from"}:
        return LIVES_IN
    if verb in _WORK and prepositions & _JOB_PREPOSITIONS:
        return WORKS_AT
    if verb in _JOIN or (verb in _START and prepositions & _JOB_PREPOSITIONS):
        return WORKS_AT
    if verb in _PREFER:
        return PREFERS
    return "_".join(content or words) or "_"


def assertion_key(subject: str, predicate: str, obj: str | None = None) -> str:
    """`subject|family`: claims with one key state values of one fact of one subject."""
    family = predicate_key(predicate, obj)
    normalized = normalize_phrase(subject)
    if family in {"is", "are", "was", "were", "_"} and re.match(
        r"(my|our) favou?rite ", normalized
    ):
        # "My favourite colour is green": the subject names the fact, the verb says nothing.
        family = FAVOURITE
    return f"{normalized}|{family}"


def object_key(obj: str | None) -> str:
    """An object as values compare: "in Berlin" and "Berlin" are one value."""
    words = _words(obj or "")
    while words and words[0] in _QUALIFIERS:
        words = words[1:]
    while words and words[-1] in {"now", "anymore", "longer"}:
        words = words[:-1]
    return " ".join(words)


def claim_assertion_key(claim: ExtractedClaim) -> str:
    return assertion_key(claim.subject, claim.predicate, claim.object)


def stored_assertion_key(metadata: Mapping[str, Any]) -> str | None:
    """The assertion key an extracted claim's node metadata carries, if any."""
    extracted = metadata.get(EXTRACTION_METADATA_KEY)
    if not isinstance(extracted, dict):
        return None
    key = extracted.get("assertion_key")
    return key if isinstance(key, str) and key else None

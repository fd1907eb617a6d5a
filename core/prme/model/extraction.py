"""What an extractor derives from one source: entities, claims, quantities and relationships.

Every artifact carries an evidence quote that must occur verbatim in the source; providers
that return anything else are rejected, so no text absent from the source becomes memory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from prme.model.records import EXTRACTION_METADATA_KEY


class _Artifact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    evidence_quote: str = Field(
        min_length=1, max_length=2000, description="The exact span of the source that supports it"
    )


class ExtractedEntity(_Artifact):
    """A named thing the source mentions."""

    name: str = Field(min_length=1, max_length=200, description="The entity as the source names it")
    kind: str = Field(
        default="thing",
        min_length=1,
        max_length=40,
        description="What it is: person, place, organization, date, name, ...",
    )


class ExtractedClaim(_Artifact):
    """A statement the source makes, phrased from the source (the quote is its grounding)."""

    statement: str = Field(min_length=1, max_length=2000, description="The claim as stated")
    subject: str = Field(min_length=1, max_length=200, description="Who or what it is about")
    predicate: str = Field(
        min_length=1, max_length=80, description="What is said of the subject, as a label"
    )
    object: str | None = Field(default=None, max_length=500, description="The value, if any")
    # A relative date in the source ("yesterday") resolved against the source's time.
    occurred_on: date | None = Field(
        default=None, description="When it happened, when the source dates it"
    )
    # "negated" states that the subject no longer holds the object ("I don't live there
    # anymore"); `replaces_object` names the earlier value this claim replaces, as written.
    polarity: Literal["affirmed", "negated"] = Field(
        default="affirmed", description="negated: the source says it no longer holds"
    )
    replaces_object: str | None = Field(
        default=None, max_length=500, description="The earlier value this claim replaces, if named"
    )


class ExtractedQuantity(_Artifact):
    """An amount or count the source states, with its unit."""

    subject: str = Field(min_length=1, max_length=200, description="Who or what it counts for")
    predicate: str = Field(min_length=1, max_length=80, description="What was counted, as a label")
    value: Decimal = Field(description="The number as written")
    unit: str | None = Field(default=None, max_length=40, description="Its unit, as written")


class ExtractedRelationship(_Artifact):
    """A relation the source states between two of its entities."""

    source: str = Field(min_length=1, max_length=200, description="The first entity")
    relation: str = Field(min_length=1, max_length=80, description="How they relate, as a label")
    target: str = Field(min_length=1, max_length=200, description="The second entity")


class Extraction(BaseModel):
    """What an extractor derived from one source; every artifact is grounded in it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    extractor: str = Field(description="The extractor that produced it, e.g. rules/1")
    entities: tuple[ExtractedEntity, ...] = Field(default=(), description="Named things")
    claims: tuple[ExtractedClaim, ...] = Field(default=(), description="Statements")
    quantities: tuple[ExtractedQuantity, ...] = Field(default=(), description="Amounts and counts")
    relationships: tuple[ExtractedRelationship, ...] = Field(
        default=(), description="Relations between entities"
    )


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
# "I rent a room in Shoreditch", "We share a flat in Leeds": a home somewhere is where one lives.
_KEEP_HOME = _word_set("rent rents renting share shares sharing")
_HOME_NOUNS = _word_set("home place flat apartment house room studio address")
# "My new place is in Greenwich", "Home for me is Hallstatt": the speaker's home, named.
_HOME_SUBJECT = re.compile(
    r"(?:(?:my|our)(?: (?:new|current|own))? (?:home|place|flat|apartment|house|address)"
    r"|home(?: for (?:me|us))?)"
)
_COPULAS = frozenset({"is", "are"})
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
    if not content and {"now", "in"} <= set(words):
        return LIVES_IN  # "I'm in Kyoto now"
    if verb in _LIVE:
        return LIVES_IN
    if verb in _MOVE and prepositions & {"to", "from"}:
        return LIVES_IN
    if verb in _KEEP_HOME and "in" in object_words and _HOME_NOUNS & set(object_words):
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
    if family in _COPULAS and _HOME_SUBJECT.fullmatch(normalized) and _names_a_place(obj):
        family, normalized = LIVES_IN, "i"
    elif (
        _HOME_SUBJECT.fullmatch(f"{normalized} {' '.join(_words(predicate))}")
        and _words(obj or "")[:1] in (["is"], ["are"])
        and _names_a_place((obj or "").split(maxsplit=1)[-1])
    ):
        # The extractor can split "my new | place | is in Greenwich" at the noun.
        family, normalized = LIVES_IN, "i"
    if family == LIVES_IN and normalized == "we":
        # "We moved to Milan": the speaker's household, the speaker's home.
        normalized = "i"
    return f"{normalized}|{family}"


def _names_a_place(obj: str | None) -> bool:
    """ "in Leeds", "on Maple Street", "a village called Hallstatt" name where; "a mess" does not."""
    words = (obj or "").split()
    return bool(words) and (
        words[0].casefold() in {"in", "on", "at", "near"} or any(w[:1].isupper() for w in words)
    )


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


class SupersededClaim(BaseModel):
    """One earlier claim an extraction superseded."""

    model_config = ConfigDict(frozen=True)

    old_node_id: str = Field(description="The earlier claim's node, now superseded")
    new_node_id: str = Field(description="The node of the claim that replaced it")
    edge_id: str = Field(description="The supersedes edge from the new node to the old one")


class SavedExtraction(BaseModel):
    """The saved record of one source's completed extraction, read from its journal record."""

    model_config = ConfigDict(frozen=True)

    event_id: str = Field(description="The source event extracted")
    extractor: str = Field(description="The extractor that ran, e.g. rules/1")
    reference_time: datetime = Field(description="The time relative dates were resolved against")
    extracted_at: datetime = Field(description="When the extraction was committed")
    extraction: Extraction | None = Field(
        description="The validated artifacts (null for extractions saved before they were kept)"
    )
    truncated: bool = Field(
        description="True when long artifact lists were cut to fit the saved record"
    )
    node_ids: list[str] = Field(description="Nodes the extraction created")
    annotated_node_ids: list[str] = Field(
        description="Existing nodes that took a claim: the source's note when a claim states "
        "the whole source, so the same text is not stored twice"
    )
    edge_ids: list[str] = Field(description="Edges the extraction created")
    superseded: list[SupersededClaim] = Field(
        description="Earlier claims the extraction superseded"
    )


# In a claim's metadata: the ids of the earlier claims it superseded when it was extracted.
SUPERSEDES_KEY = "supersedes"


# In a source's note: the ids of claims extracted from it that a later message superseded. The
# note still holds their old values verbatim, so the context marks it as partly outdated.
OUTDATED_CLAIMS_KEY = "outdated_claims"


def holds_outdated_claims(metadata: Mapping[str, Any]) -> bool:
    """True for a note some of whose extracted claims were superseded since."""
    extracted = metadata.get(EXTRACTION_METADATA_KEY)
    return isinstance(extracted, dict) and bool(extracted.get(OUTDATED_CLAIMS_KEY))


def states_current_value(metadata: Mapping[str, Any]) -> bool:
    """True for a claim that superseded an earlier value of its fact: the newest known value."""
    extracted = metadata.get(EXTRACTION_METADATA_KEY)
    return isinstance(extracted, dict) and bool(extracted.get(SUPERSEDES_KEY))

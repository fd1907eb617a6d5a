"""What LLM extractors are asked for: the JSON shape of an extraction, the instructions, and the parser.

Both LLM adapters share this module so they ask the same question and judge answers the same way.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from prme.errors import ExtractionUnavailableError
from prme.extraction.grounding import validate_grounded
from prme.model.enums import WorkFailure
from prme.model.extraction import Extraction


def _artifact(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {"evidence_quote": {"type": "string", "minLength": 1}, **properties},
        "required": ["evidence_quote", *required],
    }


_TEXT: dict[str, Any] = {"type": "string", "minLength": 1}
_OPTIONAL_TEXT: dict[str, Any] = {"type": ["string", "null"]}

EXTRACTION_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "entities": {
            "type": "array",
            "items": _artifact({"name": _TEXT, "kind": _TEXT}, ["name"]),
        },
        "claims": {
            "type": "array",
            "items": _artifact(
                {
                    "statement": _TEXT,
                    "subject": _TEXT,
                    "predicate": _TEXT,
                    "object": _OPTIONAL_TEXT,
                    "occurred_on": {"type": ["string", "null"], "format": "date"},
                    "polarity": {"type": "string", "enum": ["affirmed", "negated"]},
                    "replaces_object": _OPTIONAL_TEXT,
                },
                ["statement", "subject", "predicate"],
            ),
        },
        "quantities": {
            "type": "array",
            "items": _artifact(
                {
                    "subject": _TEXT,
                    "predicate": _TEXT,
                    "value": {"type": "string", "pattern": r"^-?\d+(\.\d+)?$"},
                    "unit": _OPTIONAL_TEXT,
                },
                ["subject", "predicate", "value"],
            ),
        },
        "relationships": {
            "type": "array",
            "items": _artifact(
                {"source": _TEXT, "relation": _TEXT, "target": _TEXT},
                ["source", "relation", "target"],
            ),
        },
    },
    "required": ["entities", "claims", "quantities", "relationships"],
}

SYSTEM_PROMPT = f"""You turn one message into structured memory. Reply with a single JSON object and nothing else.

Rules:
- Every item has "evidence_quote": an exact, character-for-character span copied from the message that supports it. Do not fix spelling, change case, or join separate parts.
- Use only words that appear in the message. Names, subjects, objects, sources and targets are copied from the message as written; a speaker who says "I" or "we" stays "I" or "we".
- "predicate" and "relation" are short lowercase labels joined by underscores, built only from words of the message (for example "paid", "works_at", "adopted_cats").
- A quantity's "value" is the number written in its quote, as plain digits without separators or currency signs (for "$1,200" write "1200"); "unit" is the unit or currency sign as written ("$", "km", "cats").
- "occurred_on" is an ISO date (YYYY-MM-DD) only when the message dates the claim; resolve words such as "yesterday" against the reference time given with the message. Otherwise null.
- "polarity" is "negated" when the message says the claim no longer holds or does not hold ("I don't live in Lisbon anymore"), otherwise "affirmed".
- "replaces_object" is set when the message says the object replaces an earlier value ("I moved from Lisbon to Berlin": object "Berlin", replaces_object "Lisbon"; "Actually it's Y, not X": replaces_object "X"), copied from the message; otherwise null.
- Skip questions, hypotheticals and anything you would have to guess. Empty lists are a valid answer.

The JSON object follows this JSON Schema:
{json.dumps(EXTRACTION_JSON_SCHEMA, separators=(",", ":"))}"""

_FENCE = re.compile(r"^\s*```[\w-]*\s*\n?(?P<body>.*?)\n?\s*```\s*$", re.DOTALL)


def user_message(text: str, reference_time: datetime) -> str:
    """The user turn: the reference time for relative dates, then the message itself."""
    return (
        f"Reference time (the message was written then): {reference_time.isoformat()}\n"
        f"Message:\n{text}"
    )


def parse_extraction(raw: str, *, extractor: str, source_text: str) -> Extraction:
    """The grounded extraction in a model's answer; InvalidOutput when it is not one.

    The model's text never reaches the error message: it may echo the source or invent text.
    """
    fenced = _FENCE.match(raw)
    body = fenced["body"] if fenced else raw
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise ExtractionUnavailableError(
            "Extraction output was not JSON", reason_code=WorkFailure.EXTRACTOR_INVALID_OUTPUT
        ) from exc
    if not isinstance(payload, dict):
        raise ExtractionUnavailableError(
            "Extraction output was not a JSON object",
            reason_code=WorkFailure.EXTRACTOR_INVALID_OUTPUT,
        )
    # The adapter names itself; whatever the model claims to be is not trusted.
    payload["extractor"] = extractor
    try:
        extraction = Extraction.model_validate(payload)
    except ValidationError as exc:
        raise ExtractionUnavailableError(
            "Extraction output did not match the schema",
            reason_code=WorkFailure.EXTRACTOR_INVALID_OUTPUT,
        ) from exc
    return validate_grounded(extraction, source_text)

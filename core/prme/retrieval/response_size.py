"""The size of a retrieval's records as a response carries them, and the cut that keeps ranked
records until the next one would pass a surface's byte budget.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from prme.model.input_policy import LAMBDA_PAYLOAD_BYTES
from prme.model.records import MemoryNode
from prme.retrieval.caps import Selection
from prme.retrieval.packing import ContextFormat

# A record's bytes in one surface's response, given the context's format and whether the
# packed context holds its line.
RecordBytes = Callable[[MemoryNode, ContextFormat, bool], int]

# Below Lambda's limit with room for what the per-record measure does not see: on AWS a
# retrieval response can never be refused by the runtime.
DEFAULT_MAX_RESPONSE_BYTES = LAMBDA_PAYLOAD_BYTES - 1024 * 1024


def carried_size(text: str, levels: int) -> int:
    """Bytes `text` takes after `levels` nested JSON string encodings, the outermost with ASCII
    escaping and the inner ones keeping non-ASCII characters as they are (as FastAPI, pydantic
    and the MCP SDK write bodies). Exact for those encoders, without the enclosing quotes.

    On AWS Lambda a response body is itself a string inside the JSON the runtime sends, with
    ASCII escaping: a quote in memory content becomes four bytes, a CJK character six, an
    emoji twelve, a control character up to seven. No character takes fewer bytes in a plain
    HTTP body, so the Lambda measure bounds `prme serve` too."""
    if levels < 1:
        raise ValueError("levels must be at least 1")
    encoded = text
    for _ in range(levels - 1):
        encoded = json.dumps(encoded, ensure_ascii=False)[1:-1]
    return len(json.dumps(encoded)) - 2


def json_fragment(value: Any) -> str:
    """A JSON value as it appears inside a body (compact, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def record_text_bytes(
    node: MemoryNode,
    context_format: ContextFormat,
    *,
    level: int,
    with_context: bool = True,
    binding_copies: int = 0,
    rendered_bindings: bool = False,
) -> int:
    """The bytes a record's own text adds to one rendering of a retrieval response whose JSON
    is carried `level` encodings deep (2 for an HTTP body inside a Lambda response): its result
    (content, speaker, session, evidence ids, metadata), its context line when the context is
    sent, and its value bindings (part of its metadata) listed `binding_copies` times and, with
    `rendered_bindings`, quoted once more in a text listing. Field names and numbers are not
    counted here: each surface adds a fixed allowance per record."""
    # The metadata object is JSON already at the body's level: its text is carried one less.
    metadata_text = json_fragment(node.metadata)
    metadata = carried_size(metadata_text, level - 1)
    speaker = node.speaker or ""
    session = node.session_id or ""
    total = (
        carried_size(node.content, level)
        + carried_size(speaker, level)
        + carried_size(session, level)
        + sum(carried_size(ref, level) for ref in node.evidence_refs)
        + metadata * (1 + binding_copies)
    )
    if rendered_bindings:
        total += carried_size(metadata_text, level)
    if with_context:
        # An auditable line is a JSON object inside the context string: one encoding deeper.
        line_level = level + 1 if context_format == "auditable" else level
        total += (
            carried_size(node.content, line_level)
            + carried_size(speaker, line_level)
            + carried_size(session, line_level)
        )
    return total


@dataclass(frozen=True)
class ResponseBudget:
    """A surface's byte limit and its measure of a record.

    `fixed_bytes` covers everything that does not grow with the records (metrics, the
    bundle's scalar fields, the status line and headers of the envelope) and
    `per_candidate_bytes` the lines each candidate adds whether or not it is returned (its
    entry in `excluded`)."""

    max_bytes: int
    record_bytes: RecordBytes
    fixed_bytes: int
    per_candidate_bytes: int

    def available(self, candidates: int) -> int:
        return self.max_bytes - self.fixed_bytes - self.per_candidate_bytes * candidates


@dataclass(frozen=True)
class SizeCut:
    """The records that fit, and how many ranked records were left out for size."""

    selection: Selection
    omitted: int
    available_bytes: int


def fit_response(
    selection: Selection,
    budget: ResponseBudget,
    *,
    candidates: int,
    context_format: ContextFormat,
    in_context: Collection[str],
) -> SizeCut:
    """Keep selected records in rank order while their bytes fit; the first that does not fit
    ends the response (a smaller one after it is not promoted past it: the cut is a prefix
    of the ranking, so what is returned reads as "the best n")."""
    available = budget.available(candidates)
    used = 0
    kept: set[str] = set()
    for node in selection.selected:
        cost = budget.record_bytes(node, context_format, node.id in in_context)
        if used + cost > available:
            break
        used += cost
        kept.add(node.id)
    omitted = len(selection.selected) - len(kept)
    if not omitted:
        return SizeCut(selection, 0, available)
    return SizeCut(selection.keep_only(kept, "response_size"), omitted, available)

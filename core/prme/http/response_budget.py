"""The byte measure of a /v1/retrieve response, so the engine keeps only the records it can carry.

The body is JSON (FastAPI's encoder, non-ASCII kept); on AWS it travels as a string inside the
Lambda runtime's JSON with ASCII escaping, so a record's text is measured two encodings deep.
"""

from __future__ import annotations

from prme.model.records import MemoryNode
from prme.retrieval.packing import ContextFormat
from prme.retrieval.response_size import ResponseBudget, record_text_bytes

# A result's field names, ids, enums, scores and times, its context entry and reference, its
# line's head and its value bindings' field names; every quote in them costs two bytes.
_PER_RECORD_BYTES = 2_048
# Metrics, the bundle's scalar fields and the Lambda envelope's status and headers.
_FIXED_BYTES = 16 * 1024
# A candidate's entry in bundle.excluded (its id and reason), returned or not.
_PER_CANDIDATE_BYTES = 160


def _record_bytes(node: MemoryNode, context_format: ContextFormat, in_context: bool) -> int:
    # Visible value bindings (only of records in the context) are listed twice: in the bundle
    # and at the top level.
    return _PER_RECORD_BYTES + record_text_bytes(
        node,
        context_format,
        level=2,
        with_context=in_context,
        binding_copies=2 if in_context else 0,
    )


def http_response_budget(max_bytes: int) -> ResponseBudget:
    return ResponseBudget(
        max_bytes=max_bytes,
        record_bytes=_record_bytes,
        fixed_bytes=_FIXED_BYTES,
        per_candidate_bytes=_PER_CANDIDATE_BYTES,
    )

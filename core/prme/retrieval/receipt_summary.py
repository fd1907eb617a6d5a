"""A saved receipt's listing summary, read from its journaled payload without expanding it."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from prme.errors import CorruptRecordError
from prme.model.receipt_listing import RetrievalSummary, query_preview
from prme.model.records import JournalRecord
from prme.retrieval.receipts import COMPACT_RECEIPT_SCHEMA_VERSIONS, RetrievalReceipt


def _counts(payload: dict[str, Any]) -> tuple[int, int, int]:
    """(returned, candidates, tokens used) of a payload, compact or in the full older form."""
    if payload.get("schema_version") in COMPACT_RECEIPT_SCHEMA_VERSIONS:
        candidates = len(payload["rows"]) + len(payload["context_rows"])
        return len(payload["returned"]), candidates, int(payload["context"]["tokens_used"])
    receipt = RetrievalReceipt.model_validate(payload)
    return len(receipt.returned_node_ids), len(receipt.candidates), receipt.context.tokens_used


def summarize_receipt(record: JournalRecord) -> RetrievalSummary:
    """The summary of a receipt record; CorruptRecordError when its payload is not a receipt.

    Counting the compact form's rows costs no fusion replay, which matters where a summary is
    made on every retrieval (the DynamoDB ledger saves one beside each receipt)."""
    payload = record.payload
    try:
        returned, candidates, tokens = _counts(payload)
        config = payload["config"]
        query, truncated = query_preview(payload["query"])
        return RetrievalSummary(
            request_id=record.id,
            created_at=record.created_at,
            expires_at=record.expires_at,
            query=query,
            query_truncated=truncated,
            returned_count=returned,
            candidate_count=candidates,
            tokens_used=tokens,
            context_format=config["context_format"],
            retrieval_profile=config.get("retrieval_profile"),
        )
    except (AttributeError, KeyError, TypeError, ValueError, ValidationError):
        raise CorruptRecordError("journal", record.id) from None

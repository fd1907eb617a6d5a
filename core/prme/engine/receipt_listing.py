"""Listing an owner's saved retrieval receipts newest first, and finding the retrievals that
ranked one memory (returned or left out) in a bounded scan of them."""

from __future__ import annotations

import base64
import uuid
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from prme.engine.deps import EngineDeps
from prme.engine.journal import check_intact
from prme.engine.reads import get_node
from prme.errors import InvalidRequestError, JournalIntegrityError
from prme.model.receipt_listing import (
    DEFAULT_RETRIEVAL_PAGE,
    MAX_NODE_SCAN,
    MAX_RETRIEVAL_PAGE,
    NodeRetrieval,
    NodeRetrievalPage,
    RetrievalPage,
    RetrievalSummary,
    is_receipt_position,
    utc_bound,
)
from prme.model.records import JournalRecord, OwnerKey
from prme.retrieval.receipts import COMPACT_RECEIPT_SCHEMA_VERSIONS, RetrievalReceipt


def _checked_page(name: str, value: int, most: int, cursor: str | None) -> None:
    if not 1 <= value <= most:
        raise InvalidRequestError(f"{name} must be 1 to {most}", field=(name,))
    if cursor is not None and not is_receipt_position(cursor):
        raise InvalidRequestError("cursor is not a cursor this listing returned", field=("cursor",))


def _expired(deps: EngineDeps, summary: RetrievalSummary, now: datetime) -> bool:
    """As `reads.receipt_expired`: DynamoDB's TTL deletes an expired entry only eventually."""
    expires_at = summary.expires_at or summary.created_at + timedelta(
        days=deps.config.receipt_retention_days
    )
    return now >= expires_at


def list_retrievals(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    cursor: str | None = None,
    limit: int = DEFAULT_RETRIEVAL_PAGE,
    since: datetime | None = None,
    until: datetime | None = None,
) -> RetrievalPage:
    """One page of the owner's receipt summaries, newest first: at most `limit` receipts read."""
    _checked_page("limit", limit, MAX_RETRIEVAL_PAGE, cursor)
    for name, bound in (("since", since), ("until", until)):
        if bound is not None and bound.utcoffset() is None:
            raise InvalidRequestError(f"{name} needs a UTC offset", field=(name,))
    page = deps.ledger.list_receipt_summaries(
        owner,
        before=cursor,
        since=None if since is None else utc_bound(since),
        until=None if until is None else utc_bound(until),
        limit=limit,
    )
    now = deps.clock.now()
    live = [s for s in page.summaries if not _expired(deps, s, now)]
    return RetrievalPage(retrievals=live, next_cursor=page.next_position)


def _may_rank(payload: dict[str, Any], node_id: str) -> bool:
    """False only when the compact receipt's id list surely lacks the node: most receipts of
    an owner never ranked a given memory, and skipping them saves replaying their fusion."""
    if payload.get("schema_version") not in COMPACT_RECEIPT_SCHEMA_VERSIONS:
        return True
    ids = payload.get("ids")
    if payload.get("uuid_ids") is True and isinstance(ids, str):
        try:
            packed = base64.urlsafe_b64encode(uuid.UUID(node_id).bytes).decode().rstrip("=")
        except ValueError:
            return False
        return packed in ids
    if isinstance(ids, list):
        return node_id in ids
    return True


def _node_outcome(
    record: JournalRecord, summary: RetrievalSummary, node_id: str
) -> NodeRetrieval | None:
    """What became of the node in one receipt; None when the receipt did not rank it."""
    if not _may_rank(record.payload, node_id):
        return None
    receipt = RetrievalReceipt.from_payload(record.payload)
    fused = [c.node_id for c in receipt.candidates if c.context_of is None]
    found = next((c for c in receipt.candidates if c.node_id == node_id), None)
    if found is None:
        return None
    refs = {str(e.get("node_id")): e.get("ref") for e in receipt.context.entries}
    ref = refs.get(node_id)
    return NodeRetrieval(
        request_id=summary.request_id,
        created_at=summary.created_at,
        query=summary.query,
        query_truncated=summary.query_truncated,
        outcome=found.outcome,
        rank=fused.index(node_id) + 1 if found.context_of is None else None,
        context_ref=str(ref) if ref is not None else None,
        context_of=found.context_of,
    )


def list_node_retrievals(
    deps: EngineDeps,
    owner: OwnerKey,
    node_id: str,
    *,
    cursor: str | None = None,
    scan_limit: int = MAX_NODE_SCAN,
) -> NodeRetrievalPage:
    """The retrievals among the owner's next `scan_limit` receipts (newest first, from
    `cursor`) that ranked the node; NotFoundError for an unknown or foreign node."""
    _checked_page("scan_limit", scan_limit, MAX_NODE_SCAN, cursor)
    node = get_node(deps, owner, node_id)
    page = deps.ledger.list_receipt_summaries(
        owner, before=cursor, since=None, until=None, limit=scan_limit
    )
    now = deps.clock.now()
    live = [s for s in page.summaries if not _expired(deps, s, now)]
    records = deps.ledger.get_receipt_records(owner, [s.request_id for s in live])
    found: list[NodeRetrieval] = []
    for summary in live:
        record = records.get(summary.request_id)
        if record is None:
            continue
        try:
            outcome = _node_outcome(
                check_intact(record, owner, summary.request_id), summary, node.id
            )
        except (JournalIntegrityError, ValidationError, ValueError, KeyError, TypeError):
            # A receipt that fails its checksum or no longer loads is skipped, as listings
            # skip any unreadable record; reading it by id reports why.
            continue
        if outcome is not None:
            found.append(outcome)
    return NodeRetrievalPage(
        node_id=node.id, retrievals=found, scanned=len(live), next_cursor=page.next_position
    )

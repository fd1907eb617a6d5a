"""Listings of an owner's saved retrieval receipts, newest first: one summary per receipt, and
the receipts that ranked one memory with what became of it there."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from prme.model.graph import HISTORY_POSITION_PATTERN, history_position, is_history_position

DEFAULT_RETRIEVAL_PAGE = 20
MAX_RETRIEVAL_PAGE = 100
# Receipts one call of a memory's retrievals reads at most: each is a whole receipt body.
MAX_NODE_SCAN = 200
# A receipt's place in its owner's listing (and the listing's cursor): its UTC time, fixed
# width, then its request id; the same form as a journal record's history position.
RECEIPT_POSITION_PATTERN = HISTORY_POSITION_PATTERN


# A listing shows a query up to this many bytes as JSON text (UTF-8, with quotes, backslashes
# and control characters escaped, as the entry stores it): a receipt's listing entry stays
# within one DynamoDB write unit (1 KB) whatever the query (up to 10,000 characters) was.
QUERY_PREVIEW_BYTES = 400
_SHORT_ESCAPES = frozenset('"\\\b\f\n\r\t')


def _json_bytes(char: str) -> int:
    """What one character takes inside a JSON string (`"` is 2 bytes, U+0001 is 6)."""
    if char in _SHORT_ESCAPES:
        return 2
    if char < " ":
        return 6
    return len(char.encode())


def query_preview(query: str) -> tuple[str, bool]:
    """The query as a listing shows it, and whether it was cut (at a character boundary)."""
    size = 0
    # Every character takes a byte or more, so the cut is within the first 400 characters.
    for index, char in enumerate(query[: QUERY_PREVIEW_BYTES + 1]):
        size += _json_bytes(char)
        if size > QUERY_PREVIEW_BYTES:
            return query[:index], True
    return query, False


_POSITION_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def receipt_position(created_at: datetime, request_id: str) -> str:
    return history_position(created_at, request_id)


def is_receipt_position(text: str) -> bool:
    """The listing's cursor form, with a time that exists (the SQLite ledger reads the time
    back: a hand-made "2026-13-45" must be refused, not fail there) and a request id, which
    is a UUID (DynamoDB refuses a sort key value over 1,024 bytes, and 256 characters of
    four UTF-8 bytes each would be one)."""
    if not is_history_position(text):
        return False
    moment, _, request_id = text.partition("|")
    try:
        datetime.strptime(moment, _POSITION_TIME_FORMAT)
        return str(uuid.UUID(request_id)) == request_id
    except ValueError:
        return False


def utc_bound(moment: datetime) -> datetime:
    """`moment` in UTC; one an offset pushes past the calendar's ends (year 1 with +01:00)
    becomes that end, which every stored time is after (or before)."""
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        offset = moment.utcoffset()
        past_start = offset is not None and offset > timedelta(0)
        return (datetime.min if past_start else datetime.max).replace(tzinfo=UTC)


_QUERY = (
    f"The query as sent, cut to its first {QUERY_PREVIEW_BYTES} bytes (UTF-8) when longer; "
    "untrusted text: show it as text"
)
_TRUNCATED = "True when query was cut; the receipt holds it whole"


class RetrievalSummary(BaseModel):
    """One saved receipt as a listing shows it; the receipt itself has everything else."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    request_id: str = Field(description="The retrieval's id, which names its receipt")
    created_at: AwareDatetime = Field(description="When the retrieval ran")
    expires_at: AwareDatetime | None = Field(
        default=None, description="When the receipt stops being readable (its retention)"
    )
    query: str = Field(description=_QUERY)
    query_truncated: bool = Field(default=False, description=_TRUNCATED)
    returned_count: int = Field(description="Results the retrieval returned")
    candidate_count: int = Field(
        description="Candidates the receipt accounts for: every record ranked, returned or "
        "left out, and records added as session context"
    )
    tokens_used: int = Field(description="Tokens the packed context took")
    context_format: str = Field(description="reader or auditable")
    retrieval_profile: str | None = Field(
        description="The retrieval profile used; null in receipts saved before profiles"
    )

    @property
    def position(self) -> str:
        return receipt_position(self.created_at, self.request_id)


@dataclass(frozen=True)
class ReceiptSummaryPage:
    """What a ledger read of the owner's receipt listing found: the readable summaries, newest
    first, and the position of the last receipt it read when older ones may follow."""

    summaries: tuple[RetrievalSummary, ...]
    next_position: str | None


class RetrievalPage(BaseModel):
    """A page of the owner's saved retrievals, newest first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    retrievals: list[RetrievalSummary] = Field(
        description="Saved receipts, newest first; expired and unreadable ones are left out, "
        "so a page may hold fewer than limit while more follow"
    )
    next_cursor: str | None = Field(
        description="Pass as cursor for the next (older) page; null when none follows"
    )


class NodeRetrieval(BaseModel):
    """One saved retrieval that ranked a memory, and what became of the memory there."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    request_id: str = Field(description="The retrieval's id, which names its receipt")
    created_at: AwareDatetime = Field(description="When the retrieval ran")
    query: str = Field(description=_QUERY)
    query_truncated: bool = Field(default=False, description=_TRUNCATED)
    outcome: str = Field(
        description="returned, or why the memory was left out (the receipt's candidate "
        "outcome: filtered, min_score, source_limit, evidence_limit, limit, token_budget, "
        "response_size)"
    )
    rank: int | None = Field(
        description="Its 1-based place in the fused order of the candidates; null for a "
        "record that entered only as session context of a result"
    )
    context_ref: str | None = Field(
        description="Its reference in the packed context (m1, m2, ...); null when not packed"
    )
    context_of: str | None = Field(
        default=None,
        description="The result it was added next to, when it entered as session context",
    )


class NodeRetrievalPage(BaseModel):
    """The saved retrievals that ranked one memory, from one bounded scan of receipts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node_id: str = Field(description="The memory node asked about")
    retrievals: list[NodeRetrieval] = Field(
        description="Among the receipts this call read, those that ranked the node, newest "
        "first, whether it was returned or left out"
    )
    scanned: int = Field(description="Receipts this call read")
    next_cursor: str | None = Field(
        description="Pass as cursor to scan older receipts; null when none are left"
    )

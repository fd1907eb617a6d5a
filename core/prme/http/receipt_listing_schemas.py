"""Request queries of the receipt listings: the owner's saved retrievals, and those of a node."""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from prme.http.schemas import USER_ID
from prme.model.receipt_listing import (
    DEFAULT_RETRIEVAL_PAGE,
    MAX_NODE_SCAN,
    MAX_RETRIEVAL_PAGE,
    RECEIPT_POSITION_PATTERN,
)

_CURSOR = Field(
    default=None,
    max_length=300,
    pattern=RECEIPT_POSITION_PATTERN,
    description="Where to go on from: the next_cursor of the page before (an opaque text); "
    "omit for the newest receipts",
)


class RetrievalListQuery(BaseModel):
    """GET /v1/retrievals: which page of the owner's saved receipts to read."""

    model_config = ConfigDict(extra="forbid")

    cursor: str | None = _CURSOR
    limit: int = Field(
        default=DEFAULT_RETRIEVAL_PAGE,
        ge=1,
        le=MAX_RETRIEVAL_PAGE,
        description="Most receipts read for the page",
    )
    since: AwareDatetime | None = Field(
        default=None, description="Only retrievals run at or after this time (with an offset)"
    )
    until: AwareDatetime | None = Field(
        default=None, description="Only retrievals run before this time (with an offset)"
    )
    user_id: str | None = USER_ID


class NodeRetrievalsQuery(BaseModel):
    """GET /v1/nodes/{node_id}/retrievals: which stretch of the owner's receipts to scan."""

    model_config = ConfigDict(extra="forbid")

    cursor: str | None = _CURSOR
    scan_limit: int = Field(
        default=MAX_NODE_SCAN,
        ge=1,
        le=MAX_NODE_SCAN,
        description="Most receipts this call reads, newest first",
    )
    user_id: str | None = USER_ID

"""Per-tenant limits: the values a tenant is held to, the counters behind them, and the report a
tenant reads (`GET /v1/limits`). No I/O."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prme.model.inputs import FastIngestInput, SourceInput
from prme.model.portability import ImportBatch

# One DynamoDB item takes at most 1,000 writes a second, and the request counter of a tenant's
# window is one item: a higher rate would need the counter split over several items.
MAX_REQUESTS_PER_SECOND = 1000
# Large enough for any deployment, small enough that sums never leave a 64-bit integer.
MAX_LIMIT_VALUE = 10**15


class LimitName(StrEnum):
    """Each limit a tenant is held to; the `limit` an over-limit error names."""

    REQUESTS_PER_SECOND = "requests_per_second"
    STORED_RECORDS = "stored_records"
    STORED_BYTES = "stored_bytes"
    RETRIEVALS_PER_DAY = "retrievals_per_day"


class Limited(StrEnum):
    """How an operation counts against its tenant's limits (the operations table says, per
    operation). Every counted operation takes one request from the rate."""

    # The request rate only.
    REQUEST = "request"
    # The rate, then the stored records and bytes its input would add.
    STORE = "store"
    # The rate, then one of the day's retrievals.
    RETRIEVAL = "retrieval"
    # The rate; on success, what it deleted leaves the stored counts.
    RELEASE = "release"
    # Not counted at all (reading one's own limits must work while throttled).
    EXEMPT = "exempt"


# The longest rate window a burst over a rate may make.
MAX_WINDOW_SECONDS = 86_400


class TenantLimits(BaseModel):
    """The limits of one tenant; null means unlimited. The settings hold the defaults
    (`PRME_LIMITS__...`), a provider's per-tenant record replaces them whole."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests_per_second: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REQUESTS_PER_SECOND,
        description="Requests a second on average, over a window of burst / rate seconds; "
        "null is unlimited",
    )
    burst: int | None = Field(
        default=None,
        ge=1,
        le=MAX_LIMIT_VALUE,
        description="Requests one window admits (at least the rate); null means twice the rate",
    )
    stored_records: int | None = Field(
        default=None,
        ge=0,
        le=MAX_LIMIT_VALUE,
        description="Source events the tenant may keep stored; null is unlimited",
    )
    stored_bytes: int | None = Field(
        default=None,
        ge=0,
        le=MAX_LIMIT_VALUE,
        description="UTF-8 bytes of source content the tenant may keep stored; null is unlimited",
    )
    retrievals_per_day: int | None = Field(
        default=None,
        ge=0,
        le=MAX_LIMIT_VALUE,
        description="Retrievals a UTC day; null is unlimited",
    )

    @model_validator(mode="after")
    def _window_within_a_day(self) -> TenantLimits:
        # A window is burst / rate seconds long; a huge burst over a small rate would put its
        # end past the calendar's last year, so no window may pass a day.
        seconds = self.window_seconds
        if seconds is not None and seconds > MAX_WINDOW_SECONDS:
            raise ValueError(
                f"burst / requests_per_second is a window of {seconds:.0f} seconds; at most "
                f"{MAX_WINDOW_SECONDS} (one day) is allowed"
            )
        return self

    @property
    def window_requests(self) -> int | None:
        """The requests one rate window admits."""
        if self.requests_per_second is None:
            return None
        return max(self.burst or 2 * self.requests_per_second, self.requests_per_second)

    @property
    def window_seconds(self) -> float | None:
        """A rate window's length: its requests at the average rate."""
        if self.requests_per_second is None or self.window_requests is None:
            return None
        return self.window_requests / self.requests_per_second

    def value_of(self, name: LimitName) -> int | None:
        value: int | None = getattr(self, name.value)
        return value


class StoredAmount(BaseModel):
    """What a write adds to (or a deletion takes from) a tenant's stored counts."""

    model_config = ConfigDict(frozen=True)

    records: int = 0
    bytes: int = 0

    def scaled(self, kept: int) -> StoredAmount:
        """The share of `kept` of this amount's records (bytes in proportion)."""
        if self.records <= 0:
            return StoredAmount()
        kept = max(0, min(kept, self.records))
        return StoredAmount(records=kept, bytes=self.bytes * kept // self.records)


def _content_bytes(text: Any) -> int:
    return len(text.encode("utf-8")) if isinstance(text, str) else 0


def stored_amount(value: object) -> StoredAmount | None:
    """What an operation's input would add to the stored counts: its source events and their
    content bytes; None for an input that stores no source."""
    if isinstance(value, SourceInput):
        return StoredAmount(records=1, bytes=_content_bytes(value.content))
    # A batch of sources (a fast ingest, or any input whose items are sources).
    items = value.items if isinstance(value, FastIngestInput) else getattr(value, "items", None)
    if isinstance(items, list) and items and all(isinstance(i, SourceInput) for i in items):
        return StoredAmount(records=len(items), bytes=sum(_content_bytes(i.content) for i in items))
    if isinstance(value, ImportBatch):
        events = [r for r in value.records if r.get("kind") == "event"]
        return StoredAmount(
            records=len(events), bytes=sum(_content_bytes(r.get("content")) for r in events)
        )
    return None


class CounterKey(BaseModel):
    """One usage counter of a tenant: `name` says what it counts and, for a window, which."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    name: str


class LimitUsage(BaseModel):
    """One limit of the tenant, what it has used of it and when that use starts over."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    limit: LimitName = Field(description="Which limit")
    limit_value: int | None = Field(description="The limit; null is unlimited")
    used: int | None = Field(
        description="What the tenant has used of it now (null where nothing is counted: an "
        "unlimited rate or retrieval count)"
    )
    window_seconds: float | None = Field(
        default=None,
        description="For the request rate: the window its burst is counted over (burst / rate)",
    )
    resets_at: datetime | None = Field(
        description="When the use starts over (the next rate window, the next UTC day); null "
        "for stored records and bytes, which fall only when memories are deleted"
    )


class LimitsReport(BaseModel):
    """The tenant's limits and its use of each (`GET /v1/limits`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str = Field(description="The tenant the limits apply to (the key's tenant)")
    limits: list[LimitUsage] = Field(description="Each limit, its value, the use and its reset")
    burst: int | None = Field(description="Requests one rate window admits; null is unlimited")
    overridden: bool = Field(
        description="Whether the service provider set this tenant's limits (otherwise the "
        "deployment's defaults apply)"
    )

"""Usage entries: what one metered operation cost (records, tokens, bytes, model calls), and
their sums per period and kind, the figures an operator bills from."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from prme.model.records import OwnerKey

UsagePeriod = Literal["day", "month"]

# Metered work that no single operation owns: each finished work item of these families is an
# entry of that kind (the operations that write metered entries say so in the operations table).
METERED_WORK_KINDS = ("materialize", "extract")

_ENTRY_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_MAX_ENTRY_ID = 512


def owner_usage_reference(tenant_id: str, owner_id: str) -> str:
    """How the usage log names an owner: a digest, so billing records never hold the user id
    and an owner's erasure leaves no id of theirs behind (a filter by user id digests it too)."""
    digest = hashlib.sha256(f"prme-usage\x00{tenant_id}\x00{owner_id}".encode())
    return digest.hexdigest()[:32]


def entry_time_text(at: datetime) -> str:
    """An entry's time as stored: UTC, fixed width, so text order is time order."""
    return at.astimezone(UTC).strftime(_ENTRY_TIME_FORMAT)


def entry_time_of(text: str) -> datetime:
    """The moment an entry's stored time text names."""
    return datetime.strptime(text, _ENTRY_TIME_FORMAT).replace(tzinfo=UTC)


def period_of(at: datetime, period: UsagePeriod) -> str:
    """The period a moment falls in, in UTC: `2026-12-02` for a day, `2026-12` for a month."""
    text = entry_time_text(at)
    return text[:10] if period == "day" else text[:7]


class UsageUnits(BaseModel):
    """What one operation used. Each kind fills the units it has (docs/usage.md says which)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    records: int = Field(
        default=0,
        ge=0,
        description="Records written (sources kept by a write, memories built by processing), "
        "returned (results of a retrieval) or deleted (a deleted source and its memories)",
    )
    tokens: int = Field(default=0, ge=0, description="Tokens of the contexts returned")
    bytes_in: int = Field(default=0, ge=0, description="UTF-8 bytes of the content stored")
    bytes_out: int = Field(default=0, ge=0, description="UTF-8 bytes of the contexts returned")
    embeddings: int = Field(
        default=0,
        ge=0,
        description="Vectors made by the embedding model: a retrieval's query, each memory indexed",
    )
    extractor_calls: int = Field(default=0, ge=0, description="Calls to the extraction model")

    def plus(self, other: UsageUnits) -> UsageUnits:
        return UsageUnits(
            records=self.records + other.records,
            tokens=self.tokens + other.tokens,
            bytes_in=self.bytes_in + other.bytes_in,
            bytes_out=self.bytes_out + other.bytes_out,
            embeddings=self.embeddings + other.embeddings,
            extractor_calls=self.extractor_calls + other.extractor_calls,
        )


class UsageEntry(BaseModel):
    """One metered operation. `entry_id` is deterministic (the kind and what the operation
    acted on: a write's event or key, a retrieval's request id, a work item's id), so a
    retried request or a redelivered message makes the same entry, which a log keeps once
    per owner (owners choose their Idempotency-Keys independently)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entry_id: str = Field(min_length=1, max_length=_MAX_ENTRY_ID)
    tenant_id: str
    owner_ref: str
    kind: str
    at: AwareDatetime
    expires_at: AwareDatetime
    units: UsageUnits

    @classmethod
    def of(
        cls,
        kind: str,
        owner: OwnerKey,
        subject: str,
        *,
        at: datetime,
        expires_at: datetime,
        units: UsageUnits,
    ) -> UsageEntry:
        entry_id = f"{kind}#{subject}"
        if len(entry_id) > _MAX_ENTRY_ID:
            # An in-process caller's Idempotency-Key may be any text: a long one is named by
            # its digest, as deterministic, so its retries still make the same entry.
            entry_id = f"{kind}#sha256:{hashlib.sha256(subject.encode()).hexdigest()}"
        return cls(
            entry_id=entry_id,
            tenant_id=owner.tenant_id,
            owner_ref=owner_usage_reference(owner.tenant_id, owner.owner_id),
            kind=kind,
            at=at,
            expires_at=expires_at,
            units=units,
        )


class UsageTotal(BaseModel):
    """The sum of one kind's entries in one period."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    period: str = Field(description="The UTC day (2026-12-02) or month (2026-12) summed")
    kind: str = Field(
        description="What was metered: an operation's name (store, ingest, ingest_fast, "
        "retrieve, delete_memory) or processing work (materialize, extract)"
    )
    operations: int = Field(description="Metered operations (or work items) of this kind")
    units: UsageUnits = Field(description="Their units summed")


def sum_entries(entries: Iterable[UsageEntry], period: UsagePeriod) -> list[UsageTotal]:
    """Entries summed per (period, kind), in that order."""
    sums: dict[tuple[str, str], tuple[int, UsageUnits]] = {}
    for entry in entries:
        key = (period_of(entry.at, period), entry.kind)
        count, units = sums.get(key, (0, UsageUnits()))
        sums[key] = (count + 1, units.plus(entry.units))
    return [
        UsageTotal(period=p, kind=k, operations=count, units=units)
        for (p, k), (count, units) in sorted(sums.items())
    ]


class UsageQuery(BaseModel):
    """Which usage to sum: one tenant's entries in [start, end), optionally one owner's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: AwareDatetime
    end: AwareDatetime
    period: UsagePeriod = "day"
    owner_ref: str | None = None


class UsageReport(BaseModel):
    """A tenant's usage in a time range, summed per period and kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str | None = Field(description="The user summed, or null for the whole tenant")
    start: datetime = Field(description="Start of the range summed (inclusive, UTC)")
    end: datetime = Field(description="End of the range summed (exclusive, UTC)")
    period: UsagePeriod = Field(description="How entries are grouped: per UTC day or month")
    totals: list[UsageTotal] = Field(
        description="One row per period and kind that has usage, in period then kind order"
    )

"""`DynamoDbUsageLog`: usage entries on the ledger's table, under partitions of their own.

An entry is one small item keyed `USAGE#<tenant>#<UTC day>#<shard>` / `<owner ref>#<entry id>`:
a day's writes of one tenant spread over `shards` partitions, an owner's entries are one key
range of each, and summing a period is one query per day and shard. A conditional put keeps
an entry once; DynamoDB TTL removes it after its retention.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from prme.backends.aws import resources
from prme.errors import StorageUnavailableError
from prme.model.usage import (
    UsageEntry,
    UsageQuery,
    UsageTotal,
    UsageUnits,
    entry_time_of,
    entry_time_text,
    sum_entries,
)

PK, SK = resources.PARTITION_KEY, resources.SORT_KEY
USAGE_PREFIX = "USAGE#"
DEFAULT_SHARDS = 2
# Short attribute names: an entry stays well under one write unit (1 KB).
_UNIT_ATTRIBUTES = {
    "records": "r",
    "tokens": "t",
    "bytes_in": "bi",
    "bytes_out": "bo",
    "embeddings": "e",
    "extractor_calls": "x",
}


def _part(text: str) -> str:
    """A key part that cannot contain the separator."""
    return text.replace("%", "%25").replace("#", "%23")


class DynamoDbUsageLog:
    """Implements `UsageLog` on one table (the ledger's), beside and apart from its records."""

    def __init__(self, client: Any, table_name: str, *, shards: int = DEFAULT_SHARDS) -> None:
        if shards < 1:
            raise ValueError("shards must be at least 1")
        self._client = client
        self._table = table_name
        self._shards = shards

    def _partition(self, tenant_id: str, day: str, shard: int) -> str:
        return f"{USAGE_PREFIX}{_part(tenant_id)}#{day}#{shard}"

    def item_of(self, entry: UsageEntry) -> dict[str, dict[str, str]]:
        """The stored item of an entry (public so the cost benchmark can size it)."""
        at = entry_time_text(entry.at)
        shard = zlib.crc32(entry.entry_id.encode()) % self._shards
        item = {
            PK: {"S": self._partition(entry.tenant_id, at[:10], shard)},
            SK: {"S": f"{entry.owner_ref}#{entry.entry_id}"},
            "k": {"S": entry.kind},
            "at": {"S": at},
            resources.TTL_ATTRIBUTE: {"N": str(int(entry.expires_at.timestamp()))},
        }
        for unit, name in _UNIT_ATTRIBUTES.items():
            value = getattr(entry.units, unit)
            if value:
                item[name] = {"N": str(value)}
        return item

    def record(self, entries: Sequence[UsageEntry]) -> None:
        for entry in entries:
            try:
                self._client.put_item(
                    TableName=self._table,
                    Item=self.item_of(entry),
                    ConditionExpression=f"attribute_not_exists({PK})",
                )
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code == "ConditionalCheckFailedException":
                    continue  # recorded by an earlier attempt of the same operation
                raise StorageUnavailableError() from exc
            except BotoCoreError as exc:
                raise StorageUnavailableError() from exc

    def totals(self, tenant_id: str, query: UsageQuery) -> list[UsageTotal]:
        entries = (
            self._entry_of(tenant_id, item)
            for day in _days(query.start, query.end)
            for shard in range(self._shards)
            for item in self._query(self._partition(tenant_id, day, shard), query.owner_ref)
        )
        start, end = entry_time_text(query.start), entry_time_text(query.end)
        return sum_entries(
            (e for e in entries if start <= entry_time_text(e.at) < end), query.period
        )

    def _query(self, partition: str, owner_ref: str | None) -> Iterator[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "ExpressionAttributeNames": {"#pk": PK},
            "ExpressionAttributeValues": {":pk": {"S": partition}},
            "KeyConditionExpression": "#pk = :pk",
        }
        if owner_ref is not None:
            kwargs["KeyConditionExpression"] += " AND begins_with(#sk, :owner)"
            kwargs["ExpressionAttributeNames"]["#sk"] = SK
            kwargs["ExpressionAttributeValues"][":owner"] = {"S": f"{owner_ref}#"}
        while True:
            try:
                page = self._client.query(**kwargs)
            except (ClientError, BotoCoreError) as exc:
                raise StorageUnavailableError() from exc
            yield from page.get("Items", [])
            if not page.get("LastEvaluatedKey"):
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    @staticmethod
    def _entry_of(tenant_id: str, item: dict[str, Any]) -> UsageEntry:
        owner_ref, entry_id = item[SK]["S"].split("#", 1)
        return UsageEntry(
            entry_id=entry_id,
            tenant_id=tenant_id,
            owner_ref=owner_ref,
            kind=item["k"]["S"],
            at=entry_time_of(item["at"]["S"]),
            expires_at=datetime.fromtimestamp(int(item[resources.TTL_ATTRIBUTE]["N"]), UTC),
            units=UsageUnits(
                **{
                    unit: int(item[name]["N"])
                    for unit, name in _UNIT_ATTRIBUTES.items()
                    if name in item
                }
            ),
        )


def _days(start: datetime, end: datetime) -> list[str]:
    """The UTC days a range [start, end) touches."""
    first = start.astimezone(UTC).date()
    last = (end.astimezone(UTC) - timedelta(microseconds=1)).date()
    return [(first + timedelta(days=n)).isoformat() for n in range((last - first).days + 1)]

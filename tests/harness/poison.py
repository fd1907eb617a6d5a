"""Breaking stored records below the API (SQLite or DynamoDB), for the quarantine tests."""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prme.backends.aws import resources
from prme.backends.aws.dynamodb_ledger import RECEIPT_SHARDS
from prme.model.records import OwnerKey

# A body that parsed once, made unreadable: deeper than the JSON parser goes, cut short,
# or missing a required field.
BREAKAGES: dict[str, Callable[[str], str]] = {
    "deep_metadata": lambda body: _with_deep_metadata(body, 300),
    "invalid_json": lambda body: body[: len(body) // 2],
    "missing_field": lambda body: json.dumps(
        {name: value for name, value in json.loads(body).items() if name != "id"}
    ),
}

# (kind "event", "node", "work", "journal" or "idempotency", owner, record id (the key of an
# idempotency record), breakage name)
Poison = Callable[[str, OwnerKey, str, str], None]


def _with_deep_metadata(body: str, depth: int) -> str:
    nested: Any = "bottom"
    for _ in range(depth):
        nested = {"level": nested}
    return json.dumps({**json.loads(body), "metadata": nested})


def sqlite_poison(ledger_file: Path) -> Poison:
    """Rewrites a stored body in the embedded ledger file through a connection of its own."""

    def poison(kind: str, owner: OwnerKey, record_id: str, breakage: str) -> None:
        table = {"event": "events", "node": "nodes", "work": "work", "journal": "journal"}.get(
            kind, "idempotency_keys"
        )
        where = f"WHERE tenant=? AND owner=? AND {'key' if kind == 'idempotency' else 'id'}=?"
        key = (owner.tenant_id, owner.owner_id, record_id)
        conn = sqlite3.connect(ledger_file)
        try:
            # Only one of five fixed table names (and one of two columns) is interpolated.
            (body,) = conn.execute(f"SELECT body FROM {table} {where}", key).fetchone()  # noqa: S608
            with conn:
                conn.execute(
                    f"UPDATE {table} SET body=? {where}",  # noqa: S608
                    (BREAKAGES[breakage](body), *key),
                )
        finally:
            conn.close()

    return poison


def stored_text(item: dict[str, Any]) -> str:
    """The text of a DynamoDB item's body: compressed (binary) or, when older, plain text."""
    body = item["body"]
    return zlib.decompress(body["B"]).decode() if "B" in body else str(body["S"])


def dynamodb_poison(dynamodb: Any, table: str) -> Poison:
    """Rewrites a stored body in the DynamoDB table with plain item calls."""

    def poison(kind: str, owner: OwnerKey, record_id: str, breakage: str) -> None:
        pk = f"T#{owner.tenant_id}#O#{owner.owner_id}"
        if kind == "work":  # its sort key starts with its event's id: found by its own id
            found = dynamodb.query(
                TableName=table,
                KeyConditionExpression="#pk = :pk AND begins_with(#sk, :work)",
                ExpressionAttributeNames={
                    "#pk": resources.PARTITION_KEY,
                    "#sk": resources.SORT_KEY,
                },
                ExpressionAttributeValues={":pk": {"S": pk}, ":work": {"S": "WORK#"}},
                ConsistentRead=True,
            )["Items"]
            (item,) = [i for i in found if i[resources.SORT_KEY]["S"].endswith(f"#{record_id}")]
        else:
            # Journal ids and idempotency keys (UUIDs) carry no '#': no escaping is needed.
            prefix = "IDEMP" if kind == "idempotency" else kind.upper()
            sk = {"S": f"{prefix}#{record_id}"}
            # Receipts sit on one of the owner's receipt partition keys.
            places = [pk, *(f"{pk}#RECEIPTS#{n}" for n in range(RECEIPT_SHARDS))]
            stored = []
            for place in places:
                found = dynamodb.get_item(
                    TableName=table,
                    Key={resources.PARTITION_KEY: {"S": place}, resources.SORT_KEY: sk},
                    ConsistentRead=True,
                )
                stored += [found["Item"]] if "Item" in found else []
            (item,) = stored
        key = {name: item[name] for name in (resources.PARTITION_KEY, resources.SORT_KEY)}
        dynamodb.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET body = :body",
            ExpressionAttributeValues={
                ":body": {"B": zlib.compress(BREAKAGES[breakage](stored_text(item)).encode())}
            },
        )

    return poison

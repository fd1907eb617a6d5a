"""Every stored record of a backend as text, read straight from the stores (not through a port):
what a test searches for an erased owner's id or content."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from prme.backends.memory import InMemoryIndex, InMemoryLedger


def _text(value: object) -> str:
    if isinstance(value, bytes):
        # Blobs too (FTS segments, vectors): latin-1 keeps every byte, so stored words show.
        return value.decode("latin-1")
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return str(value)


def scan_memory(ledger: InMemoryLedger, index: InMemoryIndex) -> list[str]:
    """Every record the in-memory fakes hold, with its key."""
    tables: list[dict[Any, Any]] = [
        ledger.events,
        ledger.nodes,
        ledger.journal,
        ledger.work,
        ledger.idempotency,
        ledger.edges,
        ledger.erasures,
        index.documents,
        ledger.node_history,
    ]
    if ledger.credentials is not None:
        tables.append({c.key_id: c for c in ledger.credentials.list_credentials(None)})
    return [f"{key!r} {_text(value)}" for table in tables for key, value in table.items()]


def scan_sqlite(data_dir: Path) -> list[str]:
    """Every row of every table (FTS shadow tables included) of every database in `data_dir`."""
    rows: list[str] = []
    for path in sorted(data_dir.glob("*.sqlite*")):
        if path.name.endswith(("-wal", "-shm")):
            continue
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = [
                name
                for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            for table in tables:
                for row in conn.execute(f'SELECT * FROM "{table}"'):  # noqa: S608
                    rows.append(f"{path.name}:{table} " + " ".join(_text(v) for v in row))
        finally:
            conn.close()
    return rows


def _inflated(value: object) -> str:
    """A binary attribute as text: record bodies are stored zlib-compressed; other bytes
    (digests) as latin-1, so that nothing is hidden from the search."""
    assert isinstance(value, bytes)
    try:
        return zlib.decompress(value).decode()
    except (zlib.error, UnicodeDecodeError):
        return value.decode("latin-1")


def scan_aws(dynamodb: Any, table: str, opensearch: Any, alias: str) -> list[str]:
    """Every item of the DynamoDB table (a Scan) and every document of the index (match_all)."""
    found: list[str] = []
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = dynamodb.scan(**kwargs)
        found.extend(
            json.dumps(item, ensure_ascii=False, default=_inflated) for item in page["Items"]
        )
        if not page.get("LastEvaluatedKey"):
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    opensearch.indices.refresh(index=alias)
    hits = opensearch.search(index=alias, body={"query": {"match_all": {}}, "size": 10_000})
    found.extend(json.dumps(hit, ensure_ascii=False) for hit in hits["hits"]["hits"])
    return found

"""Receipt listings as an owner's receipts pile up: the time of a page of `list_retrievals` and of
a 200-receipt `list_node_retrievals` scan on the embedded backend and, when the local AWS is up,
on the AWS one, with DynamoDB's item sizes and billed units for the listing entry each
retrieval now writes and for each read (by AWS's published rules: moto reports none).

Run: `.venv/bin/python -m benchmarks.receipt_listing [--quick]`
(for the AWS rows: inside `localstack/with_local_aws.sh`). Report only, never asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.dynamodb_units import item_size, read_units, write_units
from benchmarks.ingest_throughput import aws_engine
from benchmarks.results import start_run, write_result
from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.service import MemoryEngine
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.records import OwnerKey

MEMORIES = 100
READS = 10
TOPICS = ("tea", "chess", "Oslo", "the cat", "the project", "Sunday", "the garden")


def _median_ms(read: Callable[[], object]) -> float:
    times = []
    for _ in range(READS):
        started = time.perf_counter()
        read()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def _filled(engine: MemoryEngine, retrievals: int) -> tuple[OwnerKey, str]:
    owner = OwnerKey(tenant_id="bench", owner_id=f"receipts-{uuid.uuid4().hex[:8]}")
    first = ""
    for n in range(MEMORIES):
        topic = TOPICS[n % len(TOPICS)]
        stored = engine.store(owner, StoreInput(content=f"Note {n}: something about {topic}"))
        first = first or str(stored.node_id)
    for n in range(retrievals):
        engine.retrieve(owner, RetrieveInput(query=f"what about {TOPICS[n % len(TOPICS)]}?"))
    return owner, first


def measure(engine: MemoryEngine, owner: OwnerKey, probe: str, retrievals: int) -> dict[str, Any]:
    page = engine.list_retrievals(owner, limit=20)
    assert len(page.retrievals) == min(20, retrievals)  # noqa: S101 (a broken listing times nothing)
    return {
        "retrievals": retrievals,
        "page_of_20_ms": _median_ms(lambda: engine.list_retrievals(owner, limit=20)),
        "deep_page_ms": _median_ms(
            lambda: engine.list_retrievals(owner, cursor=page.next_cursor, limit=20)
        ),
        "node_scan_200_ms": _median_ms(lambda: engine.list_node_retrievals(owner, probe)),
        "node_scan_found": len(engine.list_node_retrievals(owner, probe).retrievals),
    }


def dynamodb_units(engine: MemoryEngine, owner: OwnerKey) -> dict[str, Any]:
    """Sizes of the owner's receipt and listing items and the units of each call."""
    ledger: Any = engine.deps.ledger
    client, table = ledger._client, ledger._table  # raw items, for their sizes
    pk = f"T#{owner.tenant_id}#O#{owner.owner_id}"
    entries = _query_all(client, table, f"{pk}#RECEIPTLOG")
    receipts = [item for n in range(16) for item in _query_all(client, table, f"{pk}#RECEIPTS#{n}")]
    entry_sizes = sorted(item_size(i) for i in entries)
    receipt_sizes = sorted(item_size(i) for i in receipts)
    newest_20 = sorted(entries, key=lambda i: str(i["sk"]["S"]))[-20:]
    newest_200 = {str(i["position"]["S"]).split("|")[1] for i in entries[-200:]}
    scan_bodies = [item_size(i) for i in receipts if i["sk"]["S"][8:] in newest_200]
    return {
        "entries": len(entries),
        "entry_bytes_median": int(statistics.median(entry_sizes)),
        "entry_bytes_max": entry_sizes[-1],
        "entry_write_units_max": write_units(entry_sizes[-1]),
        "receipt_bytes_median": int(statistics.median(receipt_sizes)),
        "receipt_write_units_median": write_units(int(statistics.median(receipt_sizes))),
        "page_of_20_read_units": read_units(sum(item_size(i) for i in newest_20), consistent=True),
        "node_scan_200_read_units": read_units(
            sum(item_size(i) for i in entries[-200:]), consistent=True
        )
        + sum(read_units(size, consistent=True) for size in scan_bodies),
    }


def _query_all(client: Any, table: str, pk: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    start: dict[str, Any] | None = None
    while True:
        extra = {"ExclusiveStartKey": start} if start else {}
        page = client.query(
            TableName=table,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": "pk"},
            ExpressionAttributeValues={":pk": {"S": pk}},
            ConsistentRead=True,
            **extra,
        )
        items += page["Items"]
        start = page.get("LastEvaluatedKey")
        if not start:
            return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--json", type=Path, default=Path("benchmarks/results/receipt_listing.json")
    )
    args = parser.parse_args()
    run_start = start_run()
    sizes = (50, 250) if args.quick else (100, 1000)
    aws_size = 60 if args.quick else 250
    rows: list[dict[str, Any]] = []
    units: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        backend = open_embedded(Path(tmp) / "data", embedder=HashingEmbedder())
        for n in sizes:
            owner, probe = _filled(backend.engine, n)
            rows.append({"backend": "embedded", **measure(backend.engine, owner, probe, n)})
        backend.close()
    if os.environ.get("AWS_ENDPOINT_URL") and os.environ.get("PRME_OPENSEARCH_URL"):
        with aws_engine() as engine:
            owner, probe = _filled(engine, aws_size)
            rows.append({"backend": "aws (local)", **measure(engine, owner, probe, aws_size)})
            units = dynamodb_units(engine, owner)
            # The longest query, of four-byte letters: the entry keeps a 400-byte preview.
            engine.retrieve(owner, RetrieveInput(query="\U0001f375" * 10_000))
            long_query = dynamodb_units(engine, owner)
            units["entry_bytes_longest_query"] = long_query["entry_bytes_max"]
    header = ("backend", "receipts", "page ms", "deep ms", "scan200 ms", "found")
    print("{:12} {:>8} {:>8} {:>8} {:>10} {:>6}".format(*header))
    for row in rows:
        print(
            f"{row['backend']:12} {row['retrievals']:8d} {row['page_of_20_ms']:8.2f} "
            f"{row['deep_page_ms']:8.2f} {row['node_scan_200_ms']:10.2f} "
            f"{row['node_scan_found']:6d}"
        )
    if units:
        print("\nDynamoDB (AWS's billing rules applied to the stored items):")
        for name, value in units.items():
            print(f"  {name:32} {value}")
    write_result(
        args.json,
        "benchmarks.receipt_listing",
        {"receipt_listing": rows, "dynamodb": units},
        parameters={"sizes": list(sizes), "aws_size": aws_size, "embedder": "hashing"},
        started=run_start,
    )


if __name__ == "__main__":
    main()

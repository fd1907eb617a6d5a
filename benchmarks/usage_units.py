"""What a usage entry adds to each metered operation on DynamoDB: the billed size of its item
and its write units (by AWS's published rules, as benchmarks/cost.py counts the ledger's).

Run: `.venv/bin/python -m benchmarks.usage_units`. No AWS needed: the items are built by the
adapter itself. Prints a table and writes benchmarks/results/usage_units.json.
"""

from __future__ import annotations

import argparse
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.dynamodb_units import item_size, read_units, write_units
from benchmarks.results import start_run, write_result
from prme.backends.aws.dynamodb_usage import DynamoDbUsageLog
from prme.model.records import OwnerKey
from prme.model.usage import UsageEntry, UsageUnits

# A realistic tenant and owner, and the longest tenant id the settings allow.
OWNERS = {
    "typical ids": OwnerKey(tenant_id="acme-prod", owner_id="user-4821"),
    "128-char tenant": OwnerKey(tenant_id="t" * 128, owner_id="u" * 256),
}
KINDS = {
    "store": UsageUnits(records=1, bytes_in=250, embeddings=1),
    "ingest_fast": UsageUnits(records=100, bytes_in=25_000),
    "retrieve": UsageUnits(records=10, tokens=1_843, bytes_out=7_512, embeddings=1),
    "delete_memory": UsageUnits(records=2),
    "materialize": UsageUnits(records=1, embeddings=1),
    "extract": UsageUnits(records=4, embeddings=4, extractor_calls=1),
}


def measure() -> list[dict[str, object]]:
    log = DynamoDbUsageLog(client=None, table_name="unused")
    now = datetime.now(UTC)
    rows: list[dict[str, object]] = []
    for label, owner in OWNERS.items():
        for kind, units in KINDS.items():
            entry = UsageEntry.of(
                kind,
                owner,
                str(uuid.uuid4()),
                at=now,
                expires_at=now + timedelta(days=400),
                units=units,
            )
            size = item_size(log.item_of(entry))
            rows.append(
                {
                    "ids": label,
                    "kind": kind,
                    "item_bytes": size,
                    "write_units": write_units(size),
                    "read_units_eventual": read_units(size, consistent=False),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the same (it is already quick)")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/usage_units.json"))
    args = parser.parse_args()
    run_start = start_run()
    rows = measure()
    print(f"{'ids':<16} {'kind':<14} {'item bytes':>10} {'write units':>11}")
    for row in rows:
        print(
            f"{row['ids']:<16} {row['kind']:<14} {row['item_bytes']:>10} {row['write_units']:>11}"
        )
    write_result(
        args.json,
        "benchmarks.usage_units",
        {"entries": rows},
        parameters={},
        started=run_start,
    )


if __name__ == "__main__":
    main()

"""Erasing an owner: seconds and calls to erase owners of growing size (sources stored by fast
ingest and indexed), on the embedded backend and, when the local AWS is up, on the AWS one.

Run: `.venv/bin/python -m benchmarks.erase_owner [--quick]`
(for the AWS rows: inside `localstack/with_local_aws.sh`). Report only, never asserts.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.embedder_speed import conversational_sentences
from benchmarks.ingest_throughput import aws_engine
from benchmarks.results import start_run, write_result
from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.service import MemoryEngine
from prme.model.inputs import MAX_FAST_INGEST_ITEMS, FastIngestInput
from prme.model.records import OwnerKey


def fill(engine: MemoryEngine, owner: OwnerKey, sources: int) -> None:
    texts = conversational_sentences(sources, seed=sources)
    for start in range(0, sources, MAX_FAST_INGEST_ITEMS):
        items = [{"content": text} for text in texts[start : start + MAX_FAST_INGEST_ITEMS]]
        engine.ingest_fast(owner, FastIngestInput.model_validate({"items": items}))
    while engine.process_materializations(owner).processed:
        pass


def measure(engine: MemoryEngine, sources: int) -> dict[str, Any]:
    owner = OwnerKey(tenant_id="bench", owner_id=f"erase-{uuid.uuid4().hex[:8]}")
    fill(engine, owner, sources)
    calls = 0
    started = time.perf_counter()
    while True:
        calls += 1
        receipt = engine.erase_owner(owner, confirm=owner.owner_id)
        if receipt.complete:
            break
    elapsed = time.perf_counter() - started
    return {
        "sources": sources,
        "records_removed": receipt.removed.total,
        "calls": calls,
        "seconds": round(elapsed, 3),
        "records_per_s": round(receipt.removed.total / elapsed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/erase_owner.json"))
    args = parser.parse_args()
    run_start = start_run()
    sizes = (100, 500) if args.quick else (100, 1000, 3000)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        backend = open_embedded(Path(tmp) / "data", embedder=HashingEmbedder())
        rows.extend({"backend": "embedded", **measure(backend.engine, n)} for n in sizes)
        backend.close()
    if os.environ.get("AWS_ENDPOINT_URL") and os.environ.get("PRME_OPENSEARCH_URL"):
        with aws_engine() as engine:
            rows.extend({"backend": "aws (local)", **measure(engine, n)} for n in sizes)
    print(f"{'backend':12} {'sources':>7} {'records':>8} {'calls':>5} {'seconds':>8} {'rec/s':>7}")
    for row in rows:
        print(
            f"{row['backend']:12} {row['sources']:7d} {row['records_removed']:8d} "
            f"{row['calls']:5d} {row['seconds']:8.2f} {row['records_per_s']:7d}"
        )
    write_result(
        args.json,
        "benchmarks.erase_owner",
        {"erase_owner": rows},
        parameters={"sizes": list(sizes), "embedder": "hashing"},
        started=run_start,
    )


if __name__ == "__main__":
    main()

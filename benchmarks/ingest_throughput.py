"""Fast-ingest throughput (items/s) on the embedded backend, and on the AWS backend when the
local AWS is up; plus the offline rule extractor's throughput.

Run: `.venv/bin/python -m benchmarks.ingest_throughput [--quick]`
(for the AWS rows: inside `localstack/with_local_aws.sh`). Report only, never asserts.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.embedder_speed import conversational_sentences
from benchmarks.local_aws import fresh_aws
from benchmarks.results import start_run, write_result
from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.service import MemoryEngine
from prme.extraction.rules import RuleExtractor
from prme.model.inputs import MAX_FAST_INGEST_ITEMS, FastIngestInput
from prme.model.records import OwnerKey

OWNER = OwnerKey(tenant_id="local", owner_id="bench")


def batches(total: int, size: int) -> list[FastIngestInput]:
    texts = conversational_sentences(total, seed=size)
    return [
        FastIngestInput.model_validate({"items": [{"content": t} for t in texts[i : i + size]]})
        for i in range(0, total, size)
    ]


def measure(engine: MemoryEngine, total: int, size: int) -> dict[str, float]:
    work = batches(total, size)
    started = time.perf_counter()
    for batch in work:
        engine.ingest_fast(OWNER, batch, idempotency_key=str(uuid.uuid4()))
    elapsed = time.perf_counter() - started
    return {"batch_size": size, "items": total, "items_per_s": total / elapsed}


@contextmanager
def aws_engine() -> Iterator[MemoryEngine]:
    """A fresh table, queues and index on the local AWS, deleted afterwards."""
    from prme.backends.aws.service import open_aws
    from prme.settings import Settings

    with fresh_aws(Settings(), "ib", dimension=64) as (settings, clients):
        backend = open_aws(settings, embedder=HashingEmbedder(), clients=clients)
        try:
            yield backend.engine
        finally:
            backend.close()


def extractor_speed(count: int) -> dict[str, float]:
    extractor = RuleExtractor()
    texts = conversational_sentences(count, seed=3)
    reference = datetime(2024, 5, 1, tzinfo=UTC)
    started = time.perf_counter()
    artifacts = 0
    for text in texts:
        result = extractor.extract(text, reference_time=reference)
        artifacts += len(result.claims) + len(result.entities) + len(result.quantities)
    elapsed = time.perf_counter() - started
    return {"sentences": count, "sentences_per_s": count / elapsed, "artifacts": artifacts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--json", type=Path, default=Path("benchmarks/results/ingest_throughput.json")
    )
    args = parser.parse_args()
    run_start = start_run()
    total = 490 if args.quick else 2450
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (25, MAX_FAST_INGEST_ITEMS):
            backend = open_embedded(Path(tmp) / f"e{size}", embedder=HashingEmbedder())
            rows.append({"backend": "embedded", **measure(backend.engine, total, size)})
            backend.close()
    if os.environ.get("AWS_ENDPOINT_URL") and os.environ.get("PRME_OPENSEARCH_URL"):
        aws_total = 245 if args.quick else 490
        for size in (25, MAX_FAST_INGEST_ITEMS):
            with aws_engine() as engine:
                rows.append({"backend": "aws (local)", **measure(engine, aws_total, size)})
    extraction = extractor_speed(2000 if args.quick else 10000)
    print(f"{'backend':14} {'batch':>5} {'items':>6} {'items/s':>9}")
    for row in rows:
        print(
            f"{row['backend']:14} {row['batch_size']:5d} {row['items']:6d} {row['items_per_s']:9.0f}"
        )
    print(
        f"rule extractor: {extraction['sentences_per_s']:.0f} sentences/s "
        f"({extraction['artifacts']} artifacts from {extraction['sentences']} sentences)"
    )
    write_result(
        args.json,
        "benchmarks.ingest_throughput",
        {"fast_ingest": rows, "rule_extractor": extraction},
        parameters={"quick": args.quick},
        started=run_start,
    )


if __name__ == "__main__":
    main()

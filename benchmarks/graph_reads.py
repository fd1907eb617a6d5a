"""Graph reads of one node as the owner's journal grows: a provenance page (through the per-node
history references), a 2-hop neighborhood and a chain, next to reading the whole journal (what
a history without references would cost), on the embedded backend and, when the local AWS is
up, on the AWS one.

Run: `.venv/bin/python -m benchmarks.graph_reads [--quick]`
(for the AWS rows: inside `localstack/with_local_aws.sh`). Report only, never asserts.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.ingest_throughput import aws_engine
from benchmarks.results import start_run, write_result
from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.service import MemoryEngine
from prme.model.inputs import StoreInput
from prme.model.records import OwnerKey

CHAIN = 10
READS = 20


def _median_ms(read: Callable[[], object]) -> float:
    times = []
    for _ in range(READS):
        started = time.perf_counter()
        read()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def measure(engine: MemoryEngine, memories: int) -> dict[str, Any]:
    owner = OwnerKey(tenant_id="bench", owner_id=f"graph-{uuid.uuid4().hex[:8]}")
    ids: list[str] = []
    for n in range(memories):
        stored = engine.store(owner, StoreInput(content=f"Note {n} about project {n % 37}"))
        ids.append(str(stored.node_id))  # a direct store always makes its node
    for node_id in ids:
        engine.promote(owner, node_id)
    for older, newer in itertools.pairwise(ids[: CHAIN + 1]):
        engine.supersede(owner, old_node_id=older, new_node_id=newer)
    probe = ids[0]

    def whole_journal() -> int:
        read, after = 0, None
        while True:
            page = engine.deps.ledger.list_journal(owner, "", after_id=after, limit=1000)
            read += len(page)
            if len(page) < 1000:
                return read
            after = page[-1].id

    return {
        "memories": memories,
        "journal_records": whole_journal(),
        "provenance_ms": _median_ms(lambda: engine.get_node_provenance(owner, probe)),
        "neighborhood_ms": _median_ms(
            lambda: engine.get_node_neighborhood(owner, ids[CHAIN // 2], max_hops=2)
        ),
        "chain_ms": _median_ms(lambda: engine.get_node_chain(owner, probe)),
        "whole_journal_ms": _median_ms(whole_journal),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/graph_reads.json"))
    args = parser.parse_args()
    run_start = start_run()
    sizes = (100, 1000) if args.quick else (100, 1000, 5000)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        backend = open_embedded(Path(tmp) / "data", embedder=HashingEmbedder())
        rows.extend({"backend": "embedded", **measure(backend.engine, n)} for n in sizes)
        backend.close()
    if os.environ.get("AWS_ENDPOINT_URL") and os.environ.get("PRME_OPENSEARCH_URL"):
        with aws_engine() as engine:
            rows.extend({"backend": "aws (local)", **measure(engine, n)} for n in sizes[:2])
    header = ("backend", "memories", "journal", "prov ms", "hood ms", "chain ms", "scan ms")
    print("{:12} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}".format(*header))
    for row in rows:
        print(
            f"{row['backend']:12} {row['memories']:8d} {row['journal_records']:8d} "
            f"{row['provenance_ms']:8.2f} {row['neighborhood_ms']:8.2f} {row['chain_ms']:8.2f} "
            f"{row['whole_journal_ms']:8.2f}"
        )
    write_result(
        args.json,
        "benchmarks.graph_reads",
        {"graph_reads": rows},
        parameters={"sizes": list(sizes), "embedder": "hashing"},
        started=run_start,
    )


if __name__ == "__main__":
    main()

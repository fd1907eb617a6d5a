"""Assertion aggregation and fact state over an owner with many claims, on the embedded backend.

Run: `.venv/bin/python -m benchmarks.assertion_scan [--quick] [--json PATH]`.
One claim comes from the offline rule extractor ("I live in Lisbon."); the rest are copies of
that node with new ids and one of 50 objects, committed in batches, so the scan reads what
extraction writes without extracting thousands of messages. Both operations read every node
a page at a time; the state query's fact holds every claim (its worst case). Prints a table
and writes JSON. Report only: timings depend on the machine and are never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.results import start_run, write_result
from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.service import MemoryEngine
from prme.model.assertions import AssertionQuery, AssertionStateQuery
from prme.model.inputs import IngestInput
from prme.model.records import EXTRACTION_METADATA_KEY, JournalRecord, NodeChange, OwnerKey

OWNER = OwnerKey(tenant_id="local", owner_id="bench")
RUNS = 5
BATCH = 500
OBJECTS = 50


def seed(engine: MemoryEngine, claims: int) -> None:
    """`claims` claim nodes for subject I, predicate live, spread over OBJECTS objects."""
    event_id = engine.ingest(
        OWNER, IngestInput(content="I live in Lisbon.", wait_for_extraction=True)
    ).event_id
    (base,) = [
        node
        for node in engine.get_event_nodes(OWNER, event_id)
        if node.metadata.get(EXTRACTION_METADATA_KEY, {}).get("kind") == "claim"
    ]
    made = 1
    while made < claims:
        batch = []
        for _ in range(min(BATCH, claims - made)):
            meta = {**base.metadata[EXTRACTION_METADATA_KEY], "object": f"in City{made % OBJECTS}"}
            batch.append(
                base.model_copy(
                    update={"id": str(uuid.uuid4()), "metadata": {EXTRACTION_METADATA_KEY: meta}}
                )
            )
            made += 1
        journal = JournalRecord.build(
            record_id=str(uuid.uuid4()),
            owner=OWNER,
            operation="benchmark_seed",
            subject_id=batch[0].id,
            created_at=base.created_at,
            payload={},
        )
        engine.deps.ledger.commit_node_change(
            NodeChange(updates=(), journal=journal, new_nodes=tuple(batch))
        )


def timed_ms(run: Any) -> float:
    started = time.perf_counter()
    run()
    return (time.perf_counter() - started) * 1000


def measure(claims: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        backend = open_embedded(Path(tmp) / "data", embedder=HashingEmbedder())
        try:
            engine = backend.engine
            seed(engine, claims)
            query = AssertionQuery(group_by=("object",))
            fact = AssertionStateQuery(subject="I", predicate="live")
            result = engine.aggregate_assertions(OWNER, query)
            state = engine.get_assertion_state(OWNER, fact)
            aggregate = [
                timed_ms(lambda: engine.aggregate_assertions(OWNER, query)) for _ in range(RUNS)
            ]
            fact_state = [
                timed_ms(lambda: engine.get_assertion_state(OWNER, fact)) for _ in range(RUNS)
            ]
        finally:
            backend.close()
    return {
        "claims": claims,
        "scanned_nodes": result.scanned_nodes,
        "counted": result.counted,
        "groups": result.group_count,
        "timeline": state.timeline_count,
        "aggregate_p50_ms": round(statistics.median(aggregate), 1),
        "state_p50_ms": round(statistics.median(fact_state), 1),
        "runs": RUNS,
    }


def print_table(results: dict[str, Any]) -> None:
    print(f"assertion scan, embedded backend, p50 of {RUNS} runs")
    print(f"{'claims':>8} {'nodes':>8} {'groups':>7} {'aggregate ms':>13} {'state ms':>9}")
    for r in results["sizes"]:
        print(
            f"{r['claims']:>8} {r['scanned_nodes']:>8} {r['groups']:>7} "
            f"{r['aggregate_p50_ms']:>13} {r['state_p50_ms']:>9}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1k claims only")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    run_start = start_run()
    sizes = (1_000,) if args.quick else (1_000, 10_000, 50_000)
    out: Path = args.json or Path("benchmarks/results") / (
        "assertion_scan_quick.json" if args.quick else "assertion_scan.json"
    )
    results: dict[str, Any] = {
        "sizes": [measure(size) for size in sizes],
    }
    print_table(results)
    write_result(
        out,
        "benchmarks.assertion_scan",
        results,
        parameters={"quick": args.quick, "sizes": list(sizes)},
        started=run_start,
    )


if __name__ == "__main__":
    main()

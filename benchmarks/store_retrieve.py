"""Store throughput and retrieval latency of the embedded backend with the default embedder.

Run: `.venv/bin/python -m benchmarks.store_retrieve [--quick] [--json PATH]`.
Prints a table and writes JSON. Targets are reported, never asserted.

Stores are measured one by one on an owner that already holds `STORE_PREFILL` records (200
with `--quick`), the size the store target is set at.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.embedder_speed import conversational_sentences, percentile
from benchmarks.results import start_run, write_result
from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.engine.materialize import materialize_nodes
from prme.engine.store import build_store_commit
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.records import OwnerKey

OWNER = OwnerKey(tenant_id="local", owner_id="bench")
STORE_TARGET_PER_S = 200.0
STORE_P50_TARGET_MS = 2.5
STORE_PREFILL = 2_000
RETRIEVE_P50_TARGET_MS = 25.0
QUERIES = [
    "When is the dentist appointment?",
    "What did my sister book?",
    "Who paid the rent for March?",
    "What does Alex prefer in coffee?",
    "Did we cancel the birthday party?",
    "Where is the vegetarian restaurant?",
    "What happened with the insurance company?",
    "What is the password for the shared drive?",
    "What did the doctor mention last week?",
    "Which flight did our team book?",
]
REQUESTS: dict[str, dict[str, Any]] = {
    "limit 10": {"limit": 10},
    "default": {},
    "limit 50, 4096 tokens": {"limit": 50, "token_budget": 4096},
}


def measure_store(backend: EmbeddedBackend, texts: list[str]) -> dict[str, float]:
    latencies: list[float] = []
    started = time.perf_counter()
    for i, text in enumerate(texts):
        t0 = time.perf_counter()
        backend.engine.store(OWNER, StoreInput(content=text, session_id=f"s{i % 20}"))
        latencies.append((time.perf_counter() - t0) * 1000)
    elapsed = time.perf_counter() - started
    return {
        "count": len(texts),
        "stores_per_s": len(texts) / elapsed,
        "p50_ms": statistics.median(latencies),
        "p95_ms": percentile(latencies, 0.95),
    }


def fill(backend: EmbeddedBackend, texts: list[str], batch: int = 64) -> None:
    """Bulk setup through the same commit and materialize code, embedding in batches."""
    deps = backend.engine.deps
    for start in range(0, len(texts), batch):
        commits = [
            build_store_commit(
                deps, OWNER, StoreInput(content=t, session_id=f"s{(start + i) % 50}")
            )
            for i, t in enumerate(texts[start : start + batch])
        ]
        for commit in commits:
            deps.ledger.commit_store(commit)
        materialize_nodes(deps, [(c.work, c.node) for c in commits])


def measure_retrieve(backend: EmbeddedBackend, rounds: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for label, options in REQUESTS.items():
        for query in QUERIES[:3]:  # warm caches (vector matrix, tokenizer)
            backend.engine.retrieve(OWNER, RetrieveInput(query=query, **options))
        latencies = []
        for _ in range(rounds):
            for query in QUERIES:
                t0 = time.perf_counter()
                backend.engine.retrieve(OWNER, RetrieveInput(query=query, **options))
                latencies.append((time.perf_counter() - t0) * 1000)
        out[label] = {
            "queries": len(latencies),
            "p50_ms": statistics.median(latencies),
            "p95_ms": percentile(latencies, 0.95),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes for CI")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/store_retrieve.json"))
    args = parser.parse_args()
    run_start = start_run()
    store_count = 100 if args.quick else 500
    prefill = 200 if args.quick else STORE_PREFILL
    sizes = [1_000] if args.quick else [1_000, 10_000]
    rounds = 2 if args.quick else 10

    parameters = {
        "quick": args.quick,
        "store_prefill": prefill,
        "stores_measured": store_count,
        "retrieve_sizes": sizes,
        "retrieve_rounds": rounds,
    }
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        backend = open_embedded(Path(tmp) / "store")
        backend.engine.store(OWNER, StoreInput(content="warm-up"))
        fill(backend, conversational_sentences(prefill, seed=3))
        results["store"] = measure_store(backend, conversational_sentences(store_count, seed=11))
        backend.close()
        results["retrieve"] = {}
        for size in sizes:
            backend = open_embedded(Path(tmp) / f"r{size}")
            fill(backend, conversational_sentences(size, seed=size))
            results["retrieve"][str(size)] = measure_retrieve(backend, rounds)
            backend.close()

    store = results["store"]
    print(f"{'operation':44} {'value':>12} {'target':>10}  ok")
    ok = store["stores_per_s"] >= STORE_TARGET_PER_S
    print(f"{'store, sequential (stores/s)':44} {store['stores_per_s']:12.1f} {'>= 200':>10}  {ok}")
    ok = store["p50_ms"] <= STORE_P50_TARGET_MS
    name = f"store at {prefill:,} records p50 / p95 (ms)"
    print(f"{name:44} {store['p50_ms']:5.2f} / {store['p95_ms']:5.2f} {'<= 2.5':>10}  {ok}")
    for size, by_request in results["retrieve"].items():
        for label, row in by_request.items():
            name = f"retrieve {int(size):>6,} memories, {label} p50/p95 (ms)"
            target = f"<= {RETRIEVE_P50_TARGET_MS:.0f}" if size == "10000" else "-"
            passed = row["p50_ms"] <= RETRIEVE_P50_TARGET_MS if size == "10000" else ""
            print(f"{name:44} {row['p50_ms']:5.2f} / {row['p95_ms']:5.2f} {target:>10}  {passed}")
    write_result(
        args.json, "benchmarks.store_retrieve", results, parameters=parameters, started=run_start
    )


if __name__ == "__main__":
    main()

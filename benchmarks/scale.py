"""Retrieval at scale on the embedded backend: 10k and 100k records of one owner.

Run: `PYTHONPATH=core .venv/bin/python -m benchmarks.scale [--quick] [--data-dir DIR]`.

The 10k table gives retrieve p50/p95 with limit 10 and filling a 2,048-token budget. The
100k table gives the store rate (fast ingest in batches, then the materializer embedding in
batches: the rate a bulk load reaches), retrieve p50/p95, the process's resident memory, the
time to open the data directory and answer a first retrieval, and the recall@10 of the
approximate vector search against exact search on the same owner. `--data-dir` keeps the
stores, so a second run reuses them (the store rate is then the one its first run measured).
`--quick` uses 2k and 6k records, `--records` other sizes. Prints tables and writes JSON; targets are reported, never
asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.embedder_speed import percentile
from benchmarks.results import command_line, start_run, write_result
from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.model.inputs import FastIngestInput, RetrieveInput
from prme.model.records import OwnerKey
from prme.model.search import IndexFilter, IndexQuery, VectorSearchSettings

OWNER = OwnerKey(tenant_id="local", owner_id="scale")
LIMIT_P50_TARGET_MS = 5.0
BUDGET_P50_TARGET_MS = 20.0
INGEST_BATCH = 49  # the most items one fast-ingest transaction takes

_PEOPLE = ["I", "My sister", "Our team", "The doctor", "My landlord", "We", "The client", "Mum"]
_NAMES = ["Alex", "Priya", "Tomás", "Mei", "Jonas", "Fatima", "Noah", "Sofia", "Kwame", "Lena"]
_VERBS = ["moved", "booked", "cancelled", "mentioned", "prefers", "asked about", "forgot", "paid"]
_THINGS = [
    "the dentist appointment",
    "a flight to {place}",
    "the quarterly report",
    "oat milk in coffee",
    "the rent for {month}",
    "a vegetarian restaurant near {place}",
    "the password for the shared drive",
    "the birthday party for {name}",
    "a yoga class with {name}",
    "the car service at the garage in {place}",
    "tickets for the {n}th anniversary concert",
    "the invoice number {n} from {name}",
    "a dinner with {name} in {place}",
    "the train to {place} at {hour} o'clock",
]
_PLACES = ["Lisbon", "Oslo", "Nairobi", "Kyoto", "Denver", "Porto", "Leeds", "Hanoi", "Quito"]
_MONTHS = ["January", "March", "May", "July", "September", "November"]
_TAILS = [
    "",
    " last week",
    " because the old one was too expensive",
    " and wants a reminder {n} days before",
    ", but only if it does not rain, otherwise we stay home",
    " after the meeting with {name} ran late again",
    " on {day}",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
QUERIES = [
    "When is the dentist appointment?",
    "What did my sister book?",
    "Who paid the rent for March?",
    "What does Alex prefer in coffee?",
    "Did we cancel the birthday party for Priya?",
    "Where is the vegetarian restaurant?",
    "What happened at the meeting with Jonas?",
    "What is the password for the shared drive?",
    "What did the doctor mention last week?",
    "Which flight to Kyoto did our team book?",
]


def varied_sentences(count: int, seed: int) -> list[str]:
    """Chat-like sentences with names, places and numbers: nearly all distinct at 100k."""
    rng = random.Random(seed)

    def fill_in(template: str) -> str:
        return template.format(
            place=rng.choice(_PLACES),
            month=rng.choice(_MONTHS),
            name=rng.choice(_NAMES),
            n=rng.randint(2, 400),
            hour=rng.randint(5, 22),
            day=rng.choice(_DAYS),
        )

    return [
        f"{rng.choice(_PEOPLE + _NAMES)} {rng.choice(_VERBS)} "
        f"{fill_in(rng.choice(_THINGS))}{fill_in(rng.choice(_TAILS))}."
        for _ in range(count)
    ]


def question_set(count: int, seed: int) -> list[str]:
    """Questions for recall: the fixed ones, then sentences of the same shape as questions."""
    extra = [f"What about: {s}" for s in varied_sentences(max(0, count - len(QUERIES)), seed)]
    return (QUERIES + extra)[:count]


def store_records(backend: EmbeddedBackend, count: int) -> dict[str, Any]:
    """Fast ingest in batches (journal and events), then the materializer (embedding,
    nodes, index) until no work is left: the bulk-load path."""
    texts = varied_sentences(count, seed=count)
    engine = backend.engine
    started = time.perf_counter()
    for start in range(0, count, INGEST_BATCH):
        items = [
            {"content": t, "session_id": f"s{(start + i) // 20}"}
            for i, t in enumerate(texts[start : start + INGEST_BATCH])
        ]
        engine.ingest_fast(OWNER, FastIngestInput.model_validate({"items": items}))
    ingested = time.perf_counter()
    while engine.deps.ledger.count_pending_work(None):
        if engine.process_materializations().processed == 0:
            break
    elapsed = time.perf_counter() - started
    return {
        "records": count,
        "path": f"ingest_fast (batches of {INGEST_BATCH}) + materializer",
        "ingest_s": round(ingested - started, 2),
        "total_s": round(elapsed, 2),
        "records_per_s": round(count / elapsed, 1),
    }


def measure_retrieve(
    backend: EmbeddedBackend, options: dict[str, Any], rounds: int
) -> dict[str, float]:
    """Latency of the fixed queries, each asked `rounds` times after a warm-up round."""
    for query in QUERIES:
        backend.engine.retrieve(OWNER, RetrieveInput(query=query, **options))
    latencies: list[float] = []
    cpu: list[float] = []
    for _ in range(rounds):
        for query in QUERIES:
            t0, c0 = time.perf_counter(), time.process_time()
            backend.engine.retrieve(OWNER, RetrieveInput(query=query, **options))
            latencies.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
    return {
        "queries": len(latencies),
        "p50_ms": round(statistics.median(latencies), 2),
        "p95_ms": round(percentile(latencies, 0.95), 2),
        # CPU time of the process per retrieval: what a busy machine's waiting leaves out.
        "cpu_p50_ms": round(statistics.median(cpu), 2),
    }


def measure_fresh_queries(backend: EmbeddedBackend, count: int) -> dict[str, float]:
    """Latency of questions never asked before (the query's vector is not cached)."""
    latencies: list[float] = []
    for query in question_set(count + len(QUERIES), seed=99)[len(QUERIES) :]:
        t0 = time.perf_counter()
        backend.engine.retrieve(OWNER, RetrieveInput(query=query, limit=10))
        latencies.append((time.perf_counter() - t0) * 1000)
    return {
        "queries": len(latencies),
        "p50_ms": round(statistics.median(latencies), 2),
        "p95_ms": round(percentile(latencies, 0.95), 2),
    }


def measure_recall(backend: EmbeddedBackend, queries: int, k: int = 10) -> dict[str, Any]:
    """recall@k of the approximate vector channel against exact search, per query the share
    of the exact top k it finds (a hit tied in score with the exact k-th counts)."""
    index = backend.index
    embedder = backend.engine.deps.embedder
    questions = question_set(queries, seed=5)
    vectors = embedder.embed(questions)
    flt = IndexFilter(not_expired_at=None)
    recalls: list[float] = []
    approximate_ms: list[float] = []
    exact_ms: list[float] = []
    for question, vector in zip(questions, vectors, strict=True):
        query = IndexQuery(
            text=question,
            vector=tuple(float(x) for x in vector),
            embedding_model=embedder.model.key,
            vector_k=k,
            lexical_k=0,
            filters=flt,
        )
        t0 = time.perf_counter()
        approximate = index.search(OWNER, query).vector
        t1 = time.perf_counter()
        exact = index.search(OWNER, query, exact=True).vector
        t2 = time.perf_counter()
        approximate_ms.append((t1 - t0) * 1000)
        exact_ms.append((t2 - t1) * 1000)
        floor = exact[-1][1] - 1e-6
        exact_ids = {node_id for node_id, _ in exact}
        found = sum(1 for node_id, score in approximate if node_id in exact_ids or score >= floor)
        recalls.append(min(found, len(exact)) / max(1, len(exact)))
    return {
        "queries": len(questions),
        "k": k,
        "recall_at_k": round(float(np.mean(recalls)), 4),
        "min_recall": round(min(recalls), 4),
        "approximate_p50_ms": round(statistics.median(approximate_ms), 3),
        "exact_p50_ms": round(statistics.median(exact_ms), 3),
    }


def rss_mb() -> float:
    """The process's peak resident memory (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def open_and_first_retrieve(directory: Path) -> dict[str, float]:
    """A fresh process opens the data directory and answers one retrieval."""
    script = (
        "import json,time,resource;t=time.perf_counter();"
        "from benchmarks.scale import OWNER;"
        "from prme.backends.embedded.service import open_embedded;"
        "from prme.model.inputs import RetrieveInput;"
        f"b=open_embedded(__import__('pathlib').Path({str(directory)!r}));o=time.perf_counter();"
        "b.engine.retrieve(OWNER,RetrieveInput(query='dentist appointment',limit=10));"
        "r=time.perf_counter();b.engine.retrieve(OWNER,RetrieveInput(query='rent',limit=10));"
        "print(json.dumps({'open_ms':(o-t)*1000,'first_retrieve_ms':(r-o)*1000,"
        "'second_retrieve_ms':(time.perf_counter()-r)*1000,"
        "'rss_mb':resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024}))"
    )
    out = subprocess.run(
        [__import__("sys").executable, "-c", script], capture_output=True, text=True, check=True
    )
    return {k: round(v, 1) for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def run_size(directory: Path, size: int, rounds: int, recall_queries: int) -> dict[str, Any]:
    saved = directory / "store.json"
    if saved.exists():
        store = json.loads(saved.read_text())
    else:
        backend = open_embedded(directory)
        try:
            store = store_records(backend, size)
        finally:
            backend.close()
        saved.write_text(json.dumps(store))
    row: dict[str, Any] = {"store": store, **open_and_first_retrieve(directory)}
    backend = open_embedded(directory)
    try:
        # The owner's documents read into memory and, above the threshold, clustered: what
        # the first search after opening pays (the clusters are rebuilt, not persisted).
        t0 = time.perf_counter()
        row["vector_search"] = backend.index.vector_search_kind(OWNER)
        row["load_vectors_and_clusters_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        row["limit_10"] = measure_retrieve(backend, {"limit": 10}, rounds)
        row["budget_2048"] = measure_retrieve(backend, {"token_budget": 2048}, rounds)
        row["limit_10_fresh_queries"] = measure_fresh_queries(backend, 5 * len(QUERIES))
        row["recall"] = measure_recall(backend, recall_queries)
        row["benchmark_peak_rss_mb"] = round(rss_mb(), 1)
    finally:
        backend.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2k and 6k records")
    parser.add_argument("--data-dir", type=Path, help="keep the stores here and reuse them")
    parser.add_argument("--records", help="comma-separated owner sizes (default 10000,100000)")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/scale.json"))
    parser.add_argument(
        "--update", action="store_true", help="keep the other sizes the JSON file already has"
    )
    args = parser.parse_args()
    run_start = start_run()
    sizes = [2_000, 6_000] if args.quick else [10_000, 100_000]
    if args.records:
        sizes = [int(size) for size in args.records.split(",")]
    rounds = 2 if args.quick else 5
    recall_queries = 50 if args.quick else 200
    parameters = {
        "quick": args.quick,
        "sizes": sizes,
        "rounds": rounds,
        "recall_queries": recall_queries,
        "vector_search": VectorSearchSettings().model_dump(),
        "update": args.update,
    }
    results: dict[str, Any] = {"sizes": {}}
    if args.update and args.json.exists():
        # Each size keeps the command and commit that measured it.
        for size, row in json.loads(args.json.read_text())["results"]["sizes"].items():
            results["sizes"][size] = row
    commit, dirty = run_start.git
    with tempfile.TemporaryDirectory() as tmp:
        root = args.data_dir or Path(tmp)
        for size in sizes:
            row = run_size(root / f"scale{size}", size, rounds, recall_queries)
            results["sizes"][str(size)] = {
                "command": command_line("benchmarks.scale", sys.argv[1:]),
                "git": {"commit": commit, "dirty": dirty},
                **row,
            }
    print_tables(results)
    write_result(args.json, "benchmarks.scale", results, parameters=parameters, started=run_start)


def print_tables(results: dict[str, Any]) -> None:
    for size, row in results["sizes"].items():
        print(f"\n{int(size):,} records ({row['vector_search']} vector search)")
        print(f"{'measure':48} {'p50':>9} {'p95':>9} {'target':>8} {'CPU p50':>9}")
        for key, label, target in (
            ("limit_10", "retrieve, limit 10 (ms)", LIMIT_P50_TARGET_MS),
            ("budget_2048", "retrieve, 2,048-token budget fill (ms)", BUDGET_P50_TARGET_MS),
            ("limit_10_fresh_queries", "retrieve, limit 10, new questions (ms)", None),
        ):
            m = row[key]
            shown = f"<= {target:.0f}" if target else ""
            cpu = f"{m['cpu_p50_ms']:9.2f}" if "cpu_p50_ms" in m else ""
            print(f"{label:48} {m['p50_ms']:9.2f} {m['p95_ms']:9.2f} {shown:>8} {cpu}")
        store = row["store"]
        print(f"{'store rate (records/s, ' + store['path'] + ')':48} {store['records_per_s']:9.1f}")
        print(f"{'open (ms)':48} {row['open_ms']:9.1f}")
        print(f"{'first retrieve after open (ms)':48} {row['first_retrieve_ms']:9.1f}")
        print(
            f"{'  of it: vectors loaded and clustered (ms)':48} {row['load_vectors_and_clusters_ms']:9.1f}"
        )
        print(f"{'RSS after open + 2 retrievals, fresh process (MiB)':48} {row['rss_mb']:9.1f}")
        recall = row["recall"]
        print(
            f"{'recall@10 vs exact (' + str(recall['queries']) + ' queries)':48} "
            f"{recall['recall_at_k']:9.4f}"
        )


if __name__ == "__main__":
    main()

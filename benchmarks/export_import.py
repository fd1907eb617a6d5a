"""Export and import throughput of one owner on the embedded backend, with the default embedder.

Run from the repo root: `PYTHONPATH=core .venv/bin/python -m benchmarks.export_import [--quick]`.
Each size stores that many conversational turns (fast ingest, then materialization) in a fresh
data directory, exports the owner to an NDJSON file, imports the file into a second fresh
directory (every node embedded again) and checks that five queries return the same ranked
node ids and the same context in both. Import time is mostly embedding; it is reported, not
asserted.

The source is reindexed before the export: materialization passes take a fast-ingest batch's
work in id order, so a turn may be indexed before the turn said just before it and keep a
session vector mixed with an older one (see "Session-context vectors" in docs/architecture.md);
an import indexes in time order, which is what a reindex gives.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.results import RESULTS_DIR, start_run, write_result
from prme.client import MemoryClient

SIZES = (2_000,)
QUICK_SIZES = (300,)
USER = "bench-export"
QUERIES = (
    "Where did they travel last summer?",
    "What does Maria cook on Sundays?",
    "Which book was recommended?",
    "When is the next concert?",
    "Who adopted a dog?",
)
_TOPICS = (
    "Maria cooks paella on Sundays with her brother number {i}.",
    "We travelled to Porto last summer and visited bridge {i}.",
    "Tom recommended the book about lighthouse {i}.",
    "The next concert is on the {d}th, in hall {i}.",
    "Ana adopted a dog called Biscuit {i} from the shelter.",
    "I keep forgetting the password of account {i}.",
)


def _turns(count: int) -> list[dict[str, Any]]:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    return [
        {
            "content": _TOPICS[i % len(_TOPICS)].format(i=i, d=1 + i % 28),
            "speaker": "Maria" if i % 2 else "Tom",
            "session_id": f"session-{i // 20}",
            "event_time": (start + timedelta(minutes=7 * i)).isoformat(),
        }
        for i in range(count)
    ]


def _fill(memory: MemoryClient, count: int) -> None:
    turns = _turns(count)
    for begin in range(0, count, 40):
        memory.ingest_fast(turns[begin : begin + 40], user_id=USER)
    while memory.process_materializations(user_id=USER).pending:
        pass


def _answers(memory: MemoryClient) -> list[tuple[list[str], str]]:
    answers = []
    for query in QUERIES:
        response = memory.retrieve(query, user_id=USER)
        answers.append(([r.node_id for r in response.results], response.bundle.context))
    return answers


def measure(count: int, workdir: Path) -> dict[str, Any]:
    exported = workdir / f"export-{count}.ndjson"
    with MemoryClient(workdir / f"source-{count}") as source:
        _fill(source, count)
        source.reindex(user_id=USER)
        began = time.perf_counter()
        with exported.open("w", encoding="utf-8") as out:
            records = source.export_to(out, user_id=USER)
        export_s = time.perf_counter() - began
        before = _answers(source)
    with MemoryClient(workdir / f"target-{count}") as target:
        began = time.perf_counter()
        with exported.open(encoding="utf-8") as lines:
            totals = target.import_from(lines, user_id=USER)
        import_s = time.perf_counter() - began
        after = _answers(target)
    return {
        "memories": count,
        "records": records,
        "file_bytes": exported.stat().st_size,
        "export_s": round(export_s, 3),
        "export_records_per_s": round(records / export_s),
        "import_s": round(import_s, 3),
        "import_records_per_s": round(totals.records / import_s),
        "pending_after_import": totals.pending,
        "same_retrieval": before == after,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small size, for CI")
    args = parser.parse_args(argv)
    run_start = start_run()
    sizes = QUICK_SIZES if args.quick else SIZES
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(count, Path(tmp)) for count in sizes]
    print(
        "| memories | records | file MB | export s | export rec/s | import s | import rec/s | same retrieval |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['memories']} | {r['records']} | {r['file_bytes'] / 1e6:.2f} | {r['export_s']} "
            f"| {r['export_records_per_s']} | {r['import_s']} | {r['import_records_per_s']} "
            f"| {r['same_retrieval']} |"
        )
    write_result(
        RESULTS_DIR / "export_import.json",
        "benchmarks.export_import",
        {"rows": rows},
        parameters={"quick": args.quick, "sizes": list(sizes)},
        started=run_start,
        argv=argv,
    )
    return 0 if all(r["same_retrieval"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

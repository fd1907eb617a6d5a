"""Cold start of an embedded process: what a fresh `MemoryClient`, `prme serve`, `prme mcp` or
CLI command pays before its first answers.

Run: `.venv/bin/python -m benchmarks.embedded_cold_start [--quick] [--rounds N] [--json PATH]
[--compare DIR]`.

For each size (500, 2,000 and 10,000 records; `--quick`: 500) a data directory is filled once
with the default embedder. Each measurement is a new interpreter (`python -I`: no user site,
no PRME_* or PYTHON* variables but the cache directories given) on a copy of that directory,
timing the import of `prme.client`, opening a `MemoryClient`, and its first calls, in one of
two orders: a store then two retrieves, or (a process that only reads, like `prme retrieve`)
two retrieves then a store. With a cold cache the process gets an empty model and tokenizer
cache directory; with a warm one, the directory an earlier process filled. Bytecode is
compiled once into a private prefix (`-X pycache_prefix`), as an installed package has it.
Medians over the rounds; targets (300 ms for the first store and the first retrieve) are
reported, never asserted. `--compare DIR` measures another checkout's code (e.g. main's) on
the same data, alternating with this one's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import store_retrieve
from benchmarks.embedder_speed import conversational_sentences
from benchmarks.results import start_run, write_result
from prme.backends.embedded.service import open_embedded
from prme.client import DEFAULT_USER_ID
from prme.model.records import OwnerKey
from prme.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
FIRST_CALL_TARGET_MS = 300.0
OWNER = OwnerKey(tenant_id=Settings().tenant_id, owner_id=DEFAULT_USER_ID)
STEPS = ("import", "open", "first_store", "first_retrieve", "second_retrieve")

# Runs in the fresh interpreter: argv is source root, data dir, order ("store" or "retrieve").
CHILD = """
import json, sys, time
sys.path[:0] = [sys.argv[1] + "/core", sys.argv[1]]
started = time.perf_counter()
from prme.client import MemoryClient
imported = time.perf_counter()
client = MemoryClient(sys.argv[2])
opened = time.perf_counter()
out = {"import": imported - started, "open": opened - imported}
def store(name):
    t = time.perf_counter()
    client.store("I moved the dentist appointment to Friday afternoon.", session_id="cold")
    out[name] = time.perf_counter() - t
def retrieve(name, query):
    t = time.perf_counter()
    client.retrieve(query, limit=10)
    out[name] = time.perf_counter() - t
if sys.argv[3] == "store":
    store("first_store")
    retrieve("first_retrieve", "When is the dentist appointment?")
    retrieve("second_retrieve", "What did my sister book?")
else:
    retrieve("first_retrieve", "When is the dentist appointment?")
    retrieve("second_retrieve", "What did my sister book?")
    store("first_store")
client.close()
print(json.dumps({k: v * 1000 for k, v in out.items()}))
"""


def seed(directory: Path, count: int) -> float:
    """Fill a data directory with `count` records (MiniLM vectors); returns seconds taken."""
    started = time.perf_counter()
    backend = open_embedded(directory)
    store_retrieve.OWNER = OWNER
    store_retrieve.fill(backend, conversational_sentences(count, seed=count))
    backend.close()
    return time.perf_counter() - started


def child_env(cache: Path) -> dict[str, str]:
    """The parent's environment without PRME_* settings, with `cache` as every cache dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRME_")}
    env[Settings.env_name("model_cache_dir")] = str(cache / "model")
    env["PRME_TOKENIZER_CACHE_DIR"] = str(cache / "tokenizer")
    return env


def run_child(
    source: Path, seed_dir: Path, work: Path, cache: Path, order: str
) -> dict[str, float]:
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(seed_dir, data)
    command = [
        sys.executable,
        "-I",
        "-X",
        f"pycache_prefix={work.parent / 'pycache'}",
        "-c",
        CHILD,
        str(source),
        str(data),
        order,
    ]
    done = subprocess.run(
        command, env=child_env(cache), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"child failed:\n{done.stderr}")
    timings: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return timings


def measure(
    sources: dict[str, Path], seed_dir: Path, tmp: Path, rounds: int
) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """Timings by code, cache state and order. Codes, cache states and orders alternate within
    every round, so the machine's load falls on all of them alike."""
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    warm = {label: tmp / f"warm-cache-{label}" for label in sources}
    for label, source in sources.items():
        # Compiles bytecode into the prefix and fills the warm cache; not counted.
        run_child(source, seed_dir, work, warm[label], "store")
    samples: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    for round_index in range(rounds):
        for label, source in sources.items():
            for order in ("store", "retrieve"):
                cold_cache = tmp / f"cold-cache-{label}-{round_index}-{order}"
                samples.setdefault((label, "cold", order), []).append(
                    run_child(source, seed_dir, work, cold_cache, order)
                )
                shutil.rmtree(cold_cache, ignore_errors=True)
                samples.setdefault((label, "warm", order), []).append(
                    run_child(source, seed_dir, work, warm[label], order)
                )
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for (label, cache, order), runs in samples.items():
        out.setdefault(label, {}).setdefault(cache, {})[order] = {
            "median_ms": {step: statistics.median(r[step] for r in runs) for step in STEPS},
            "runs_ms": runs,
        }
    return out


def print_table(results: dict[str, Any]) -> None:
    print(
        f"{'records':>8} {'code':10} {'cache':6} {'first call':10} {'import':>8} {'open':>7} "
        f"{'1st store':>10} {'1st retr.':>10} {'2nd retr.':>10}  (median ms)"
    )
    for size, timings in results["sizes"].items():
        for label, by_cache in timings.items():
            for cache, by_order in by_cache.items():
                for order, row in by_order.items():
                    m = row["median_ms"]
                    print(
                        f"{int(size):>8,} {label:10} {cache:6} {order:10} {m['import']:8.0f} "
                        f"{m['open']:7.0f} {m['first_store']:10.0f} {m['first_retrieve']:10.0f} "
                        f"{m['second_retrieve']:10.0f}"
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="500 records, 1 round")
    parser.add_argument("--rounds", type=int, default=None, help="runs per cell (default 5)")
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        help="another checkout (e.g. main's worktree) measured alongside, as 'compared'",
    )
    parser.add_argument(
        "--json", type=Path, default=REPO_ROOT / "benchmarks/results/embedded_cold_start.json"
    )
    args = parser.parse_args()
    run_start = start_run()
    sizes = [500] if args.quick else [500, 2_000, 10_000]
    rounds = args.rounds or (1 if args.quick else 5)
    parameters: dict[str, Any] = {
        "quick": args.quick,
        "rounds": rounds,
        "sizes": sizes,
        "compared": str(args.compare.resolve()) if args.compare else None,
        "target_ms": {"first_store": FIRST_CALL_TARGET_MS, "first_retrieve": FIRST_CALL_TARGET_MS},
    }
    # A shared machine's load around the run: the timings' context.
    results: dict[str, Any] = {"load_average_start": list(os.getloadavg()), "sizes": {}}
    sources = {"this": REPO_ROOT}
    if args.compare:
        sources["compared"] = args.compare.resolve()
    with tempfile.TemporaryDirectory(prefix="prme-cold-") as name:
        tmp = Path(name)
        for size in sizes:
            seed_dir = tmp / f"seed-{size}"
            seconds = seed(seed_dir, size)
            print(f"filled {size:,} records in {seconds:.0f} s", flush=True)
            results["sizes"][str(size)] = measure(sources, seed_dir, tmp, rounds)
            shutil.rmtree(seed_dir)
    results["load_average_end"] = list(os.getloadavg())
    print_table(results)
    write_result(
        args.json,
        "benchmarks.embedded_cold_start",
        results,
        parameters=parameters,
        started=run_start,
    )


if __name__ == "__main__":
    main()

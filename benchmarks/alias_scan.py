"""Alias scan cost at 1,000 / 2,000 / 5,000 entity names that share words (embedded backend).

Run from the repo root: `PYTHONPATH=core .venv/bin/python -m benchmarks.alias_scan [--quick]`.
Each size gets a fresh data directory; a last case at 5,000 names of a few syllables is
the worst case for the blocks (many names one letter apart), where per-name caps apply. Scans run with the default budget until one reports
its scan complete (a run also stops after 200 new proposals), then a rescan with nothing
new measures the comparing alone, with tracemalloc on for its peak Python allocation. The
maintenance function's limit is reported as pass/fail, never asserted.
"""

from __future__ import annotations

import argparse
import random
import resource
import string
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.results import start_run, write_result
from prme.embedding.hashing import HashingEmbedder
from prme.engine.alias_names import name_key
from prme.engine.aliases import DEFAULT_MAX_PAIRS, MAX_SCAN_NAMES, AliasScanReport
from prme.engine.service import MemoryEngine
from prme.model.enums import NodeType
from prme.model.inputs import StoreInput
from prme.model.records import OwnerKey

SIZES = (1_000, 2_000, 5_000)
QUICK_SIZES = (300, 600)
# The worst case for the letter-pair blocks: names from a few syllables, so many are one
# letter apart and the per-name caps come into play.
DENSE_SIZE = 5_000
QUICK_DENSE_SIZE = 600
# The maintenance function's timeout; a scan run should stay well inside it.
MAINTENANCE_LIMIT_S = 120.0
MAX_RUNS = 50
OWNER = OwnerKey(tenant_id="local", owner_id="bench-alias-scan")
# Words many names share, as streets, banks and families do.
_SHARED = ["Street", "Bank", "Smith", "Group", "Park", "Hotel", "Road", "Lake"]
_TITLES = ["Dr.", "Mr.", "Ms.", "Prof."]


def shared_word_names(count: int, seed: int) -> list[str]:
    """`count` distinct names, each ending in one of eight shared words (one name in eight
    shares each), one in ten of them a variant of another: a letter left out, a title,
    a designator, or the initials of a three-word name."""
    rng = random.Random(seed)

    def word() -> str:
        return "".join(rng.choices(string.ascii_lowercase, k=rng.randint(5, 9))).title()

    names: dict[str, None] = {}
    bases = count - count // 10
    while len(names) < bases:
        middle = f" {word()}" if rng.random() < 0.3 else ""
        names[f"{word()}{middle} {rng.choice(_SHARED)}"] = None
    for base in rng.sample(list(names), count // 10):
        words = base.split()
        choice = rng.randrange(4)
        if choice == 0:
            k = rng.randrange(1, len(words[0]))
            variant = " ".join([words[0][:k] + words[0][k + 1 :], *words[1:]])
        elif choice == 1:
            variant = f"{rng.choice(_TITLES)} {base}"
        elif choice == 2:
            variant = f"{base} Inc."
        else:
            variant = "".join(w[0] for w in words) if len(words) == 3 else f"The {base}"
        names[variant] = None
    while len(names) < count:  # a variant that repeated a name
        names[f"{word()} {rng.choice(_SHARED)}"] = None
    ordered = list(names)
    rng.shuffle(ordered)
    return ordered


def dense_names(count: int, seed: int) -> list[str]:
    """`count` distinct names of two to four syllables (from 90) and one shared word."""
    rng = random.Random(seed)
    consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
    names: dict[str, None] = {}
    while len(names) < count:
        syllables = rng.randint(2, 4)
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables))
        names[f"{word.title()} {rng.choice(_SHARED[:2])}"] = None
    return list(names)


def pairs_sharing_a_word(names: list[str]) -> int:
    """Pairs the scan before candidate blocking compared at least (every pair with a word
    in common)."""
    frequency: Counter[str] = Counter()
    for name in names:
        frequency.update(name_key(name).core_set)
    return sum(n * (n - 1) // 2 for n in frequency.values())


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def measure(engine: MemoryEngine, size: int, *, dense: bool = False) -> dict[str, Any]:
    names = dense_names(size, seed=size) if dense else shared_word_names(size, seed=size)
    t0 = time.perf_counter()
    for name in names:
        engine.store(OWNER, StoreInput(content=name, node_type=NodeType.ENTITY))
    store_s = time.perf_counter() - t0

    runs: list[dict[str, Any]] = []
    report: AliasScanReport | None = None
    while report is None or not report.complete:
        t0 = time.perf_counter()
        report = engine.propose_aliases(OWNER)
        runs.append(
            {
                "seconds": time.perf_counter() - t0,
                "pairs_compared": report.pairs_compared,
                "proposals_created": report.proposals_created,
                "complete": report.complete,
                "names_remaining": report.names_remaining,
                "names_capped": report.names_capped,
            }
        )
        if len(runs) >= MAX_RUNS:
            break

    tracemalloc.start()
    t0 = time.perf_counter()
    rescan = engine.propose_aliases(OWNER)
    rescan_s = time.perf_counter() - t0
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    return {
        "names": size,
        "dataset": "dense near-spellings" if dense else "shared words",
        "pairs_sharing_a_word": pairs_sharing_a_word(names),
        "store_s": store_s,
        "runs": runs,
        "runs_until_complete": len(runs),
        "pairs_compared": sum(r["pairs_compared"] for r in runs),
        "proposals_created": sum(r["proposals_created"] for r in runs),
        "scan_s": sum(r["seconds"] for r in runs),
        "slowest_run_s": max(r["seconds"] for r in runs),
        "complete": runs[-1]["complete"],
        "names_capped": max(r["names_capped"] for r in runs),
        "rescan": {
            "seconds_with_tracemalloc": rescan_s,
            "pairs_compared": rescan.pairs_compared,
            "proposals_created": rescan.proposals_created,
            "complete": rescan.complete,
            "traced_peak_mb": traced_peak / (1024 * 1024),
        },
        "process_peak_rss_mb": peak_rss_mb(),
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'dataset':>21} {'names':>6} {'pairs sharing a word':>21} {'pairs compared':>15} {'runs':>5} "
        f"{'scan s':>7} {'slowest run s':>14} {'proposals':>10} {'rescan peak MB':>15} "
        f"{'peak RSS MB':>12}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['dataset']:>21} {r['names']:>6} {r['pairs_sharing_a_word']:>21,} {r['pairs_compared']:>15,} "
            f"{r['runs_until_complete']:>5} {r['scan_s']:>7.2f} {r['slowest_run_s']:>14.2f} "
            f"{r['proposals_created']:>10} {r['rescan']['traced_peak_mb']:>15.1f} "
            f"{r['process_peak_rss_mb']:>12.0f}"
        )
    slowest = max(r["slowest_run_s"] for r in rows)
    verdict = "pass" if slowest < MAINTENANCE_LIMIT_S / 4 else "FAIL"
    print(
        f"slowest run {slowest:.1f} s against the maintenance function's "
        f"{MAINTENANCE_LIMIT_S:.0f} s (target: under a quarter of it): {verdict}"
    )


def main() -> None:
    from prme.backends.embedded.service import open_embedded

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    run_start = start_run()
    sizes = QUICK_SIZES if args.quick else SIZES
    out: Path = args.json or Path("benchmarks/results") / (
        "alias_scan_quick.json" if args.quick else "alias_scan.json"
    )
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    cases = [(size, False) for size in sizes]
    cases.append((QUICK_DENSE_SIZE if args.quick else DENSE_SIZE, True))
    for size, dense in cases:
        with tempfile.TemporaryDirectory() as tmp:
            backend = open_embedded(Path(tmp) / "data", embedder=HashingEmbedder())
            try:
                rows.append(measure(backend.engine, size, dense=dense))
            finally:
                backend.close()
        print(f"measured {size} names", file=sys.stderr, flush=True)
    results = {
        "backend": "embedded",
        "embedder": "HashingEmbedder (64 dimensions); the scan itself uses no embeddings",
        "budget": {"max_pairs_per_run": DEFAULT_MAX_PAIRS, "max_scan_names": MAX_SCAN_NAMES},
        "quick": args.quick,
        "sizes": rows,
        "wall_s": time.perf_counter() - started,
    }
    print_table(rows)
    write_result(
        out,
        "benchmarks.alias_scan",
        results,
        parameters={"quick": args.quick, "sizes": list(sizes)},
        started=run_start,
    )
    print(f"({results['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()

"""Retrieve A/B: retrieval latency and CPU time of the working tree against an earlier commit.

Run: `.venv/bin/python -m benchmarks.retrieve_ab --base REV --store DIR [--pairs 3]
[--json PATH]`, where DIR is a data directory `benchmarks.scale --data-dir` filled (for
example `DIR/scale10000`, the owner `local/scale`).

As `benchmarks.store_path_ab`: `--base` is checked out into a temporary git worktree and
fresh processes alternate, base then current, `--pairs` times. Each process asks the
scale benchmark's ten questions three times with limit 10 and three times filling a
2,048-token budget, after one warm-up round each, and reports wall and CPU p50. CPU time
is the steadier measure on a shared machine: waiting for a core does not count.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.results import base_worktree, start_run, write_result

REPO_ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = [
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

# Runs inside each measured process, with that side's code first on PYTHONPATH.
_MEASURE = """
import json, statistics, sys, time
from pathlib import Path
from prme.backends.embedded.service import open_embedded
from prme.model.inputs import RetrieveInput
from prme.model.records import OwnerKey
owner = OwnerKey(tenant_id="local", owner_id="scale")
questions = json.loads(sys.argv[2])
backend = open_embedded(Path(sys.argv[1]))
out = {}
for name, options in (("limit_10", {"limit": 10}), ("budget_2048", {"token_budget": 2048})):
    for q in questions:
        backend.engine.retrieve(owner, RetrieveInput(query=q, **options))
    wall, cpu = [], []
    for _ in range(3):
        for q in questions:
            t, c = time.perf_counter(), time.process_time()
            backend.engine.retrieve(owner, RetrieveInput(query=q, **options))
            wall.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
    out[name] = {"p50_ms": statistics.median(wall), "cpu_p50_ms": statistics.median(cpu)}
backend.close()
print(json.dumps(out))
"""


def measure(root: Path, store: Path) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": f"{root / 'core'}{os.pathsep}{root}"}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(store), json.dumps(QUESTIONS)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, dict[str, float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", required=True, help="the commit to compare against")
    parser.add_argument("--store", type=Path, required=True, help="a scale benchmark store")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/retrieve_ab.json"))
    args = parser.parse_args()
    run_start = start_run()
    git = shutil.which("git")
    if git is None:
        parser.error("git is needed to check out --base")
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"base": [], "current": []}
    with base_worktree(git, args.base) as (worktree, base_commit):
        for pair in range(1, args.pairs + 1):
            runs["base"].append(measure(worktree, args.store))
            runs["current"].append(measure(REPO_ROOT, args.store))
            print(f"pair {pair}: base {runs['base'][-1]}, current {runs['current'][-1]}")
    medians: dict[str, Any] = {
        side: {
            request: {
                measure_name: round(
                    statistics.median(r[request][measure_name] for r in side_runs), 2
                )
                for measure_name in ("p50_ms", "cpu_p50_ms")
            }
            for request in ("limit_10", "budget_2048")
        }
        for side, side_runs in runs.items()
    }
    for request in ("limit_10", "budget_2048"):
        b, c = medians["base"][request], medians["current"][request]
        print(
            f"{request}: wall p50 {b['p50_ms']:.2f} -> {c['p50_ms']:.2f} ms, "
            f"CPU p50 {b['cpu_p50_ms']:.2f} -> {c['cpu_p50_ms']:.2f} ms (medians of {args.pairs})"
        )
    write_result(
        args.json,
        "benchmarks.retrieve_ab",
        {"runs": runs, "medians": medians},
        parameters={
            "base": args.base,
            "base_commit": base_commit,
            "store": str(args.store),
            "pairs": args.pairs,
        },
        started=run_start,
    )


if __name__ == "__main__":
    main()

"""Store path A/B: the store latency of the working tree against an earlier commit.

Run: `.venv/bin/python -m benchmarks.store_path_ab --base REV [--pairs 5]
[--conversation 30] [--json PATH]`.

A shared machine's speed drifts by more than the differences worth measuring, so one run
of each side proves little. This checks out `--base` into a temporary git worktree and
alternates fresh processes, base then current, `--pairs` times. Each process stores one
LoCoMo conversation through `MemoryClient` (the protocol of `benchmarks.locomo_evidence`,
whose `load_conversation` and `store_conversation` both sides must have) after one
warm-up store, and reports its store p50. Prints every pair and the medians; never run it
beside other work.
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

from benchmarks.results import base_worktree, start_run, write_result

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo-dev"

# Runs inside each measured process, with that side's code first on PYTHONPATH.
_MEASURE = """
import json, statistics, sys, tempfile
from pathlib import Path
from benchmarks.locomo_evidence import load_conversation, store_conversation
from prme.client import MemoryClient
from prme.settings import Settings
conversation = load_conversation(Path(sys.argv[1]))
with tempfile.TemporaryDirectory() as tmp:
    client = MemoryClient(Path(tmp) / "memory", settings=Settings())
    client.store("warm-up", user_id="warm-up")
    stats = store_conversation(client, conversation, "ab", lambda message: None)
    client.close()
print(json.dumps({"p50_ms": statistics.median(stats.latencies_ms)}))
"""


def measure(root: Path, conversation: Path) -> float:
    env = {**os.environ, "PYTHONPATH": f"{root / 'core'}{os.pathsep}{root}"}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(conversation)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    p50: float = json.loads(done.stdout.strip().splitlines()[-1])["p50_ms"]
    return p50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", required=True, help="the commit to compare against")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--conversation", default="30", help="LoCoMo conversation name")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/store_path_ab.json"))
    args = parser.parse_args()
    run_start = start_run()
    conversation = args.data / f"{args.conversation}.json"
    git = shutil.which("git")
    if git is None:
        parser.error("git is needed to check out --base")
    base_p50: list[float] = []
    current_p50: list[float] = []
    with base_worktree(git, args.base) as (worktree, base_commit):
        for pair in range(1, args.pairs + 1):
            base_p50.append(measure(worktree, conversation))
            current_p50.append(measure(REPO_ROOT, conversation))
            print(
                f"pair {pair}: base {base_p50[-1]:.2f} ms, current {current_p50[-1]:.2f} ms",
                flush=True,
            )
    differences = [c - b for b, c in zip(base_p50, current_p50, strict=True)]
    result = {
        "base_p50_ms": base_p50,
        "current_p50_ms": current_p50,
        "base_median_ms": statistics.median(base_p50),
        "current_median_ms": statistics.median(current_p50),
        "median_difference_ms": statistics.median(differences),
        "pairs_current_faster": sum(d < 0 for d in differences),
    }
    print(
        f"store p50 median: base {result['base_median_ms']:.2f} ms, current "
        f"{result['current_median_ms']:.2f} ms, difference {result['median_difference_ms']:+.2f} "
        f"ms; current faster in {result['pairs_current_faster']} of {args.pairs} pairs"
    )
    write_result(
        args.json,
        "benchmarks.store_path_ab",
        result,
        parameters={
            "base": args.base,
            "base_commit": base_commit,
            "pairs": args.pairs,
            "conversation": args.conversation,
        },
        started=run_start,
    )


if __name__ == "__main__":
    main()

"""Ablation of the retrieval-quality techniques on LoCoMo: each row turns one off.

The techniques are those of `prme.retrieval.profiles.TECHNIQUES`, each turned off through
the settings that profile lists; `plain` turns every one off.

Run: `.venv/bin/python -m benchmarks.locomo_ablation [--quick] [--only NAME,...]
[--json PATH]`. Every row is one full `benchmarks.locomo_evidence` run in a fresh process
with one setting changed through its environment variable, so nothing else differs
between rows. The rows run one after another (never in parallel: latencies would
interfere). Prints a table and writes JSON with every row's overall numbers and those of each half of
the development split (`locomo_evidence.SPLITS`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.results import start_run, write_result
from prme.retrieval.profiles import TECHNIQUES, Technique
from prme.settings import Settings

DEFAULT_JSON = Path("benchmarks/results/locomo_ablation.json")

# Settings outside the retrieval profiles that the ablation also measures.
FILL_OFF = {Settings.env_name("retrieval.default_limit"): "10"}
RRF_K_60 = {Settings.env_name("scoring.rrf_k"): "60"}
PLAIN = {Settings.env_name("retrieval_profile"): "plain"}
RECENCY_ON = {Settings.env_name("scoring.rrf_recency_boost"): "0.25"}


def technique_off(technique: Technique) -> dict[str, str]:
    return {Settings.env_name(path): str(value) for path, value in technique.off.items()}


# (name, what it turns off, environment overrides); one row per technique of the profiles.
ROWS: list[tuple[str, str, dict[str, str]]] = [
    ("default", "everything on", {}),
    ("no_fill", "results capped at 10", FILL_OFF),
    *((f"no_{t.name}", f"no {t.name}", technique_off(t)) for t in TECHNIQUES),
    (
        "float32_weights",
        "float32 MiniLM weights",
        {Settings.env_name("minilm_precision"): "float32"},
    ),
    ("rrf_k_60", "rrf_k 60 instead of 20", RRF_K_60),
    ("plain", "profile plain", PLAIN),
    # The first release: no technique of the profiles but the current-state recency boost
    # (it predates them), a fixed limit of 10 and rrf_k 60.
    ("all_off", "all off (the starting point)", {**PLAIN, **FILL_OFF, **RRF_K_60, **RECENCY_ON}),
]


def run_row(env_overrides: dict[str, str], quick: bool, extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ablation-") as tmp:
        out = Path(tmp) / "row.json"
        command = [sys.executable, "-m", "benchmarks.locomo_evidence", "--json", str(out)]
        command += ["--quick"] if quick else []
        command += extra
        # Settings from the caller's environment would blur the rows: start from defaults.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRME_")}
        env.update(env_overrides)
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        results: dict[str, Any] = json.loads(out.read_text())["results"]
    overall = results["categories"]["overall"]
    return {
        "all_in_context_pct": overall["all_evidence_in_context_pct"],
        "multi_hop_pct": results["categories"]["1 multi-hop"].get("all_evidence_in_context_pct"),
        "top10_pct": overall["all_evidence_in_top10_pct"],
        "context_tokens_mean": overall["context_tokens_mean"],
        "retrieve_p50_ms": overall["retrieve_p50_ms"],
        "stores_per_s": results["store"]["stores_per_s"],
        # Each half of the development split apart (locomo_evidence.SPLITS), so a technique's
        # gain can be checked on both.
        "halves": {
            half: {
                "all_in_context_pct": split["overall"]["all_evidence_in_context_pct"],
                "multi_hop_pct": split["multi_hop"].get("all_evidence_in_context_pct"),
                "top10_pct": split["overall"]["all_evidence_in_top10_pct"],
            }
            for half, split in results.get("splits", {}).items()
        },
    }


def _half(row: dict[str, Any], half: str) -> str:
    numbers = row["halves"].get(half)
    if numbers is None:
        return "-"
    return (
        f"{numbers['all_in_context_pct']:.1f}/{numbers['multi_hop_pct'] or 0:.1f}/"
        f"{numbers['top10_pct']:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default=None, help="row names, e.g. default,no_neighbours")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--data", default=None, help="passed on to locomo_evidence")
    args = parser.parse_args()
    run_start = start_run()
    wanted = set(args.only.split(",")) if args.only else None
    extra = ["--data", args.data] if args.data else []
    rows: list[dict[str, Any]] = []
    baseline: dict[str, Any] | None = None
    print(
        f"{'configuration':32} {'in ctx':>7} {'diff':>6} {'multi':>6} {'top10':>6} "
        f"{'tokens':>7} {'p50 ms':>7} {'store/s':>8} {'A ctx/multi/top10':>18} "
        f"{'B ctx/multi/top10':>18}"
    )
    for name, label, overrides in ROWS:
        if wanted is not None and name not in wanted:
            continue
        print(f"  running {name} ...", file=sys.stderr, flush=True)
        row = {
            "name": name,
            "label": label,
            "env": overrides,
            **run_row(overrides, args.quick, extra),
        }
        if name == "default":
            baseline = row
        diff = row["all_in_context_pct"] - baseline["all_in_context_pct"] if baseline else 0.0
        row["diff_vs_default"] = diff if baseline else None
        rows.append(row)
        print(
            f"{label:32} {row['all_in_context_pct']:6.1f}% {diff:+6.1f} "
            f"{row['multi_hop_pct'] or 0:5.1f}% {row['top10_pct']:5.1f}% "
            f"{row['context_tokens_mean']:7.0f} {row['retrieve_p50_ms']:7.1f} "
            f"{row['stores_per_s']:8.1f} {_half(row, 'A'):>18} {_half(row, 'B'):>18}",
            flush=True,
        )
    write_result(
        args.json,
        "benchmarks.locomo_ablation",
        {"rows": rows},
        parameters={"quick": args.quick, "only": args.only, "data": args.data},
        started=run_start,
    )


if __name__ == "__main__":
    main()

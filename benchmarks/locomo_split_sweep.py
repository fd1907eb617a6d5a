"""Split-half sweep on LoCoMo: one half of the development conversations, several settings.

Run: `.venv/bin/python -m benchmarks.locomo_split_sweep --split A --configs JSON
[--data DIR] [--json PATH]`, where JSON maps a row name to engine settings, e.g.
`'{"default": {}, "share_0.2": {"scoring": {"weak_lexical_share": 0.2}}}'`.

Each conversation of the half (`locomo_evidence.SPLITS`) is stored once, with the default
settings, in a temporary directory; then every row reopens it with its settings and asks
every question as `benchmarks.locomo_evidence` does (same metrics, same evidence rules).
Only retrieval settings may differ between rows: settings that change what is stored
(vectors, segments) need a full `locomo_evidence` run each. Tune on one half, check the
other, keep a setting only when it helps both (docs/quality.md, "Split-half check").
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.locomo_evidence import (
    DEFAULT_DATA,
    SPLITS,
    Outcome,
    ask_conversation,
    load_conversation,
    store_conversation,
    summarize,
)
from benchmarks.results import start_run, write_result
from prme.client import MemoryClient
from prme.settings import Settings


def settings_with(engine: dict[str, Any]) -> Settings:
    return Settings(backend="embedded", engine=engine)


def row_summary(outcomes: list[Outcome]) -> dict[str, Any]:
    overall = summarize(outcomes)
    multi_hop = summarize([o for o in outcomes if o.question.category == 1])
    return {
        "all_in_context_pct": overall["all_evidence_in_context_pct"],
        "multi_hop_pct": multi_hop.get("all_evidence_in_context_pct"),
        "top10_pct": overall["all_evidence_in_top10_pct"],
        "retrieve_p50_ms": overall["retrieve_p50_ms"],
        "questions": overall["questions"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", choices=sorted(SPLITS), required=True)
    parser.add_argument("--configs", required=True, help="JSON: row name -> engine settings")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    run_start = start_run()
    configs: dict[str, dict[str, Any]] = json.loads(args.configs)
    out: Path = args.json or Path(f"benchmarks/results/locomo_split_sweep_{args.split}.json")
    started = time.perf_counter()
    outcomes: dict[str, list[Outcome]] = {name: [] for name in configs}
    with tempfile.TemporaryDirectory(prefix="locomo-sweep-") as tmp:
        for name in SPLITS[args.split]:
            conversation = load_conversation(args.data / f"{name}.json")
            path = Path(tmp) / name
            all_turns = {turn.dia_id for turn in conversation.turns}
            with MemoryClient(path, settings=settings_with({})) as client:
                stats = store_conversation(client, conversation, f"locomo-{name}")
            for row, engine in configs.items():
                with MemoryClient(path, settings=settings_with(engine)) as client:
                    asked = ask_conversation(
                        client, conversation, stats.node_to_dia, kept_ids=all_turns
                    )
                    outcomes[row] += asked.outcomes
    rows = {
        row: {"settings": configs[row], **row_summary(found)} for row, found in outcomes.items()
    }
    for row, numbers in rows.items():
        print(
            f"{row:24} half {args.split}: all in ctx {numbers['all_in_context_pct']:5.1f}%  "
            f"multi-hop {numbers['multi_hop_pct'] or 0:5.1f}%  top10 {numbers['top10_pct']:5.1f}%  "
            f"p50 {numbers['retrieve_p50_ms']:.1f} ms"
        )
    write_result(
        out,
        "benchmarks.locomo_split_sweep",
        {"rows": rows, "wall_s": time.perf_counter() - started},
        parameters={
            "split": args.split,
            "conversations": list(SPLITS[args.split]),
            "data": str(args.data),
            "configs": configs,
        },
        started=run_start,
    )


if __name__ == "__main__":
    main()

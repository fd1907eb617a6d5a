"""int8 against float32 MiniLM weights on a store's embedding, measured side by side.

Run: `.venv/bin/python -m benchmarks.precision_ab [--quick] [--json PATH]`. Both embedders
are loaded in one process and embed the same chat turns (two or three sentences each, as a
store embeds a record: its sentences in one `embed_segmented` call), alternating which
precision goes first, so that a busy or drifting machine slows both alike. The figure to
quote is the median of the per-turn ratios (float32 time / int8 time); the separate p50s
are shown too but depend on the machine's load.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.embedder_speed import conversational_sentences
from benchmarks.results import start_run, write_result
from prme.embedding.minilm import MiniLmEmbedder, Precision

PRECISIONS: tuple[Precision, Precision] = ("int8", "float32")


def chat_turns(count: int, seed: int = 23) -> list[list[str]]:
    """`count` turns of two or three chat sentences each, the same on every run."""
    rng = random.Random(seed)
    sentences = conversational_sentences(count * 3, seed=seed)
    turns: list[list[str]] = []
    at = 0
    for _ in range(count):
        size = rng.choice((2, 3))
        turns.append(sentences[at : at + size])
        at += size
    return turns


def measure(turns: list[list[str]], passes: int) -> dict[str, Any]:
    embedders = {precision: MiniLmEmbedder(precision=precision) for precision in PRECISIONS}
    for embedder in embedders.values():
        embedder.embed_segmented(turns[:8])  # build the graph, warm the caches
    times: dict[str, list[float]] = {precision: [] for precision in PRECISIONS}
    ratios: list[float] = []
    for n in range(passes * len(turns)):
        turn = turns[n % len(turns)]
        order = PRECISIONS if n % 2 == 0 else PRECISIONS[::-1]
        taken: dict[str, float] = {}
        for precision in order:
            tick = time.perf_counter()
            embedders[precision].embed_segmented([turn])
            taken[precision] = (time.perf_counter() - tick) * 1000
            times[precision].append(taken[precision])
        ratios.append(taken["float32"] / taken["int8"])
    return {
        "turns": len(turns),
        "passes": passes,
        "p50_ms": {precision: round(statistics.median(t), 3) for precision, t in times.items()},
        "float32_over_int8_median_ratio": round(statistics.median(ratios), 3),
        "float32_over_int8_ratio_quartiles": [
            round(q, 3) for q in statistics.quantiles(ratios, n=4)
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="50 turns once instead of 200 x 3")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/precision_ab.json"))
    args = parser.parse_args()
    run_start = start_run()
    count, passes = (50, 1) if args.quick else (200, 3)
    result = measure(chat_turns(count), passes)
    p50 = result["p50_ms"]
    print(f"store embedding of a chat turn, {count} turns x {passes}, alternating:")
    for precision in PRECISIONS:
        print(f"  {precision:8} p50 {p50[precision]:7.2f} ms")
    print(
        f"  float32 / int8, median of per-turn ratios: {result['float32_over_int8_median_ratio']}"
    )
    write_result(
        args.json,
        "benchmarks.precision_ab",
        result,
        parameters={"turns": count, "passes": passes, "precisions": list(PRECISIONS)},
        started=run_start,
    )


if __name__ == "__main__":
    main()

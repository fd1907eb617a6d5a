"""Speed of the offline MiniLM embedder: cold load, single-sentence latency, batched throughput.

Run from the repo root:
`PYTHONPATH=core .venv/bin/python -m benchmarks.embedder_speed [--quick] [--precision int8|float32]`.
Targets are reported as pass/fail, never asserted: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.results import start_run, write_result
from prme.embedding.minilm import MiniLmEmbedder, Precision

SINGLE_TARGET_MS = 5.0
BATCH_TARGET_PER_S = 300.0
BATCH_SIZE = 32

_SUBJECTS = ["I", "My sister", "Our team", "The doctor", "My landlord", "We", "Alex", "The client"]
_VERBS = ["moved", "booked", "cancelled", "mentioned", "prefers", "asked about", "forgot", "paid"]
_OBJECTS = [
    "the dentist appointment",
    "a flight to Lisbon",
    "the quarterly report",
    "oat milk in coffee",
    "the rent for March",
    "a vegetarian restaurant near the office",
    "the password for the shared drive",
    "the birthday party on Saturday",
]
_TAILS = [
    "",
    " last week",
    " because the old one was too expensive",
    " and wants a reminder two days before",
    ", but only if it does not rain, otherwise we stay home and watch a film instead",
    " after the meeting with the insurance company ran late again on Thursday afternoon",
]


def conversational_sentences(count: int, seed: int = 7) -> list[str]:
    """Varied chat-like sentences (roughly 5 to 30 tokens), the same on every run."""
    rng = random.Random(seed)
    return [
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}{rng.choice(_TAILS)}."
        for _ in range(count)
    ]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def measure(quick: bool, precision: Precision = "int8") -> dict[str, Any]:
    single_runs = 50 if quick else 200
    batch_sentences = 256 if quick else 1024
    batch_repeats = 1 if quick else 3

    started = time.perf_counter()
    embedder = MiniLmEmbedder(precision=precision)
    embedder.embed(["warm up the model"])
    cold_load_s = time.perf_counter() - started

    sentence = "I moved the dentist appointment to Friday."
    for _ in range(20):
        embedder.embed([sentence])
    latencies: list[float] = []
    for _ in range(single_runs):
        tick = time.perf_counter()
        embedder.embed([sentence])
        latencies.append((time.perf_counter() - tick) * 1000.0)

    texts = conversational_sentences(batch_sentences)
    batches = [texts[i : i + BATCH_SIZE] for i in range(0, len(texts), BATCH_SIZE)]
    embedder.embed(batches[0])
    rates: list[float] = []
    for _ in range(batch_repeats):
        tick = time.perf_counter()
        for batch in batches:
            embedder.embed(batch)
        rates.append(len(texts) / (time.perf_counter() - tick))

    # The same sentences in one call: the embedder sorts them by length before batching, so
    # batches carry less padding than the caller's arbitrary chunks above.
    one_call_rates: list[float] = []
    for _ in range(batch_repeats):
        tick = time.perf_counter()
        embedder.embed(texts)
        one_call_rates.append(len(texts) / (time.perf_counter() - tick))

    single_p50 = statistics.median(latencies)
    batch_rate = statistics.median(rates)
    return {
        "model": embedder.model.key,
        "quick": quick,
        "cold_load_s": round(cold_load_s, 3),
        "single": {
            "runs": single_runs,
            "p50_ms": round(single_p50, 3),
            "p95_ms": round(percentile(latencies, 0.95), 3),
            "target_ms": SINGLE_TARGET_MS,
            "pass": single_p50 <= SINGLE_TARGET_MS,
        },
        "batched": {
            "sentences": len(texts),
            "batch_size": BATCH_SIZE,
            "repeats": batch_repeats,
            "sentences_per_s": round(batch_rate, 1),
            "one_call_sentences_per_s": round(statistics.median(one_call_rates), 1),
            "target_per_s": BATCH_TARGET_PER_S,
            "pass": batch_rate >= BATCH_TARGET_PER_S,
        },
    }


def print_table(result: dict[str, Any]) -> None:
    single, batched = result["single"], result["batched"]
    count = batched["sentences"]
    rows = [
        ("cold load (build graph + first call)", f"{result['cold_load_s']:.2f} s", "", ""),
        (
            "single sentence p50",
            f"{single['p50_ms']:.2f} ms",
            f"<= {SINGLE_TARGET_MS:g} ms",
            "PASS" if single["pass"] else "FAIL",
        ),
        ("single sentence p95", f"{single['p95_ms']:.2f} ms", "", ""),
        (
            f"batched ({count} in calls of {BATCH_SIZE})",
            f"{batched['sentences_per_s']:.0f} /s",
            f">= {BATCH_TARGET_PER_S:.0f} /s",
            "PASS" if batched["pass"] else "FAIL",
        ),
        (
            f"batched ({count} in one call, sorted)",
            f"{batched['one_call_sentences_per_s']:.0f} /s",
            "",
            "",
        ),
    ]
    print(f"{result['model']}  ({os.cpu_count()} CPUs)")
    print(f"{'measure':<40} {'value':>12} {'target':>12} {'result':>7}")
    for name, value, target, verdict in rows:
        print(f"{name:<40} {value:>12} {target:>12} {verdict:>7}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="where to write the results (default: benchmarks/results/embedder_speed.json, "
        "embedder_speed_float32.json for float32)",
    )
    parser.add_argument(
        "--precision",
        choices=["int8", "float32"],
        default="int8",
        help="MiniLM weights (default: %(default)s)",
    )
    args = parser.parse_args()
    run_start = start_run()
    suffix = "" if args.precision == "int8" else f"_{args.precision}"
    out: Path = args.json or Path(f"benchmarks/results/embedder_speed{suffix}.json")
    result = measure(quick=args.quick, precision=args.precision)
    print_table(result)
    write_result(
        out,
        "benchmarks.embedder_speed",
        result,
        parameters={"quick": args.quick, "precision": args.precision},
        started=run_start,
    )


if __name__ == "__main__":
    main()

"""What an active ranking profile adds to a retrieval: the lookup of the owner's profile (from
the process's cache, and from the store when the cache has expired) and retrieval p50 with
and without an active profile.

Run: `.venv/bin/python -m benchmarks.ranking_profile_cost [--records 500] [--rounds 10]
[--per-round 40] [--json benchmarks/results/ranking_profile_cost.json]`.

Embedded backend (SQLite) in a temporary directory, the hashing embedder (the lookup does not
depend on the model). Retrieval timings alternate in rounds between an owner without a profile,
the same owner with an active profile (cache on, as deployed), and with the cache off (one
store read per retrieval), each side taking each position of a round in turn, so a drift of
the shared machine hits every side alike; the table gives each side's median of its round
medians. The profile sets rrf_k only, which changes scores, not the work of a retrieval. Report only: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import cast

from benchmarks.results import start_run, write_result
from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.config import EngineConfig
from prme.engine.identity import Principal
from prme.engine.profile_cache import ActiveProfileCache
from prme.engine.ranking_profiles import profile_for_retrieval
from prme.engine.service import MemoryEngine
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.learning import ProfileEvaluation, RankingProfileInput, RankingWeights
from prme.model.records import OwnerKey

OWNER = OwnerKey(tenant_id="local", owner_id="bench")
OPERATOR = Principal.operator("local")
TOPICS = ("tea", "trains", "gardening", "chess", "jazz", "hiking", "bread", "astronomy")
QUERIES = ("what tea do I like", "when is the chess club", "which trail did we hike")


def _median_us(call: Callable[[], object], times: int) -> float:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1e6)
    return statistics.median(samples)


def _retrieve_ms(engine: MemoryEngine, count: int) -> float:
    samples = []
    for i in range(count):
        request = RetrieveInput(query=QUERIES[i % len(QUERIES)], limit=10)
        started = time.perf_counter()
        engine.retrieve(OWNER, request)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=40)
    parser.add_argument(
        "--json", type=Path, default=Path("benchmarks/results/ranking_profile_cost.json")
    )
    args = parser.parse_args()
    started = start_run()
    with tempfile.TemporaryDirectory() as tmp:
        backend = open_embedded(Path(tmp) / "memory", embedder=HashingEmbedder())
        try:
            result = _measure(backend.engine, args)
        finally:
            backend.close()
    parameters = {
        "records": args.records,
        "rounds": args.rounds,
        "per_round": args.per_round,
        "backend": "embedded (SQLite), hashing embedder",
    }
    write_result(
        args.json, "benchmarks.ranking_profile_cost", result, parameters=parameters, started=started
    )
    print(f"{'measure':<44} {'value':>10}")
    table = cast(dict[str, float], result["table"])
    for name, value in table.items():
        print(f"{name:<44} {value:>10.3f}")


def _measure(engine: MemoryEngine, args: argparse.Namespace) -> dict[str, object]:
    for i in range(args.records):
        topic = TOPICS[i % len(TOPICS)]
        engine.store(OWNER, StoreInput(content=f"Note {i}: I keep thinking about {topic} today."))
    profile = engine.create_ranking_profile(
        OWNER,
        RankingProfileInput(
            weights=RankingWeights(rrf_k=30),
            evaluation=ProfileEvaluation(
                holdout_size=50,
                metric="ndcg@10",
                baseline_metric=0.5,
                proposal_metric=0.6,
                gain=0.1,
                recommended=True,
                input_checksum="0" * 64,
            ),
        ),
    )
    deps = engine.deps
    uncached = MemoryEngine(
        replace(
            deps,
            config=deps.config.model_copy(update={"ranking_profile_cache_seconds": 0.0}),
            profile_cache=ActiveProfileCache(),
        )
    )
    # Lookups alone, the profile active: a cache hit, and a read of the store (cache off).
    on = engine.activate_ranking_profile(OWNER, profile.profile_id, actor=OPERATOR)
    hit_us = _median_us(lambda: profile_for_retrieval(deps, OWNER, None), 5000)
    read_us = _median_us(lambda: profile_for_retrieval(uncached.deps, OWNER, None), 2000)
    engine.deactivate_ranking_profile(OWNER, actor=OPERATOR, change_id=on.change_id, scopes=[])
    none_read_us = _median_us(lambda: profile_for_retrieval(uncached.deps, OWNER, None), 2000)

    sides: dict[str, list[float]] = {
        "no profile": [],
        "profile, cached": [],
        "profile, no cache": [],
    }
    names = list(sides)
    state = engine.get_active_ranking_profile(OWNER).state
    assert state is not None  # noqa: S101 - deactivated above
    for round_number in range(args.rounds):
        # Each side takes each position in turn, so an order effect falls on all alike.
        shift = round_number % len(names)
        for side in names[shift:] + names[:shift]:
            profiled = side != "no profile"
            if profiled != (state.active_profile_id is not None):
                state = (
                    engine.rollback_ranking_profile(
                        OWNER,
                        actor=OPERATOR,
                        change_id=state.change_id,
                        scopes=[],
                        profile_id=profile.profile_id,
                    )
                    if profiled
                    else engine.deactivate_ranking_profile(
                        OWNER, actor=OPERATOR, change_id=state.change_id, scopes=[]
                    )
                )
            measured = uncached if side == "profile, no cache" else engine
            _retrieve_ms(measured, 3)  # warm-up after the switch
            sides[side].append(_retrieve_ms(measured, args.per_round))
    p50 = {side: statistics.median(rounds) for side, rounds in sides.items()}
    return {
        "table": {
            "lookup, cache hit (us)": hit_us,
            "lookup, store read, profile active (us)": read_us,
            "lookup, store read, no profile (us)": none_read_us,
            "retrieve p50, no profile (ms)": p50["no profile"],
            "retrieve p50, profile active, cached (ms)": p50["profile, cached"],
            "retrieve p50, profile active, no cache (ms)": p50["profile, no cache"],
        },
        "round_medians_ms": sides,
        "cache_loads_during_run": deps.profile_cache.loads,
        "default_cache_seconds": EngineConfig().ranking_profile_cache_seconds,
    }


if __name__ == "__main__":
    main()

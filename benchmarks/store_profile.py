"""Where a store's time goes: a per-stage table of the embedded store path.

Run: `.venv/bin/python -m benchmarks.store_profile [--records 2000] [--skip 100]
[--data DIR] [--cprofile N] [--json PATH]`.

Stores LoCoMo turns through `MemoryClient` (the protocol of `benchmarks.locomo_evidence`:
speaker, role, session, event time and dia id metadata) into one user, conversation after
conversation, until `--records` memories are held, so the last stores run against about that
many records. The first `--skip` stores warm the process and are not counted.

Each stage is timed with `time.perf_counter_ns` by wrapping the function that does it (the
wrappers are installed by this script only; the product code has no counters). Times are
exclusive: a stage nested in another (the model run inside the embedding call) is taken out
of its parent's time, so the rows add up to the whole store. Prints ms per store and share
per stage, and writes JSON. `--cprofile N` also prints the N functions with the most own
time (cProfile slows every Python call, so its totals are not the table's).

Per-stage times are more robust than a store p50 on a shared machine: the embedding model's
share moves with the machine's load, the rest much less.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.embedder_speed import percentile
from benchmarks.locomo_evidence import (
    DEFAULT_DATA,
    Conversation,
    event_time,
    load_conversation,
    memory_content,
)
from benchmarks.results import start_run, write_result

DEFAULT_JSON = Path("benchmarks/results/store_profile.json")
DEFAULT_CONVERSATIONS = ("26", "30", "41", "42", "43")
USER_ID = "store-profile"
CLIENT = "client request and response"


@dataclass(frozen=True)
class Stage:
    """A timed stage: `owner.attribute` is wrapped (a class's method or a module's function)."""

    name: str
    owner: Any
    attribute: str
    what: str


class StageClock:
    """Exclusive nanoseconds per stage, of wall time and of the process's CPU time: a nested
    stage's time is taken out of its parent's. CPU time leaves out the time the process
    waited for a core, so it moves less than wall time with a shared machine's load."""

    def __init__(self) -> None:
        self.wall: dict[str, int] = {}
        self.cpu: dict[str, int] = {}
        self.counting = False
        # Wall nanoseconds in outermost stages, counted or not: the client's share is the rest.
        self.outermost_ns = 0
        self.outermost_cpu_ns = 0
        self._children: list[list[int]] = []

    def reset(self) -> None:
        self.wall, self.cpu = {}, {}

    def timed(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self._children.append([0, 0])
            started, started_cpu = time.perf_counter_ns(), time.process_time_ns()
            try:
                return function(*args, **kwargs)
            finally:
                cpu = time.process_time_ns() - started_cpu
                spent = time.perf_counter_ns() - started
                children, children_cpu = self._children.pop()
                if self._children:
                    self._children[-1][0] += spent
                    self._children[-1][1] += cpu
                else:
                    self.outermost_ns += spent
                    self.outermost_cpu_ns += cpu
                if self.counting:
                    self.wall[name] = self.wall.get(name, 0) + spent - children
                    self.cpu[name] = self.cpu.get(name, 0) + cpu - children_cpu

        return wrapper


def stages() -> list[Stage]:
    """The stages of one store, outermost first (imports deferred: the caller's code counts)."""
    import prme.engine.store as store_module
    from prme.backends.embedded.sqlite_index import SqliteVectorIndex
    from prme.backends.embedded.sqlite_ledger import SqliteLedger
    from prme.embedding.minilm import MiniLmEmbedder
    from prme.engine.service import MemoryEngine

    return [
        Stage(CLIENT, None, "", "MemoryClient.store outside the engine"),
        Stage("engine other", MemoryEngine, "store", "model copies, status, the rest"),
        Stage("idempotency lookup", store_module, "saved_result", "saved receipt of the key"),
        Stage("build records", store_module, "build_store_commit", "event, node, journal, work"),
        Stage("index other", store_module, "index_nodes", "sentence split, mixing, documents"),
        Stage("embed other", MiniLmEmbedder, "embed_segmented", "packing, mask, pooling"),
        Stage("tokenize", MiniLmEmbedder, "_tokenize", "the tokenizer"),
        Stage("model run", _SessionRun, "run", "onnxruntime session.run"),
        Stage("session predecessor", SqliteVectorIndex, "session_predecessors", "index read"),
        Stage("index write", SqliteVectorIndex, "upsert", "vector row, FTS row, generation"),
        Stage("ledger commit", SqliteLedger, "commit_store", "event, node, journal, work rows"),
        Stage("metering", store_module, "meter_write", "usage row"),
    ]


class _SessionRun:
    """Stands in for the embedder's onnxruntime session so its `run` can be timed."""

    run: Callable[..., Any]

    def __init__(self, session: Any) -> None:
        self._session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def _session_run(self: _SessionRun, *args: Any, **kwargs: Any) -> Any:
    return self._session.run(*args, **kwargs)


_SessionRun.run = _session_run


@contextmanager
def install(clock: StageClock) -> Iterator[None]:
    """Wrap every stage (and the embedder's session) while the `with` block runs."""
    from prme.embedding.minilm import MiniLmEmbedder

    saved: list[tuple[Any, str, Any]] = []
    for stage in stages():
        if stage.owner is None:
            continue  # the client's share: what the engine's stages leave of a store
        original = stage.owner.__dict__[stage.attribute]
        saved.append((stage.owner, stage.attribute, original))
        if isinstance(original, staticmethod):
            wrapped: Any = staticmethod(clock.timed(stage.name, original.__func__))
        else:
            wrapped = clock.timed(stage.name, original)
        setattr(stage.owner, stage.attribute, wrapped)
    load = MiniLmEmbedder.__dict__["_load_runtime"]

    def load_runtime(self: MiniLmEmbedder) -> Any:
        runtime = load(self)
        # The runtime is frozen; the profiler alone swaps its session for the timed stand-in.
        object.__setattr__(runtime, "session", _SessionRun(runtime.session))
        return runtime

    saved.append((MiniLmEmbedder, "_load_runtime", load))
    MiniLmEmbedder._load_runtime = load_runtime  # type: ignore[method-assign]
    try:
        yield
    finally:
        for owner, attribute, original in reversed(saved):
            setattr(owner, attribute, original)


def turns(conversations: list[Conversation]) -> Iterator[dict[str, Any]]:
    """The store arguments of every turn, conversation after conversation, as the LoCoMo
    benchmark stores them (each conversation's sessions named apart)."""
    for conversation in conversations:
        for session in conversation.sessions:
            for turn in session.turns:
                role = "user" if turn.speaker == conversation.speaker_a else "participant"
                yield {
                    "content": memory_content(turn),
                    "speaker": turn.speaker,
                    "role": role,
                    "session_id": f"{conversation.name}-session_{session.number}",
                    "event_time": event_time(session, turn),
                    "metadata": {"dia_id": turn.dia_id},
                }


def run(args: argparse.Namespace) -> dict[str, Any]:
    from prme.client import MemoryClient
    from prme.settings import Settings

    conversations = [load_conversation(args.data / f"{name}.json") for name in args.conversations]
    clock = StageClock()
    latencies_ms: list[float] = []
    cpu_ms: list[float] = []
    per_store: list[tuple[dict[str, int], dict[str, int]]] = []
    profiler = cProfile.Profile() if args.cprofile else None
    with install(clock), tempfile.TemporaryDirectory() as tmp:
        client = MemoryClient(Path(tmp) / "memory", settings=Settings())
        client.store("warm-up", user_id="warm-up")
        for number, arguments in enumerate(turns(conversations)):
            if number == args.records:
                break
            counted = number >= args.skip
            clock.counting = counted
            if counted and profiler is not None:
                profiler.enable()
            inside, inside_cpu = clock.outermost_ns, clock.outermost_cpu_ns
            started, started_cpu = time.perf_counter_ns(), time.process_time_ns()
            client.store(user_id=USER_ID, **arguments)
            cpu = time.process_time_ns() - started_cpu
            spent = time.perf_counter_ns() - started
            if profiler is not None:
                profiler.disable()
            if counted:
                latencies_ms.append(spent / 1e6)
                cpu_ms.append(cpu / 1e6)
                clock.wall[CLIENT] = spent - (clock.outermost_ns - inside)
                clock.cpu[CLIENT] = cpu - (clock.outermost_cpu_ns - inside_cpu)
                per_store.append((clock.wall, clock.cpu))
            clock.reset()
        client.close()
    if profiler is not None:
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(args.cprofile)
    return summarize(per_store, latencies_ms, cpu_ms)


def summarize(
    per_store: list[tuple[dict[str, int], dict[str, int]]],
    latencies_ms: list[float],
    cpu_ms: list[float],
) -> dict[str, Any]:
    """Each stage's mean and median wall time and mean CPU time over the counted stores.
    Medians are less moved by a busy machine's stalls; shares are of the summed means."""
    count = len(per_store)
    names = [stage.name for stage in stages()]
    means = {name: sum(wall.get(name, 0) for wall, _ in per_store) / count / 1e6 for name in names}
    cpus = {name: sum(cpu.get(name, 0) for _, cpu in per_store) / count / 1e6 for name in names}
    whole = sum(means.values())
    rows = [
        {
            "stage": stage.name,
            "what": stage.what,
            "ms_per_store": means[stage.name],
            "median_ms": statistics.median(wall.get(stage.name, 0) for wall, _ in per_store) / 1e6,
            "cpu_ms_per_store": cpus[stage.name],
            "share": means[stage.name] / whole if whole else 0.0,
        }
        for stage in stages()
    ]
    return {
        # A shared machine's load when the run ended: the table's context.
        "load_average": list(os.getloadavg()),
        "stores_counted": count,
        "store_ms": {
            "mean": statistics.fmean(latencies_ms),
            # The fastest tenth: the stores no other process got in the way of, nearest to
            # what an idle machine gives.
            "p10": percentile(latencies_ms, 0.10),
            "p50": statistics.median(latencies_ms),
            "p95": percentile(latencies_ms, 0.95),
            "cpu_mean": statistics.fmean(cpu_ms),
            "cpu_p50": statistics.median(cpu_ms),
        },
        "stages": rows,
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"{'stage':30} {'mean ms':>8} {'median':>8} {'cpu ms':>8} {'share':>7}  what")
    for row in result["stages"]:
        print(
            f"{row['stage']:30} {row['ms_per_store']:8.3f} {row['median_ms']:8.3f} "
            f"{row['cpu_ms_per_store']:8.3f} {row['share']:7.1%}  {row['what']}"
        )
    store = result["store_ms"]
    sums = [sum(row[key] for row in result["stages"]) for key in ("ms_per_store", "median_ms")]
    cpu = sum(row["cpu_ms_per_store"] for row in result["stages"])
    print(f"{'total':30} {sums[0]:8.3f} {sums[1]:8.3f} {cpu:8.3f}")
    print(
        f"store latency over {result['stores_counted']} stores: mean {store['mean']:.2f} ms, "
        f"p10 {store['p10']:.2f} ms, p50 {store['p50']:.2f} ms, p95 {store['p95']:.2f} ms; CPU time mean "
        f"{store['cpu_mean']:.2f} ms, p50 {store['cpu_p50']:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=2000, help="memories stored in all")
    parser.add_argument("--skip", type=int, default=100, help="first stores not counted")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--conversations",
        type=lambda text: tuple(text.split(",")),
        default=DEFAULT_CONVERSATIONS,
        help="LoCoMo conversation names, comma-separated",
    )
    parser.add_argument("--cprofile", type=int, default=0, help="also print N cProfile rows")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = parser.parse_args()
    if args.skip >= args.records:
        parser.error("--skip must be less than --records")
    run_start = start_run()
    import prme

    parameters = {
        "records": args.records,
        "skip": args.skip,
        "conversations": list(args.conversations),
        "cprofile": bool(args.cprofile),
        # The package measured: another checkout's when PYTHONPATH puts its `core` first.
        "prme_source": str(Path(prme.__file__).parent),
    }
    result = run(args)
    print_table(result)
    write_result(
        args.json, "benchmarks.store_profile", result, parameters=parameters, started=run_start
    )


if __name__ == "__main__":
    main()

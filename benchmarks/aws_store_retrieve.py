"""Store and retrieval on the AWS backend against the local AWS, with round trips per operation.

Needs the local AWS: `make local-aws-up` (or run inside `localstack/with_local_aws.sh`).
Run: `.venv/bin/python -m benchmarks.aws_store_retrieve [--quick]`. Two workloads, each in
its own fresh table and index: chat turns stored with a `session_id` (as a chat client
stores them, so each store also looks up its session's previous record), and the same
texts stored without one. Latencies here measure moto and a local OpenSearch node, not
AWS; the round-trip counts are what carry over.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.embedder_speed import conversational_sentences, percentile
from benchmarks.local_aws import fresh_aws
from benchmarks.results import start_run, write_result
from benchmarks.store_retrieve import OWNER, QUERIES
from prme.backends.aws.service import AwsBackend, AwsClients, open_aws
from prme.embedding.minilm import MiniLmEmbedder
from prme.model.enums import Role
from prme.model.inputs import RetrieveInput, StoreInput
from prme.settings import Settings


class RoundTrips:
    """Counts calls per service: botocore events for AWS, the transport for OpenSearch."""

    def __init__(self, clients: AwsClients) -> None:
        self.calls: Counter[str] = Counter()
        for name in ("dynamodb", "sqs"):
            client = getattr(clients, name)
            client.meta.events.register(
                "before-call",
                lambda model, name=name, **_: self.calls.update([f"{name}.{model.name}"]),
            )
        transport = clients.opensearch.transport
        original = transport.perform_request

        def counted(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            self.calls.update(
                [f"opensearch.{method} {url.split('?', maxsplit=1)[0].rsplit('/', 1)[-1]}"]
            )
            return original(method, url, *args, **kwargs)

        transport.perform_request = counted

    def take(self) -> Counter[str]:
        taken, self.calls = self.calls, Counter()
        return taken


def per_operation(counts: Counter[str], operations: int) -> dict[str, float]:
    return {name: round(n / operations, 2) for name, n in sorted(counts.items())}


# A chat as a client stores it: a session's turns in order, the owner and the assistant
# taking turns a minute apart, a new session every SESSION_TURNS turns.
SESSION_TURNS = 20
CHAT_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
WORKLOADS = ("chat_sessions", "no_session")


def workload_inputs(workload: str, texts: list[str]) -> list[StoreInput]:
    if workload == "no_session":
        return [StoreInput(content=text) for text in texts]
    return [
        StoreInput(
            content=text,
            session_id=f"chat-{i // SESSION_TURNS}",
            role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
            event_time=CHAT_START + timedelta(minutes=i),
        )
        for i, text in enumerate(texts)
    ]


def run_workload(
    workload: str, texts: list[str], embedder: MiniLmEmbedder, rounds: int
) -> dict[str, Any]:
    """Store `texts` into fresh resources, then run every query `rounds` times."""
    with fresh_aws(Settings(), "bench", dimension=embedder.model.dimension) as (settings, clients):
        # The deployed default: writes become searchable at the next refresh, and the index
        # adapter remembers its own recent session records for the predecessor lookup.
        backend: AwsBackend = open_aws(
            settings, embedder=embedder, clients=clients, refresh_on_write=False
        )
        try:
            trips = RoundTrips(clients)
            backend.engine.store(OWNER, StoreInput(content="warm-up"))
            trips.take()
            latencies = []
            for store in workload_inputs(workload, texts):
                t0 = time.perf_counter()
                backend.engine.store(OWNER, store)
                latencies.append((time.perf_counter() - t0) * 1000)
            store_trips = per_operation(trips.take(), len(texts))
            clients.opensearch.indices.refresh(index=settings.opensearch_index_alias)
            for query in QUERIES[:2]:
                backend.engine.retrieve(OWNER, RetrieveInput(query=query))
            trips.take()
            retrieve_latencies = []
            for _ in range(rounds):
                for query in QUERIES:
                    t0 = time.perf_counter()
                    backend.engine.retrieve(OWNER, RetrieveInput(query=query))
                    retrieve_latencies.append((time.perf_counter() - t0) * 1000)
            retrieve_trips = per_operation(trips.take(), len(retrieve_latencies))
        finally:
            backend.close()
    return {
        "memories": len(texts) + 1,
        "store": {
            "p50_ms": statistics.median(latencies),
            "p95_ms": percentile(latencies, 0.95),
            "round_trips_per_store": store_trips,
        },
        "retrieve": {
            "p50_ms": statistics.median(retrieve_latencies),
            "p95_ms": percentile(retrieve_latencies, 0.95),
            "round_trips_per_retrieve": retrieve_trips,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="100 stores instead of 500")
    parser.add_argument(
        "--json", type=Path, default=Path("benchmarks/results/aws_store_retrieve.json")
    )
    args = parser.parse_args()
    run_start = start_run()
    count = 100 if args.quick else 500
    rounds = 2 if args.quick else 5
    texts = conversational_sentences(count, seed=13)
    embedder = MiniLmEmbedder()
    results = {name: run_workload(name, texts, embedder, rounds) for name in WORKLOADS}
    print(f"aws backend on the local AWS ({count + 1} memories; latencies are moto's)")
    for name, row in results.items():
        store, retrieve = row["store"], row["retrieve"]
        print(f"{name}")
        print(f"  store     p50 {store['p50_ms']:7.2f} ms  p95 {store['p95_ms']:7.2f} ms")
        print(f"            round trips per store:    {store['round_trips_per_store']}")
        print(f"  retrieve  p50 {retrieve['p50_ms']:7.2f} ms  p95 {retrieve['p95_ms']:7.2f} ms")
        print(f"            round trips per retrieve: {retrieve['round_trips_per_retrieve']}")
    parameters = {
        "stores": count,
        "retrieve_rounds": rounds,
        "queries": len(QUERIES),
        "session_turns": SESSION_TURNS,
        "workloads": list(WORKLOADS),
        "embedder": embedder.model.name,
        "refresh_on_write": False,
    }
    write_result(
        args.json,
        "benchmarks.aws_store_retrieve",
        results,
        parameters=parameters,
        started=run_start,
    )


if __name__ == "__main__":
    main()

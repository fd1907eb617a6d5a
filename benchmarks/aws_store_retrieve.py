"""Store and retrieval on the AWS backend against the local AWS, with round trips per operation.

Needs the local AWS: `make local-aws-up` (or run inside `localstack/with_local_aws.sh`).
Run: `.venv/bin/python -m benchmarks.aws_store_retrieve [--quick]`. Latencies here measure
moto and a local OpenSearch node, not AWS; the round-trip counts are what carry over.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.embedder_speed import conversational_sentences, percentile
from benchmarks.local_aws import fresh_aws
from benchmarks.store_retrieve import OWNER, QUERIES
from prme.backends.aws.service import AwsBackend, AwsClients, open_aws
from prme.embedding.minilm import MiniLmEmbedder
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--json", type=Path, default=Path("benchmarks/results/aws_store_retrieve.json")
    )
    args = parser.parse_args()
    embedder = MiniLmEmbedder()
    with fresh_aws(Settings(), "bench", dimension=embedder.model.dimension) as (settings, clients):
        backend: AwsBackend = open_aws(
            settings, embedder=embedder, clients=clients, refresh_on_write=True
        )
        trips = RoundTrips(clients)
        count = 100 if args.quick else 500
        texts = conversational_sentences(count, seed=13)
        backend.engine.store(OWNER, StoreInput(content="warm-up"))
        trips.take()
        latencies = []
        for text in texts:
            t0 = time.perf_counter()
            backend.engine.store(OWNER, StoreInput(content=text))
            latencies.append((time.perf_counter() - t0) * 1000)
        store_trips = per_operation(trips.take(), count)
        # Writes become searchable at the next refresh (1 s by default); force it for the run.
        clients.opensearch.indices.refresh(index=settings.opensearch_index_alias)
        retrieve_latencies = []
        rounds = 2 if args.quick else 5
        for query in QUERIES[:2]:
            backend.engine.retrieve(OWNER, RetrieveInput(query=query))
        trips.take()
        for _ in range(rounds):
            for query in QUERIES:
                t0 = time.perf_counter()
                backend.engine.retrieve(OWNER, RetrieveInput(query=query))
                retrieve_latencies.append((time.perf_counter() - t0) * 1000)
        retrieve_trips = per_operation(trips.take(), len(retrieve_latencies))
        results: dict[str, Any] = {
            "memories": count + 1,
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
        print(f"aws backend on the local AWS ({count + 1} memories)")
        print(
            f"store     p50 {results['store']['p50_ms']:6.2f} ms  p95 {results['store']['p95_ms']:6.2f} ms"
        )
        print(f"          round trips per store:    {store_trips}")
        print(
            f"retrieve  p50 {results['retrieve']['p50_ms']:6.2f} ms  p95 {results['retrieve']['p95_ms']:6.2f} ms"
        )
        print(f"          round trips per retrieve: {retrieve_trips}")
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
        print(f"wrote {args.json}")
        backend.close()


if __name__ == "__main__":
    main()

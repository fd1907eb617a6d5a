"""How long a store and a retrieve take, and what they answer, when OpenSearch or DynamoDB hangs.

A hung dependency accepts connections and never answers (`localstack/hung_port.py`). Each
case runs under the request budget (`PRME_REQUEST_BUDGET_MS`, 25 s by default) as the
HTTP edge sets it; `--baseline` runs the same cases without a deadline (each call then waits
for the clients' own timeouts and retries: 30-40 s). Needs the local AWS.
Run: `.venv/bin/python -m benchmarks.hung_dependency [--quick] [--baseline]`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3

from benchmarks.local_aws import fresh_aws
from benchmarks.results import start_run, write_result
from benchmarks.store_retrieve import OWNER
from localstack.hung_port import HungPort
from prme.backends.aws.deadline_clients import DeadlineBoundClient
from prme.backends.aws.opensearch_index import build_opensearch_client
from prme.backends.aws.service import AwsClients, open_aws
from prme.embedding.hashing import HashingEmbedder
from prme.engine.deadlines import deadline_scope
from prme.errors import PrmeError, status_for
from prme.model.inputs import RetrieveInput, StoreInput
from prme.settings import Settings


def outcome_of(call: Callable[[], Any]) -> str:
    try:
        result = call()
    except PrmeError as exc:
        return f"{status_for(exc)} {type(exc).__name__}"
    status = getattr(result, "processing_status", None)
    if status is not None:
        return f"200 {status.value}"
    failures = result.metrics.backend_failures
    return f"200 degraded {failures}" if failures else "200"


def timed_case(call: Callable[[], Any], budget_s: float | None) -> dict[str, Any]:
    started = time.monotonic()
    with deadline_scope(budget_s):
        outcome = outcome_of(call)
    return {"seconds": round(time.monotonic() - started, 2), "outcome": outcome}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a 3 s budget instead of 25 s")
    parser.add_argument("--baseline", action="store_true", help="also run without a deadline")
    parser.add_argument(
        "--json", type=Path, default=Path("benchmarks/results/hung_dependency.json")
    )
    args = parser.parse_args()
    run_start = start_run()
    budget_s = 3.0 if args.quick else Settings().request_budget_ms / 1000
    embedder = HashingEmbedder()
    budgets: list[float | None] = [budget_s, None] if args.baseline else [budget_s]
    rows: list[dict[str, Any]] = []
    with (
        fresh_aws(Settings(), "hung", dimension=embedder.model.dimension) as (settings, clients),
        HungPort() as hung,
    ):
        healthy = open_aws(settings, embedder=embedder, clients=clients)
        healthy.engine.store(OWNER, StoreInput(content="a record to search for"))
        hung_index = replace(
            clients, opensearch=build_opensearch_client(hung.url, auth="none", region=None)
        )
        hung_table: AwsClients = replace(
            clients,
            dynamodb=DeadlineBoundClient(
                lambda config: boto3.client("dynamodb", endpoint_url=hung.url, config=config)
            ),
        )
        on_hung_index = open_aws(settings, embedder=embedder, clients=hung_index).engine
        on_hung_table = open_aws(settings, embedder=embedder, clients=hung_table).engine
        cases: list[tuple[str, Callable[[], Any]]] = [
            (
                "store, OpenSearch hung",
                lambda: on_hung_index.store(OWNER, StoreInput(content="said while it hung")),
            ),
            (
                "retrieve, OpenSearch hung",
                lambda: on_hung_index.retrieve(OWNER, RetrieveInput(query="record")),
            ),
            (
                "store, DynamoDB hung",
                lambda: on_hung_table.store(OWNER, StoreInput(content="never acknowledged")),
            ),
        ]
        for name, call in cases:
            for budget in budgets:
                rows.append({"case": name, "budget_s": budget, **timed_case(call, budget)})
        healthy.close()
    print(f"{'case':28} {'budget':>8} {'seconds':>8}  outcome")
    for row in rows:
        shown = "none" if row["budget_s"] is None else f"{row['budget_s']:.1f} s"
        print(f"{row['case']:28} {shown:>8} {row['seconds']:8.2f}  {row['outcome']}")
    write_result(
        args.json,
        "benchmarks.hung_dependency",
        {"cases": rows},
        parameters={"budget_s": budget_s, "baseline": args.baseline},
        started=run_start,
    )


if __name__ == "__main__":
    main()

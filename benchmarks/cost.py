"""What one store, ingest and retrieval costs on the AWS backend: DynamoDB capacity units, bytes
to DynamoDB and OpenSearch, OpenSearch round trips and SQS messages, against the local AWS.

Run: `.venv/bin/python -m benchmarks.cost [--quick]` with the local AWS up. Everything is
counted from outside the product: botocore events on the ledger's client, a wrapper on the
OpenSearch connections. docs/cost.md turns the numbers into dollars.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3

from benchmarks.dynamodb_units import index_write_units, item_size, read_units, write_units
from benchmarks.embedder_speed import conversational_sentences
from benchmarks.local_aws import fresh_aws
from benchmarks.results import start_run, write_result
from benchmarks.store_retrieve import OWNER, QUERIES
from prme.backends.aws.resources import (
    EXPIRING_PK,
    OWNER_PENDING_PK,
    PARTITION_KEY,
    PENDING_PK,
    SORT_KEY,
)
from prme.backends.aws.service import AwsBackend, AwsClients, open_aws
from prme.embedding.hashing import HashingEmbedder
from prme.model.inputs import IngestInput, RetrieveInput, StoreInput
from prme.model.limits import Limited, StoredAmount, TenantLimits
from prme.settings import Settings

# Production embeds with 1024 dimensions (Titan v2); vector bytes dominate OpenSearch traffic.
DIMENSION = 1024
MEMORY_CHARS = 250
LARGE_TOKEN_BUDGET = 200_000
GSI_KEYS = (OWNER_PENDING_PK, PENDING_PK, EXPIRING_PK)
_CAPACITY_OPERATIONS = {
    "GetItem",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "Query",
    "Scan",
    "BatchGetItem",
    "BatchWriteItem",
    "TransactWriteItems",
    "TransactGetItems",
}

Item = dict[str, dict[str, Any]]


@dataclass
class Tally:
    """Counts for one stretch of operations (reset between them)."""

    computed_wcu: float = 0.0
    computed_gsi_wcu: float = 0.0
    computed_rcu: float = 0.0
    moto_reported_capacity: float = 0.0
    moto_reported_calls: int = 0
    approximate_reads: int = 0
    dynamodb_request_bytes: int = 0
    dynamodb_response_bytes: int = 0
    dynamodb_calls: Counter[str] = field(default_factory=Counter)
    opensearch_request_bytes: int = 0
    opensearch_response_bytes: int = 0
    opensearch_calls: Counter[str] = field(default_factory=Counter)
    sqs_messages: int = 0
    largest_journal_item_bytes: int = 0
    journal_item_bytes: int = 0


def _key(item: Item) -> Item:
    return {name: item[name] for name in (PARTITION_KEY, SORT_KEY)}


def _touched(kind: str, body: dict[str, Any]) -> tuple[Item, str]:
    """The key and action of one write (`Put`, `Update`, ... or a batch's `PutRequest`)."""
    if kind in ("Put", "PutRequest"):
        return _key(body["Item"]), "put"
    actions = {"Update": "update", "Delete": "delete", "DeleteRequest": "delete"}
    return body["Key"], actions.get(kind, "check")


class Meter:
    """Counts what the backend's AWS calls cost, from botocore events and the OpenSearch
    connections. Items written are read again on a separate, unmetered client, before and
    after each write, because write units follow the larger of the two versions."""

    def __init__(self, clients: AwsClients, table: str) -> None:
        self.tally = Tally()
        self._table = table
        self._lock = threading.Lock()
        self._side = boto3.client("dynamodb")
        events = clients.dynamodb.meta.events
        events.register("before-parameter-build.dynamodb", self._before_dynamodb)
        events.register("request-created.dynamodb", self._request_created)
        events.register("after-call.dynamodb", self._after_dynamodb)
        clients.sqs.meta.events.register("before-parameter-build.sqs", self._before_sqs)
        for connection in clients.opensearch.transport.connection_pool.connections:
            self._wrap_opensearch(connection)

    def take(self) -> Tally:
        with self._lock:
            taken, self.tally = self.tally, Tally()
        return taken

    # DynamoDB

    def _current(self, key: Item) -> Item | None:
        found: Item | None = self._side.get_item(
            TableName=self._table, Key=key, ConsistentRead=True
        ).get("Item")
        return found

    def _written_keys(self, operation: str, params: dict[str, Any]) -> list[tuple[Item, str]]:
        """(key, action) of every item a write touches; action is put, update, delete or check."""
        single = {"PutItem": "Put", "UpdateItem": "Update", "DeleteItem": "Delete"}
        if operation in single:
            return [_touched(single[operation], params)]
        if operation == "TransactWriteItems":
            return [_touched(*next(iter(a.items()))) for a in params["TransactItems"]]
        if operation == "BatchWriteItem":
            return [
                _touched(*next(iter(request.items())))
                for requests in params["RequestItems"].values()
                for request in requests
            ]
        return []

    def _before_dynamodb(self, params: dict[str, Any], model: Any, context: Any, **_: Any) -> None:
        operation = model.name
        context["cost_params"] = json.loads(json.dumps(params, default=str))
        context["cost_before"] = [
            (key, action, self._current(key))
            for key, action in self._written_keys(operation, params)
        ]
        if operation in _CAPACITY_OPERATIONS:
            params["ReturnConsumedCapacity"] = "TOTAL"

    def _request_created(self, request: Any, **_: Any) -> None:
        body = request.body or b""
        with self._lock:
            self.tally.dynamodb_request_bytes += len(body)

    def _after_dynamodb(
        self, http_response: Any, parsed: dict[str, Any], model: Any, context: Any, **_: Any
    ) -> None:
        operation = model.name
        params: dict[str, Any] = context.get("cost_params", {})
        wcu = 0.0
        gsi_wcu = 0.0
        journal_bytes = 0
        transactional = operation == "TransactWriteItems"
        for key, action, before in context.get("cost_before", []):
            after = None if action == "delete" else self._current(key)
            if action == "check":
                after = before
            size = max(item_size(before) if before else 0, item_size(after) if after else 0)
            wcu += write_units(size, transactional=transactional)
            if action != "check":
                gsi_wcu += index_write_units(before, after, GSI_KEYS)
            if after and after.get("kind", {}).get("S") == "journal":
                journal_bytes = max(journal_bytes, item_size(after))
        rcu = self._read_units(operation, params, parsed)
        reported = parsed.get("ConsumedCapacity")
        reported_total = 0.0
        if isinstance(reported, dict):
            reported = [reported]
        for entry in reported or []:
            reported_total += float(entry.get("CapacityUnits", 0.0))
        with self._lock:
            t = self.tally
            t.dynamodb_calls.update([operation])
            t.dynamodb_response_bytes += len(http_response.content or b"")
            t.computed_wcu += wcu
            t.computed_gsi_wcu += gsi_wcu
            t.computed_rcu += rcu
            if reported:
                t.moto_reported_calls += 1
                t.moto_reported_capacity += reported_total
            if operation == "Query" and (
                "ProjectionExpression" in params or params.get("Select") == "COUNT"
            ):
                # Billed on whole items, which the answer does not carry.
                t.approximate_reads += 1
            t.largest_journal_item_bytes = max(t.largest_journal_item_bytes, journal_bytes)
            t.journal_item_bytes += journal_bytes

    def _read_units(self, operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> float:
        consistent = bool(params.get("ConsistentRead"))
        if operation == "GetItem":
            item = parsed.get("Item")
            return read_units(item_size(item) if item else 0, consistent=consistent)
        if operation in ("Query", "Scan"):
            total = sum(item_size(item) for item in parsed.get("Items", []))
            return read_units(total, consistent=consistent)
        if operation == "BatchGetItem":
            units = 0.0
            for table, items in parsed.get("Responses", {}).items():
                table_consistent = bool(params["RequestItems"][table].get("ConsistentRead"))
                units += sum(
                    read_units(item_size(item), consistent=table_consistent) for item in items
                )
            return units
        if operation == "TransactGetItems":
            return sum(
                read_units(item_size(r.get("Item") or {}), consistent=True, transactional=True)
                for r in parsed.get("Responses", [])
            )
        return 0.0

    # SQS

    def _before_sqs(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        sent = {"SendMessage": 1, "SendMessageBatch": len(params.get("Entries", []))}
        with self._lock:
            self.tally.sqs_messages += sent.get(model.name, 0)

    # OpenSearch

    def _wrap_opensearch(self, connection: Any) -> None:
        original: Callable[..., Any] = connection.perform_request

        def metered(method: str, url: str, params: Any = None, body: Any = None, **kw: Any) -> Any:
            status, headers, raw = original(method, url, params, body, **kw)
            sent = body if isinstance(body, bytes) else (body or "").encode()
            received = raw.encode() if isinstance(raw, str) else (raw or b"")
            path = url.split("?", maxsplit=1)[0].rsplit("/", 1)[-1]
            with self._lock:
                self.tally.opensearch_calls.update([f"{method} {path}"])
                self.tally.opensearch_request_bytes += len(sent)
                self.tally.opensearch_response_bytes += len(received)
            return status, headers, raw

        connection.perform_request = metered


def per_operation(tally: Tally, operations: int) -> dict[str, Any]:
    def each(value: float) -> float:
        return round(value / operations, 2)

    return {
        "operations": operations,
        "dynamodb_wcu_computed": each(tally.computed_wcu),
        "dynamodb_gsi_wcu_computed": each(tally.computed_gsi_wcu),
        "dynamodb_rcu_computed": each(tally.computed_rcu),
        "dynamodb_capacity_reported_by_moto": each(tally.moto_reported_capacity),
        "dynamodb_calls_reporting_capacity": each(tally.moto_reported_calls),
        "dynamodb_reads_billed_on_unseen_items": each(tally.approximate_reads),
        "dynamodb_request_bytes": each(tally.dynamodb_request_bytes),
        "dynamodb_response_bytes": each(tally.dynamodb_response_bytes),
        "dynamodb_calls": {k: each(v) for k, v in sorted(tally.dynamodb_calls.items())},
        "opensearch_round_trips": each(sum(tally.opensearch_calls.values())),
        "opensearch_calls": {k: each(v) for k, v in sorted(tally.opensearch_calls.items())},
        "opensearch_request_bytes": each(tally.opensearch_request_bytes),
        "opensearch_response_bytes": each(tally.opensearch_response_bytes),
        "sqs_messages": each(tally.sqs_messages),
        "journal_item_bytes_mean": each(tally.journal_item_bytes),
        "journal_item_bytes_largest": tally.largest_journal_item_bytes,
    }


def memory_texts(count: int) -> list[str]:
    """`count` memories of exactly MEMORY_CHARS characters, built from chat-like sentences."""
    sentences = conversational_sentences(count * 12, seed=19)
    texts = []
    for i in range(count):
        text = " ".join(sentences[i * 12 : (i + 1) * 12])
        texts.append(text[:MEMORY_CHARS].ljust(MEMORY_CHARS, "."))
    return texts


def stored_sizes(clients: AwsClients, settings: Settings) -> dict[str, Any]:
    """What is kept: the mean billed size of the table's items by kind (the first part of the
    sort key; receipts apart) and the mean `_source` of the index's documents."""
    sizes: dict[str, list[int]] = {}
    kwargs: dict[str, Any] = {"TableName": settings.table_name, "ConsistentRead": True}
    while True:
        page = clients.dynamodb.scan(**kwargs)
        for item in page["Items"]:
            kind = str(item[SORT_KEY]["S"]).split("#", 1)[0]
            if kind == "JOURNAL" and "RECEIPTS#" in str(item[PARTITION_KEY]["S"]):
                kind = "JOURNAL (receipt)"
            sizes.setdefault(kind, []).append(item_size(item))
        if not page.get("LastEvaluatedKey"):
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    alias = settings.opensearch_index_alias
    clients.opensearch.indices.refresh(index=alias)
    hits = clients.opensearch.search(index=alias, body={"size": 1000, "_source": True})
    sources = [len(json.dumps(hit["_source"])) for hit in hits["hits"]["hits"]]
    return {
        "table_items": {
            kind: {"count": len(found), "mean_bytes": round(sum(found) / len(found), 1)}
            for kind, found in sorted(sizes.items())
        },
        "opensearch_documents": len(sources),
        "opensearch_source_bytes_mean": round(sum(sources) / max(1, len(sources)), 1),
    }


def run(backend: AwsBackend, meter: Meter, settings: Settings, count: int) -> dict[str, Any]:
    engine = backend.engine
    texts = memory_texts(2 * count + 1)
    engine.store(OWNER, StoreInput(content=texts[0]))
    meter.take()
    for text in texts[1 : count + 1]:
        engine.store(OWNER, StoreInput(content=text))
    stores = per_operation(meter.take(), count)
    for text in texts[count + 1 :]:
        engine.ingest(OWNER, IngestInput(content=text))
    ingests = per_operation(meter.take(), count)
    backend.clients.opensearch.indices.refresh(index=settings.opensearch_index_alias)
    engine.retrieve(OWNER, RetrieveInput(query=QUERIES[0]))
    meter.take()
    results = {"store": stores, "ingest": ingests}
    for label, budget in (("retrieve", None), ("retrieve_200k", LARGE_TOKEN_BUDGET)):
        for query in QUERIES:
            engine.retrieve(OWNER, RetrieveInput(query=query, token_budget=budget))
        results[label] = per_operation(meter.take(), len(QUERIES))
    return results


def admission_costs(backend: AwsBackend, meter: Meter, count: int) -> dict[str, Any]:
    """What the per-tenant limits check adds to one request of each kind, with every limit
    set (the API admits each request before its work; the engine calls above skip it). The
    tenant's limits record is read once per process every 30 s (LIMITS_CACHE), not per call."""
    gate = backend.engine.deps.limits
    assert gate is not None  # noqa: S101 - open_aws always wires the limits
    gate.set_limits(
        OWNER.tenant_id,
        TenantLimits(
            requests_per_second=1000,
            burst=10**6,  # a window of 1,000 s: the limit allows at most a day
            stored_records=10**9,
            stored_bytes=10**12,
            retrievals_per_day=10**9,
        ),
    )
    gate.limits_of(OWNER.tenant_id)
    meter.take()
    results = {}
    stored = StoredAmount(records=1, bytes=MEMORY_CHARS)
    for label, use in (
        ("limit_request", Limited.REQUEST),
        ("limit_store", Limited.STORE),
        ("limit_retrieve", Limited.RETRIEVAL),
    ):
        for _ in range(count):
            gate.admit(OWNER.tenant_id, use, stored)
        results[label] = per_operation(meter.take(), count)
    return results


ROWS = (
    ("DynamoDB write units (computed)", "dynamodb_wcu_computed"),
    ("  + index write units (computed)", "dynamodb_gsi_wcu_computed"),
    ("DynamoDB read units (computed)", "dynamodb_rcu_computed"),
    ("capacity moto reports", "dynamodb_capacity_reported_by_moto"),
    ("DynamoDB request bytes", "dynamodb_request_bytes"),
    ("DynamoDB response bytes", "dynamodb_response_bytes"),
    ("OpenSearch round trips", "opensearch_round_trips"),
    ("OpenSearch request bytes", "opensearch_request_bytes"),
    ("OpenSearch response bytes", "opensearch_response_bytes"),
    ("SQS messages", "sqs_messages"),
    ("journal item bytes (receipt), mean", "journal_item_bytes_mean"),
    ("journal item bytes, largest", "journal_item_bytes_largest"),
)


def print_table(results: dict[str, Any]) -> None:
    columns = list(results)
    print(f"{'per operation':34}" + "".join(f"{c:>15}" for c in columns))
    for label, key in ROWS:
        print(f"{label:34}" + "".join(f"{results[c][key]:>15,.2f}" for c in columns))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/cost.json"))
    args = parser.parse_args()
    run_start = start_run()
    embedder = HashingEmbedder(DIMENSION)
    with fresh_aws(Settings(), "cost", dimension=DIMENSION) as (settings, clients):
        backend = open_aws(settings, embedder=embedder, clients=clients, refresh_on_write=True)
        meter = Meter(clients, settings.table_name)
        count = 20 if args.quick else 200
        results = run(backend, meter, settings, count)
        # Sizes first: the admission runs add counter items that no operation keeps.
        kept = stored_sizes(clients, settings)
        results.update(admission_costs(backend, meter, count))
        backend.close()
    print(f"aws backend on the local AWS: {count} stores, {count} ingests, before retrieving")
    print_table(results)
    print("kept: mean billed bytes of the table's items by kind, and of the index's _source")
    for kind, found in kept["table_items"].items():
        print(f"  {kind:32}{found['count']:>8} items {found['mean_bytes']:>12,.1f} bytes")
    print(
        f"  {'OpenSearch _source':32}{kept['opensearch_documents']:>8} docs  "
        f"{kept['opensearch_source_bytes_mean']:>12,.1f} bytes"
    )
    write_result(
        args.json,
        "benchmarks.cost",
        {**results, "kept": kept},
        parameters={
            "operations": count,
            "dimension": DIMENSION,
            "memory_chars": MEMORY_CHARS,
            "embedder": "hashing",
        },
        started=run_start,
    )


if __name__ == "__main__":
    main()

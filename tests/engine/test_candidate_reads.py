"""Which ledger reads may lag: retrieval hydrates its candidates with eventually consistent
reads (half the DynamoDB read units); deletes and other writers' reads stay strong."""

from __future__ import annotations

from typing import Any

from prme.backends.memory import InMemoryLedger
from prme.model.inputs import RetrieveInput, StoreInput
from tests.harness.aws import aws_harness
from tests.harness.engines import ALICE, Harness, memory_harness

CONTENTS = ("I adopted a dog named Rex.", "Rex sleeps on the sofa.", "My sister lives in Lisbon.")


def store_all(h: Harness) -> list[str]:
    return [h.engine.store(ALICE, StoreInput(content=c)).event_id for c in CONTENTS]


def test_only_retrievals_candidate_reads_may_lag() -> None:
    # Given stored memories on the in-memory ledger
    h = memory_harness()
    assert isinstance(h.ledger, InMemoryLedger)
    event_ids = store_all(h)
    reads = h.ledger.node_reads_consistent

    # When a retrieval runs, then its candidates were read without asking for consistency
    before = len(reads)
    assert h.engine.retrieve(ALICE, RetrieveInput(query="Rex the dog")).results
    assert reads[before:] == [False]

    # When a memory is deleted, then every node read behind the delete was strong
    before = len(reads)
    h.engine.delete_memory(ALICE, event_ids[0])
    assert all(reads[before:])


def test_dynamodb_batch_gets_are_eventually_consistent_only_for_candidates(
    aws_resources: tuple[Any, str, Any, str],
) -> None:
    # Given memories on the local AWS, and every BatchGetItem the ledger sends recorded
    dynamodb, table, opensearch, alias = aws_resources
    h = aws_harness(dynamodb, table, opensearch, alias)
    event_ids = store_all(h)
    sent: list[bool] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sent.extend(bool(r.get("ConsistentRead")) for r in params["RequestItems"].values())

    dynamodb.meta.events.register("provide-client-params.dynamodb.BatchGetItem", record)
    try:
        # When a retrieval runs
        response = h.engine.retrieve(ALICE, RetrieveInput(query="Rex the dog"))
        retrieval_reads = list(sent)
        sent.clear()
        # and a memory is deleted
        h.engine.delete_memory(ALICE, event_ids[0])
    finally:
        dynamodb.meta.events.unregister("provide-client-params.dynamodb.BatchGetItem", record)

    # Then the retrieval's candidate reads asked for eventual consistency, the delete's did not
    assert response.results
    assert retrieval_reads == [False]
    assert sent
    assert all(sent)

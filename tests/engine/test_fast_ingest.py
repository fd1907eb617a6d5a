"""Fast ingest on every backend: one transaction per batch, materialized by processing passes."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from prme.errors import ConflictError
from prme.model.enums import ProcessingStatus
from prme.model.inputs import MAX_FAST_INGEST_ITEMS, FastIngestInput, RetrieveInput
from tests.harness.engines import ALICE, BOB, Harness


def batch(*contents: str, **fields: Any) -> FastIngestInput:
    return FastIngestInput.model_validate({"items": [{"content": c, **fields} for c in contents]})


def test_batch_commits_in_order_and_materializes_on_the_next_pass(any_backend: Harness) -> None:
    h = any_backend
    result = h.engine.ingest_fast(
        ALICE,
        batch(
            "first pelican sighting", "second pelican sighting", speaker="Ana", role="participant"
        ),
    )
    assert result.accepted == 2
    assert [h.engine.get_event(ALICE, i).content for i in result.event_ids] == [
        "first pelican sighting",
        "second pelican sighting",
    ]
    assert h.engine.get_processing_status(ALICE, result.event_ids[0])[0] is ProcessingStatus.PENDING
    assert h.engine.process_materializations(ALICE, budget_ms=0).pending == 2
    report = h.engine.process_materializations(ALICE)
    assert (report.processed, report.pending, report.failed) == (2, 0, 0)
    for event_id in result.event_ids:
        assert h.engine.get_processing_status(ALICE, event_id)[0] is ProcessingStatus.COMPLETED
        (node,) = h.engine.get_event_nodes(ALICE, event_id)
        assert node.speaker == "Ana"
    hits = h.engine.retrieve(ALICE, RetrieveInput(query="pelican sighting")).results
    assert {r.evidence_refs[0] for r in hits} == set(result.event_ids)
    # A second pass finds nothing left to do and builds no second node.
    assert h.engine.process_materializations(ALICE).processed == 0
    assert len(h.engine.get_event_nodes(ALICE, result.event_ids[0])) == 1


def test_idempotency_key_replays_ids_and_rejects_changed_input(any_backend: Harness) -> None:
    h = any_backend
    key = "7d3f1c2a-3b4c-4d5e-8f60-718293a4b5c6"
    first = h.engine.ingest_fast(ALICE, batch("a", "b"), idempotency_key=key)
    again = h.engine.ingest_fast(ALICE, batch("a", "b"), idempotency_key=key)
    assert again.event_ids == first.event_ids
    with pytest.raises(ConflictError):
        h.engine.ingest_fast(ALICE, batch("b", "a"), idempotency_key=key)  # order matters
    other_owner = h.engine.ingest_fast(BOB, batch("a", "b"), idempotency_key=key)
    assert other_owner.event_ids != first.event_ids
    assert h.engine.process_materializations(ALICE, budget_ms=0).pending == 2


@pytest.mark.parametrize(
    "payload",
    [
        {"items": []},
        {"items": [{"content": "x"}] * (MAX_FAST_INGEST_ITEMS + 1)},
        {"items": [{"content": "x", "node_type": "fact"}]},
        {"items": [{"content": "x", "event_time": "2024-01-01T00:00:00"}]},
        {"items": [{"content": "ok"}, {"content": "   "}]},
        {"items": [{"content": "x", "metadata": {"prme_speaker_v1": "z"}}]},
        {"items": [{"content": "x"}], "namespace": "n"},
    ],
)
def test_invalid_batches_are_rejected_whole(payload: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        FastIngestInput.model_validate(payload)


def test_largest_batch_fits_one_transaction(any_backend: Harness) -> None:
    h = any_backend
    contents = [f"bulk memory {i}" for i in range(MAX_FAST_INGEST_ITEMS)]
    result = h.engine.ingest_fast(
        ALICE, batch(*contents), idempotency_key="b8c9d0e1-f2a3-4b4c-8d5e-6f708192a3b4"
    )
    assert result.accepted == MAX_FAST_INGEST_ITEMS
    assert h.engine.process_materializations(ALICE, budget_ms=0).pending == MAX_FAST_INGEST_ITEMS

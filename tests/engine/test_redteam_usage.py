"""Red-team finding on metering: an operation metered again on a later UTC day counts twice
on DynamoDB (its entry's day is part of the key that keeps it once), once on SQLite."""

from __future__ import annotations

from datetime import timedelta

from prme.model.inputs import StoreInput
from tests.harness.engines import ALICE, Harness


def test_a_delete_repeated_the_next_day_counts_once(any_backend: Harness) -> None:
    h = any_backend
    start = h.clock.now().replace(hour=0, minute=0, second=0, microsecond=0)
    stored = h.engine.store(ALICE, StoreInput(content="Ana's bike cost 1200 euros"))
    h.engine.delete_memory(ALICE, stored.event_id)
    h.clock.advance(days=1)

    # The caller lost the answer and repeats the delete: it answers the same record.
    h.engine.delete_memory(ALICE, stored.event_id)

    report = h.engine.get_usage("t1", start=start, end=start + timedelta(days=2), period="month")
    deletions = [t for t in report.totals if t.kind == "delete_memory"]
    assert sum(t.operations for t in deletions) == 1


def test_a_store_under_a_long_idempotency_key_answers_and_is_metered(
    any_backend: Harness,
) -> None:
    h = any_backend
    start = h.clock.now().replace(hour=0, minute=0, second=0, microsecond=0)
    # In-process callers (MemoryClient on a directory) may choose any key text.
    key = "client-chosen-key:" + "k" * 600

    first = h.engine.store(
        ALICE, StoreInput(content="Ana's bike cost 1200 euros"), idempotency_key=key
    )
    again = h.engine.store(
        ALICE, StoreInput(content="Ana's bike cost 1200 euros"), idempotency_key=key
    )

    assert again.event_id == first.event_id
    report = h.engine.get_usage("t1", start=start, end=start + timedelta(days=1))
    assert [(t.kind, t.operations) for t in report.totals] == [("store", 1)]

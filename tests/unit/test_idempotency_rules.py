"""Idempotent stores at the engine level: a replay reports the first write's processing state,
and a retry that loses the race to its own first attempt answers as the first attempt did."""

from __future__ import annotations

from typing import Any

import pytest

from prme.errors import ConflictError
from prme.model.enums import ProcessingStatus, WorkStatus
from prme.model.inputs import StoreInput
from prme.model.records import IdempotencyRecord, OwnerKey
from tests.harness.engines import ALICE, Harness


def store_input(**fields: Any) -> StoreInput:
    return StoreInput.model_validate({"content": "I moved to Lisbon in May.", **fields})


def test_a_replay_reports_pending_work_until_it_is_done(harness: Harness) -> None:
    harness.index.available = False  # type: ignore[attr-defined]
    first = harness.engine.store(ALICE, store_input(), idempotency_key="k-1")
    assert first.processing_status is ProcessingStatus.PENDING
    [work] = harness.ledger.list_event_work(ALICE, first.event_id)
    assert work.status is WorkStatus.PENDING and work.attempts == 1 and work.last_error
    again = harness.engine.store(ALICE, store_input(), idempotency_key="k-1")
    assert again == first

    harness.index.available = True  # type: ignore[attr-defined]
    harness.engine.process_materializations(ALICE, budget_ms=5000)
    done = harness.engine.store(ALICE, store_input(), idempotency_key="k-1")
    assert (done.event_id, done.node_id) == (first.event_id, first.node_id)
    assert done.processing_status is ProcessingStatus.COMPLETED


def lose_the_first_lookup(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key's record is not seen by the first lookup: the retry raced its first attempt."""
    real = harness.ledger.get_idempotency
    calls: list[str] = []

    def first_misses(owner: OwnerKey, operation: str, key: str) -> IdempotencyRecord | None:
        calls.append(key)
        return None if len(calls) == 1 else real(owner, operation, key)

    monkeypatch.setattr(harness.ledger, "get_idempotency", first_misses)


def test_a_retry_that_loses_the_race_answers_as_the_first_attempt(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = harness.engine.store(ALICE, store_input(), idempotency_key="k-1")
    lose_the_first_lookup(harness, monkeypatch)
    again = harness.engine.store(ALICE, store_input(), idempotency_key="k-1")
    assert again == first
    assert len(harness.ledger.events) == 1  # type: ignore[attr-defined]


def test_a_racing_retry_with_other_input_conflicts(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness.engine.store(ALICE, store_input(), idempotency_key="k-1")
    lose_the_first_lookup(harness, monkeypatch)
    with pytest.raises(ConflictError):
        harness.engine.store(ALICE, store_input(content="Other"), idempotency_key="k-1")
    assert len(harness.ledger.events) == 1  # type: ignore[attr-defined]


def test_only_entities_schedule_an_alias_scan(harness: Harness) -> None:
    harness.engine.store(ALICE, store_input())
    assert harness.ledger.count_pending_work(ALICE, family="alias") == 0
    harness.engine.store(ALICE, store_input(content="IBM", node_type="entity"))
    assert harness.ledger.count_pending_work(ALICE, family="alias") == 1


def test_a_lifecycle_retry_that_races_its_first_attempt_answers_as_it_did(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    node_id = harness.engine.store(ALICE, store_input()).node_id
    assert node_id is not None
    first = harness.engine.reinforce(ALICE, node_id, idempotency_key="k-2")
    lose_the_first_lookup(harness, monkeypatch)
    again = harness.engine.reinforce(ALICE, node_id, idempotency_key="k-2")
    assert again == first  # reinforced once, not twice
    assert harness.engine.get_node(ALICE, node_id) == first


def test_a_key_used_by_another_operation_conflicts_before_its_input_is_compared(
    harness: Harness,
) -> None:
    node_id = harness.engine.store(ALICE, store_input(), idempotency_key="k-3").node_id
    assert node_id is not None
    with pytest.raises(ConflictError, match="another operation"):
        harness.engine.reinforce(ALICE, node_id, idempotency_key="k-3")


def test_a_conflict_that_no_saved_key_explains_is_raised(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit refused for another reason than the key (say, an id collision) is a
    conflict for the caller, with or without a key; nothing is replayed."""

    def refuse(_commit: object) -> None:
        raise ConflictError("event already exists")

    monkeypatch.setattr(harness.ledger, "commit_store", refuse)
    for key in ("k-4", None):
        with pytest.raises(ConflictError, match="event already exists"):
            harness.engine.store(ALICE, store_input(), idempotency_key=key)


def test_a_racing_lifecycle_retry_with_other_input_conflicts(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = harness.engine.store(ALICE, store_input())
    assert stored.node_id is not None
    harness.engine.reinforce(ALICE, stored.node_id, idempotency_key="k-5")
    lose_the_first_lookup(harness, monkeypatch)
    with pytest.raises(ConflictError, match="different request"):
        harness.engine.reinforce(
            ALICE, stored.node_id, evidence_id=stored.event_id, idempotency_key="k-5"
        )


def test_a_lifecycle_conflict_that_no_saved_key_explains_is_raised(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    node_id = harness.engine.store(ALICE, store_input()).node_id
    assert node_id is not None

    def refuse(_change: object) -> None:
        raise ConflictError("node changed")

    monkeypatch.setattr(harness.ledger, "commit_node_change", refuse)
    for key in ("k-6", None):
        with pytest.raises(ConflictError, match="node changed"):
            harness.engine.reinforce(ALICE, node_id, idempotency_key=key)

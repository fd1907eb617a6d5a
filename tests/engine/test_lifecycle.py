"""Lifecycle moves and supersedence on every backend: forward only, audited, retry-safe."""

from __future__ import annotations

from typing import Any

import pytest

from prme.engine.lifecycle import InvalidTransitionError
from prme.errors import ConflictError, InvalidRequestError, NotFoundError
from prme.model.enums import LifecycleState
from prme.model.inputs import RetrieveInput, StoreInput
from tests.harness.engines import ALICE, BOB, Harness

KEY_1 = "a1b2c3d4-0000-4000-8000-000000000001"
KEY_2 = "a1b2c3d4-0000-4000-8000-000000000002"


def store(h: Harness, content: str, **fields: Any) -> Any:
    return h.engine.store(ALICE, StoreInput.model_validate({"content": content, **fields}))


def ids(h: Harness, query: str, **fields: Any) -> list[str]:
    request = RetrieveInput.model_validate({"query": query, **fields})
    return [r.node_id for r in h.engine.retrieve(ALICE, request).results]


def test_promote_moves_forward_once_and_a_key_makes_retries_safe(any_backend: Harness) -> None:
    h = any_backend
    node_id = store(h, "I prefer window seats").node_id
    promoted = h.engine.promote(ALICE, node_id, idempotency_key=KEY_1)
    assert promoted.lifecycle_state is LifecycleState.STABLE
    # The same key again (after a lost response): the current node, no error.
    assert (
        h.engine.promote(ALICE, node_id, idempotency_key=KEY_1).lifecycle_state
        is LifecycleState.STABLE
    )
    # Without a key, the strict state machine answers.
    with pytest.raises(InvalidTransitionError):
        h.engine.promote(ALICE, node_id)
    # The key reused for another move is a conflict.
    with pytest.raises(ConflictError):
        h.engine.archive(ALICE, node_id, idempotency_key=KEY_1)


def test_archive_leaves_default_retrieval_and_never_comes_back(any_backend: Harness) -> None:
    h = any_backend
    node_id = store(h, "old locker combination 1234").node_id
    assert ids(h, "locker combination") == [node_id]
    archived = h.engine.archive(ALICE, node_id)
    assert archived.lifecycle_state is LifecycleState.ARCHIVED
    assert ids(h, "locker combination") == []
    assert ids(h, "locker combination", mode="explicit") == [node_id]
    with pytest.raises(InvalidTransitionError):
        h.engine.archive(ALICE, node_id)
    with pytest.raises(InvalidTransitionError):
        h.engine.promote(ALICE, node_id)
    # The index learns the new state through ordinary work.
    assert h.engine.process_materializations(ALICE).processed >= 1
    assert ids(h, "locker combination") == []


def test_reinforce_raises_confidence_and_records_evidence(any_backend: Harness) -> None:
    h = any_backend
    first = store(h, "Dana likes oolong tea")
    confirmation = store(h, "Yes, Dana really likes oolong")
    before = h.engine.get_node(ALICE, first.node_id)
    after = h.engine.reinforce(ALICE, first.node_id, evidence_id=confirmation.event_id)
    assert after.confidence > before.confidence
    assert after.salience > before.salience
    assert after.evidence_refs == (first.event_id, confirmation.event_id)
    # Without a key each call is a separate confirmation; with one, retries repeat nothing.
    again = h.engine.reinforce(ALICE, first.node_id)
    assert again.confidence > after.confidence
    keyed = h.engine.reinforce(ALICE, first.node_id, idempotency_key=KEY_2)
    replay = h.engine.reinforce(ALICE, first.node_id, idempotency_key=KEY_2)
    assert replay.confidence == keyed.confidence
    with pytest.raises(ConflictError):
        h.engine.reinforce(
            ALICE, first.node_id, evidence_id=confirmation.event_id, idempotency_key=KEY_2
        )
    with pytest.raises(NotFoundError):
        h.engine.reinforce(ALICE, first.node_id, evidence_id="00000000-0000-4000-8000-00000000dead")


def test_supersedence_is_atomic_and_replay_safe(any_backend: Harness) -> None:
    h = any_backend
    old = store(h, "I live in Porto", event_time="2020-01-01T00:00:00Z")
    new = store(h, "I moved to Lisbon", event_time="2024-01-01T00:00:00Z")
    evidence = store(h, "Moving day went fine")
    before, after = h.engine.supersede(
        ALICE, old_node_id=old.node_id, new_node_id=new.node_id, evidence_id=evidence.event_id
    )
    assert before.lifecycle_state is LifecycleState.SUPERSEDED
    assert before.valid_to is not None
    assert after.id == new.node_id
    assert after.lifecycle_state is LifecycleState.TENTATIVE
    # Exact replay after a timeout returns the same published result.
    replay = h.engine.supersede(
        ALICE, old_node_id=old.node_id, new_node_id=new.node_id, evidence_id=evidence.event_id
    )
    assert replay[0].lifecycle_state is LifecycleState.SUPERSEDED
    # Changing the evidence after publication is refused.
    with pytest.raises(InvalidRequestError):
        h.engine.supersede(ALICE, old_node_id=old.node_id, new_node_id=new.node_id)
    assert old.node_id not in ids(h, "where do I live Porto Lisbon")
    assert new.node_id in ids(h, "where do I live Porto Lisbon")


def test_supersedence_needs_one_owner_and_one_scope(any_backend: Harness) -> None:
    h = any_backend
    mine = store(h, "project deadline is Friday", scope="project")
    personal = store(h, "deadline moved", scope="personal")
    theirs = h.engine.store(BOB, StoreInput(content="bob's note"))
    assert theirs.node_id is not None
    with pytest.raises(InvalidRequestError):
        h.engine.supersede(ALICE, old_node_id=mine.node_id, new_node_id=personal.node_id)
    with pytest.raises(NotFoundError):
        h.engine.supersede(ALICE, old_node_id=mine.node_id, new_node_id=theirs.node_id)
    with pytest.raises(InvalidRequestError):
        h.engine.supersede(ALICE, old_node_id=mine.node_id, new_node_id=mine.node_id)
    # Nothing changed on refusal.
    assert h.engine.get_node(ALICE, mine.node_id).lifecycle_state is LifecycleState.TENTATIVE

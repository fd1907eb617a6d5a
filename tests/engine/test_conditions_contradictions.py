"""Conditional memories and contradictions on every backend: what default retrieval returns,
the journal record committed with each change, replays, and refusals that change nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from prme.engine.lifecycle import InvalidTransitionError
from prme.errors import ConflictError, InvalidRequestError, NotFoundError
from prme.model.conditions import CONDITION_METADATA_KEY, ConditionInput, ConditionState
from prme.model.enums import LifecycleState
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.records import JournalRecord, MemoryNode
from prme.model.search import IndexFilter, IndexQuery
from tests.harness.engines import ALICE, BOB, Harness

KEY_1 = "c0ffee00-0000-4000-8000-000000000001"
KEY_2 = "c0ffee00-0000-4000-8000-000000000002"
PICKUP = "Pick Ana up at the airport at six"


def store(h: Harness, content: str, **fields: Any) -> str:
    result = h.engine.store(ALICE, StoreInput.model_validate({"content": content, **fields}))
    assert result.node_id is not None
    return result.node_id


def store_event(h: Harness, content: str) -> str:
    return h.engine.store(ALICE, StoreInput(content=content)).event_id


def conditional(h: Harness) -> str:
    return store(
        h,
        PICKUP,
        epistemic_type="conditional",
        metadata={"condition": "Ana booked the Friday flight"},
    )


def ids(h: Harness, query: str, **fields: Any) -> list[str]:
    request = RetrieveInput.model_validate({"query": query, **fields})
    return [r.node_id for r in h.engine.retrieve(ALICE, request).results]


def indexed_ids(h: Harness, query: str) -> list[str]:
    """What the search index itself returns, on both channels, under default retrieval's
    condition filter."""
    hits = h.index.search(
        ALICE,
        IndexQuery(
            text=query,
            vector=tuple(float(x) for x in h.embedder.embed([query])[0]),
            embedding_model=h.embedder.model.key,
            filters=IndexFilter(conditions_must_hold=True),
        ),
    )
    lexical = [node_id for node_id, _ in hits.lexical]
    vector = [node_id for node_id, _ in hits.vector]
    # Each channel filters on its own: both must agree.
    assert set(lexical) <= set(vector)
    return vector


def journal(h: Harness, operation: str) -> list[JournalRecord]:
    return [r for r in h.ledger.list_journal(ALICE, "", limit=1000) if r.operation == operation]


def evaluate(h: Harness, node_id: str, state: str, **fields: Any) -> MemoryNode:
    key = fields.pop("idempotency_key", None)
    request = ConditionInput.model_validate({"state": state, **fields})
    return h.engine.evaluate_condition(ALICE, node_id, request, idempotency_key=key)


def test_a_conditional_store_names_its_condition_and_cannot_forge_an_evaluation() -> None:
    with pytest.raises(ValueError, match=r"metadata\.condition"):
        StoreInput.model_validate({"content": PICKUP, "epistemic_type": "conditional"})
    with pytest.raises(ValueError, match=r"metadata\.condition"):
        StoreInput.model_validate(
            {"content": PICKUP, "epistemic_type": "conditional", "metadata": {"condition": " "}}
        )
    # The evaluation is the engine's to write, never a store's.
    with pytest.raises(ValueError, match=CONDITION_METADATA_KEY):
        StoreInput.model_validate(
            {"content": PICKUP, "metadata": {CONDITION_METADATA_KEY: {"state": "true"}}}
        )


def test_a_conditional_memory_is_retrieved_only_while_its_condition_is_true(
    any_backend: Harness,
) -> None:
    h = any_backend
    node_id = conditional(h)
    plain = store(h, "Ana lands at the airport on Friday")
    node = h.engine.get_node(ALICE, node_id)
    assert node.condition_state is ConditionState.UNKNOWN
    assert ids(h, "airport Ana") == [plain]
    assert set(ids(h, "airport Ana", mode="explicit")) == {node_id, plain}
    assert node_id not in indexed_ids(h, "airport Ana")

    evaluate(h, node_id, "true")
    # The evaluation's index work brings the new state to the index (the filter runs there).
    assert h.engine.process_materializations(ALICE).processed >= 1
    assert node_id in indexed_ids(h, "airport Ana")
    assert set(ids(h, "airport Ana")) == {node_id, plain}

    for state in ("false", "expired", "unknown"):
        evaluate(h, node_id, state)
        h.engine.process_materializations(ALICE)
        assert node_id not in indexed_ids(h, "airport Ana"), state
        assert ids(h, "airport Ana") == [plain], state
        assert node_id in ids(h, "airport Ana", mode="explicit"), state


def test_an_evaluation_is_journaled_with_its_evidence_and_a_key_makes_it_retry_safe(
    any_backend: Harness,
) -> None:
    h = any_backend
    node_id = conditional(h)
    evidence = store_event(h, "Ana: booked the Friday flight, see you at six")
    node = evaluate(
        h,
        node_id,
        "true",
        evidence_id=evidence,
        evaluation_method="tool",
        reason="Booking confirmation",
        evaluated_at="2025-01-01T08:00:00+00:00",
        idempotency_key=KEY_1,
    )
    saved = h.engine.get_node(ALICE, node_id)
    assert saved == node
    assert saved.metadata[CONDITION_METADATA_KEY] == {
        "state": "true",
        "evaluation_method": "tool",
        "reason": "Booking confirmation",
        "evidence_id": evidence,
        "evaluated_at": "2025-01-01T08:00:00Z",
    }
    assert saved.evidence_refs[-1] == evidence
    (record,) = journal(h, "evaluate_condition")
    assert record.verify()
    assert record.subject_id == node_id
    assert record.payload["from_state"] == "unknown"
    assert record.payload["to_state"] == "true"
    # The reason is caller text: it stays on the node, never in the journal.
    assert "Booking" not in str(record.payload)

    # The same key and body: the node as it is, nothing written again.
    replay = evaluate(
        h,
        node_id,
        "true",
        evidence_id=evidence,
        evaluation_method="tool",
        reason="Booking confirmation",
        evaluated_at="2025-01-01T08:00:00+00:00",
        idempotency_key=KEY_1,
    )
    assert replay == saved
    assert len(journal(h, "evaluate_condition")) == 1
    # The key with another body is a conflict.
    with pytest.raises(ConflictError):
        evaluate(h, node_id, "false", idempotency_key=KEY_1)
    assert h.engine.get_node(ALICE, node_id).condition_state is ConditionState.TRUE


def test_evaluations_are_refused_for_foreign_evidence_other_memories_and_inactive_ones(
    any_backend: Harness,
) -> None:
    h = any_backend
    node_id = conditional(h)
    theirs = h.engine.store(BOB, StoreInput(content="Bob's flight is booked"))
    with pytest.raises(NotFoundError):
        evaluate(h, node_id, "true", evidence_id=theirs.event_id)
    with pytest.raises(NotFoundError):
        evaluate(h, str(theirs.node_id), "true")
    project = h.engine.store(ALICE, StoreInput(content="Team offsite", scope="project"))
    with pytest.raises(InvalidRequestError):
        evaluate(h, node_id, "true", evidence_id=project.event_id)
    with pytest.raises(InvalidRequestError):
        evaluate(h, store(h, "Ana likes window seats"), "true")
    h.engine.archive(ALICE, node_id)
    with pytest.raises(InvalidTransitionError):
        evaluate(h, node_id, "true")
    assert h.engine.get_node(ALICE, node_id).condition_state is ConditionState.UNKNOWN
    assert journal(h, "evaluate_condition") == []


@pytest.fixture
def racing_read(monkeypatch: pytest.MonkeyPatch) -> Callable[[Harness, str], None]:
    """Arrange for `node_id` to be promoted by someone else right after the engine reads it,
    so the engine's commit meets a node that changed since its read."""

    def arrange(h: Harness, node_id: str) -> None:
        original = h.ledger.get_node
        raced = False

        def get_node(owner: Any, wanted: str, **kwargs: Any) -> MemoryNode | None:
            nonlocal raced
            node = original(owner, wanted, **kwargs)
            if wanted == node_id and not raced:
                raced = True
                h.engine.promote(ALICE, node_id)
            return node

        monkeypatch.setattr(h.ledger, "get_node", get_node)

    return arrange


def test_an_evaluation_that_meets_a_concurrent_change_writes_nothing(
    any_backend: Harness, racing_read: Callable[[Harness, str], None]
) -> None:
    h = any_backend
    node_id = conditional(h)
    racing_read(h, node_id)
    with pytest.raises(ConflictError):
        evaluate(h, node_id, "true", idempotency_key=KEY_2)
    node = h.engine.get_node(ALICE, node_id)
    assert node.lifecycle_state is LifecycleState.STABLE  # the concurrent change
    assert node.condition_state is ConditionState.UNKNOWN
    assert journal(h, "evaluate_condition") == []
    # Nothing was kept under the key either: the retry evaluates.
    assert evaluate(h, node_id, "true", idempotency_key=KEY_2).condition_state is (
        ConditionState.TRUE
    )


def contradicts_edges(h: Harness, node_id: str) -> list[Any]:
    return [e for e in h.engine.get_node_edges(ALICE, node_id) if e.edge_type == "contradicts"]


def test_a_contradiction_contests_both_flags_results_and_replays_without_a_second_edge(
    any_backend: Harness,
) -> None:
    h = any_backend
    porto = store(h, "Ana lives in Porto")
    lisbon = store(h, "Ana lives in Lisbon")
    evidence = store_event(h, "Ana said she never left Porto")
    a, b = h.engine.mark_contradiction(
        ALICE, node_a_id=porto, node_b_id=lisbon, evidence_id=evidence
    )
    assert (a.id, b.id) == (porto, lisbon)
    assert a.lifecycle_state is b.lifecycle_state is LifecycleState.CONTESTED
    for node_id in (porto, lisbon):
        assert h.engine.get_node(ALICE, node_id).lifecycle_state is LifecycleState.CONTESTED
    (edge,) = contradicts_edges(h, porto)
    assert (edge.source_node_id, edge.target_node_id, edge.evidence_refs) == (
        porto,
        lisbon,
        (evidence,),
    )
    (record,) = journal(h, "mark_contradiction")
    assert record.verify()
    assert record.payload["edge_id"] == edge.id

    # The same pair again, in either order: the current nodes, no second edge or record.
    h.engine.mark_contradiction(ALICE, node_a_id=porto, node_b_id=lisbon, evidence_id=evidence)
    again = h.engine.mark_contradiction(
        ALICE, node_a_id=lisbon, node_b_id=porto, evidence_id=evidence
    )
    assert [n.id for n in again] == [lisbon, porto]
    assert len(contradicts_edges(h, porto)) == 1
    assert len(journal(h, "mark_contradiction")) == 1
    with pytest.raises(InvalidRequestError):
        h.engine.mark_contradiction(ALICE, node_a_id=porto, node_b_id=lisbon)

    response = h.engine.retrieve(ALICE, RetrieveInput(query="Where does Ana live?"))
    flagged = {r.node_id: (r.conflict_flag, r.contradicts_id) for r in response.results}
    assert flagged[porto] == (True, lisbon)
    assert flagged[lisbon] == (True, porto)
    assert response.bundle.context.count("[contested]") == 2

    # A third claim: the newest link is the one a result names.
    h.clock.advance(seconds=5)
    braga = store(h, "Ana lives in Braga")
    h.engine.mark_contradiction(ALICE, node_a_id=braga, node_b_id=porto)
    response = h.engine.retrieve(ALICE, RetrieveInput(query="Where does Ana live?"))
    flagged = {r.node_id: (r.conflict_flag, r.contradicts_id) for r in response.results}
    assert flagged[porto] == (True, braga)
    calm = store(h, "Ana likes green tea")
    tea = h.engine.retrieve(ALICE, RetrieveInput(query="green tea")).results
    first = tea[0]
    assert (first.node_id, first.conflict_flag, first.contradicts_id) == (calm, False, None)


def test_contradictions_are_refused_across_owners_scopes_and_inactive_memories(
    any_backend: Harness,
) -> None:
    h = any_backend
    mine = store(h, "The meeting is on Monday")
    other = store(h, "The meeting is on Tuesday", scope="project")
    archived = store(h, "The meeting is on Wednesday")
    h.engine.archive(ALICE, archived)
    theirs = h.engine.store(BOB, StoreInput(content="Bob's meeting is on Friday"))
    with pytest.raises(NotFoundError):
        h.engine.mark_contradiction(ALICE, node_a_id=mine, node_b_id=str(theirs.node_id))
    with pytest.raises(InvalidRequestError):
        h.engine.mark_contradiction(ALICE, node_a_id=mine, node_b_id=mine)
    with pytest.raises(InvalidRequestError):
        h.engine.mark_contradiction(ALICE, node_a_id=mine, node_b_id=other)
    with pytest.raises(InvalidTransitionError):
        h.engine.mark_contradiction(ALICE, node_a_id=mine, node_b_id=archived)
    with pytest.raises(NotFoundError):
        h.engine.mark_contradiction(
            ALICE, node_a_id=mine, node_b_id=archived, evidence_id=str(theirs.event_id)
        )
    assert h.engine.get_node(ALICE, mine).lifecycle_state is LifecycleState.TENTATIVE
    assert contradicts_edges(h, mine) == []
    assert journal(h, "mark_contradiction") == []


def test_a_resolution_keeps_the_winner_and_deprecates_the_loser(any_backend: Harness) -> None:
    h = any_backend
    porto = store(h, "Ana lives in Porto")
    lisbon = store(h, "Ana lives in Lisbon")
    braga = store(h, "Ana lives in Braga")
    # Not contested yet, then contested but not with each other: both refused.
    with pytest.raises(InvalidRequestError):
        h.engine.resolve_contradiction(ALICE, winner_id=lisbon, loser_id=porto)
    h.engine.mark_contradiction(ALICE, node_a_id=porto, node_b_id=braga)
    h.engine.mark_contradiction(ALICE, node_a_id=lisbon, node_b_id=braga)
    with pytest.raises(InvalidRequestError):
        h.engine.resolve_contradiction(ALICE, winner_id=lisbon, loser_id=porto)
    assert journal(h, "resolve_contradiction") == []

    winner, loser = h.engine.resolve_contradiction(ALICE, winner_id=lisbon, loser_id=braga)
    assert (winner.id, winner.lifecycle_state) == (lisbon, LifecycleState.STABLE)
    assert (loser.id, loser.lifecycle_state) == (braga, LifecycleState.DEPRECATED)
    (record,) = journal(h, "resolve_contradiction")
    assert record.verify()
    assert record.payload["winner_id"] == lisbon
    # An exact replay answers the same nodes and writes nothing.
    replay = h.engine.resolve_contradiction(ALICE, winner_id=lisbon, loser_id=braga)
    assert [(n.id, n.lifecycle_state) for n in replay] == [
        (lisbon, LifecycleState.STABLE),
        (braga, LifecycleState.DEPRECATED),
    ]
    assert len(journal(h, "resolve_contradiction")) == 1
    # The deprecated loser leaves default retrieval once the index learns it.
    h.engine.process_materializations(ALICE)
    assert braga not in ids(h, "Where does Ana live Braga")
    assert braga in ids(h, "Where does Ana live Braga", mode="explicit")
    assert lisbon in ids(h, "Where does Ana live Lisbon")


def test_a_contradiction_that_meets_a_concurrent_change_writes_nothing(
    any_backend: Harness, racing_read: Callable[[Harness, str], None]
) -> None:
    h = any_backend
    porto = store(h, "Ana lives in Porto")
    lisbon = store(h, "Ana lives in Lisbon")
    racing_read(h, lisbon)
    with pytest.raises(ConflictError):
        h.engine.mark_contradiction(ALICE, node_a_id=porto, node_b_id=lisbon)
    # Neither node moved (the first one was not contested alone), and no edge or record.
    assert h.engine.get_node(ALICE, porto).lifecycle_state is LifecycleState.TENTATIVE
    assert h.engine.get_node(ALICE, lisbon).lifecycle_state is LifecycleState.STABLE
    assert contradicts_edges(h, porto) == []
    assert journal(h, "mark_contradiction") == []

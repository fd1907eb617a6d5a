"""Red-team tests of owner and tenant isolation in issue 20's operations, on every backend:
copied ids of another owner's (or another tenant's same-named owner's) memories and events
are unknown, and an update on ingest never reaches across."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from prme.errors import NotFoundError
from prme.model.conditions import ConditionInput
from prme.model.enums import LifecycleState
from prme.model.inputs import StoreInput
from prme.model.records import OwnerKey
from tests.harness.engines import ALICE, BOB, Harness
from tests.harness.redteam20 import CONDITION, say, store

# The same user id in another tenant.
TWIN = OwnerKey(tenant_id="t-other", owner_id=ALICE.owner_id)


def test_copied_ids_of_another_owner_or_tenant_are_unknown(any_backend: Harness) -> None:
    h = any_backend
    mine = [store(h, "Ana lives in Porto."), store(h, "Ana lives in Lisbon.")]
    cond = store(h, "Pick Ana up", epistemic_type="conditional", metadata=CONDITION)
    evidence = say(h, "Ana said she lives in Porto.").evidence_refs[0]
    assert h.engine.get_event_extraction(ALICE, evidence).event_id == evidence
    h.engine.mark_contradiction(ALICE, node_a_id=mine[0], node_b_id=mine[1])
    for other in (BOB, TWIN):
        _everything_is_unknown_to(h, other, mine, cond, evidence)
    mine_now = h.ledger.get_node(ALICE, mine[0])
    assert mine_now is not None and mine_now.lifecycle_state is LifecycleState.CONTESTED


def _everything_is_unknown_to(
    h: Harness, o: OwnerKey, mine: list[str], cond: str, evidence: str
) -> None:
    a, b = (
        h.engine.store(o, StoreInput(content=text)).node_id
        for text in ("Bob lives in Faro.", "Bob lives in Braga.")
    )
    assert a is not None and b is not None
    calls: list[Callable[[], object]] = [
        lambda: h.engine.mark_contradiction(o, node_a_id=mine[0], node_b_id=mine[1]),
        lambda: h.engine.resolve_contradiction(o, winner_id=mine[0], loser_id=mine[1]),
        lambda: h.engine.evaluate_condition(
            o, cond, ConditionInput.model_validate({"state": "true"})
        ),
        lambda: h.engine.get_node_provenance(o, mine[0], operation_cursor=None, operation_limit=10),
        lambda: h.engine.get_node_neighborhood(o, mine[0], max_hops=3),
        lambda: h.engine.get_node_chain(o, mine[0], direction="both"),
        lambda: h.engine.get_event_extraction(o, evidence),
        # Their own memories with my event as evidence.
        lambda: h.engine.mark_contradiction(o, node_a_id=a, node_b_id=b, evidence_id=evidence),
        lambda: h.engine.evaluate_condition(
            o, a, ConditionInput.model_validate({"state": "true", "evidence_id": evidence})
        ),
    ]
    for call in calls:
        with pytest.raises(NotFoundError):
            call()


def test_an_update_on_ingest_in_a_twin_tenant_supersedes_nothing_of_mine(
    any_backend: Harness,
) -> None:
    h = any_backend
    lisbon = say(h, "I live in Lisbon.")
    say(h, "I moved from Lisbon to Berlin.", owner=TWIN)
    say(h, "I moved from Lisbon to Madrid.", owner=BOB)
    stored = h.ledger.get_node(ALICE, lisbon.id)
    assert stored is not None and stored.lifecycle_state is not LifecycleState.SUPERSEDED

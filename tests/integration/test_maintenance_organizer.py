"""The maintenance function runs the organizer over every owner, in-process with a real
EventBridge payload against the local AWS."""

from __future__ import annotations

import pytest

from prme.model.enums import LifecycleState
from prme.model.inputs import StoreInput
from prme.model.records import OwnerKey
from tests.harness.lambda_events import ALICE, Deployed, FakeLambdaContext, load_event

BOB = OwnerKey(tenant_id=ALICE.tenant_id, owner_id="bob")


def test_maintenance_organizes_every_owner_and_a_second_pass_changes_nothing(
    deployed: Deployed, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions import maintenance, runtime
    from prme.engine import organizer

    # Outside the organizer's daily window (the rule itself is tested in tests/engine) a
    # pass neither lists owners nor changes anything; inside it, it organizes them all.
    window_open = False
    monkeypatch.setattr(organizer, "scheduled_pass_due", lambda *_: window_open)

    engine = runtime.backend().engine
    # Given a duplicate memory for each of two owners of the tenant
    stored = {
        owner: [
            engine.store(owner, StoreInput(content="I water the ferns on Sundays")).node_id
            for _ in range(2)
        ]
        for owner in (ALICE, BOB)
    }
    closed = maintenance.handler(load_event("eventbridge_schedule.json"), FakeLambdaContext())
    assert (closed["organizer_ran"], closed["organizer_changes"]) == (False, 0)
    # When the maintenance pass runs inside the window
    window_open = True
    result = maintenance.handler(load_event("eventbridge_schedule.json"), FakeLambdaContext())
    # Then each owner's weaker copy is superseded by the kept one, within the pass
    assert (result["organizer_changes"], result["organizer_complete"]) == (2, True)
    for owner, ids in stored.items():
        states = sorted(
            node.lifecycle_state.value
            for node in engine.deps.ledger.get_nodes(owner, [i for i in ids if i]).values()
        )
        assert states == [LifecycleState.SUPERSEDED.value, LifecycleState.TENTATIVE.value]
    # And the next pass finds nothing more to do
    again = maintenance.handler(load_event("eventbridge_schedule.json"), FakeLambdaContext())
    assert (again["organizer_changes"], again["organizer_complete"]) == (0, True)

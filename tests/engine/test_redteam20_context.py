"""Red-team tests of the packed context, on every backend: a value superseded on ingest is not
shown as current in default mode, even when the message that stated it stays retrievable for
its other sentences."""

from __future__ import annotations

import json

from prme.model.enums import LifecycleState
from prme.model.inputs import RetrieveInput
from prme.model.records import MemoryNode
from tests.harness.engines import ALICE, Harness
from tests.harness.redteam20 import say


def _stored(h: Harness, node_id: str) -> MemoryNode:
    node = h.ledger.get_node(ALICE, node_id)
    assert node is not None
    return node


def test_a_note_whose_claim_was_superseded_is_marked_partly_outdated(any_backend: Harness) -> None:
    h = any_backend
    both = say(h, "I live in Lisbon. I work at Acme.")
    say(h, "I moved to Berlin.")
    h.engine.process_materializations(ALICE)

    # The note stays (it still says where I work), but no longer passes for current.
    assert _stored(h, both.id).lifecycle_state is not LifecycleState.SUPERSEDED
    found = h.engine.retrieve(ALICE, RetrieveInput(query="Where do I live now?", limit=10))
    lines = [line for line in found.bundle.context.splitlines() if "Lisbon." in line]
    assert lines and all("[partly outdated]" in line for line in lines), found.bundle.context
    audited = h.engine.retrieve(
        ALICE,
        RetrieveInput.model_validate(
            {"query": "Where do I live now?", "limit": 10, "context_format": "auditable"}
        ),
    )
    records = [json.loads(line) for line in audited.bundle.context.splitlines() if "{" in line]
    (note,) = [r for r in records if r.get("node_id") == both.id]
    assert note["state"] == "partly outdated"


def test_a_message_moving_back_marks_nothing_twice_and_keeps_current_notes_plain(
    any_backend: Harness,
) -> None:
    h = any_backend
    first = say(h, "I live in Lisbon. I work at Acme.")
    say(h, "I moved to Berlin. I like tea.")
    later = _stored(h, first.id)
    say(h, "I moved to Porto.")  # supersedes Berlin's claim: its note is marked, not Lisbon's again
    assert _stored(h, first.id).metadata == later.metadata
    h.engine.process_materializations(ALICE)
    found = h.engine.retrieve(ALICE, RetrieveInput(query="I moved to Porto", limit=10))
    porto = [line for line in found.bundle.context.splitlines() if "Porto." in line]
    assert porto and not any("outdated" in line for line in porto)


def test_a_partly_outdated_note_is_superseded_once_its_last_claim_is(
    any_backend: Harness,
) -> None:
    h = any_backend
    both = say(h, "I live in Lisbon. I work at Acme.")
    say(h, "I moved to Berlin.")
    assert _stored(h, both.id).lifecycle_state is not LifecycleState.SUPERSEDED
    say(h, "I left Acme and joined Siemens.")
    assert _stored(h, both.id).lifecycle_state is LifecycleState.SUPERSEDED

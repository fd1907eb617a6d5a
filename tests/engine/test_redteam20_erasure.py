"""Red-team tests: erasing an owner, and deleting one memory, leave none of issue 20's item
kinds behind (assertion-key links, per-node history references, condition metadata,
contradiction and supersedence edges), on every backend."""

from __future__ import annotations

import uuid

from prme.model.conditions import ConditionInput
from prme.model.inputs import IngestInput, StoreInput
from prme.model.records import OwnerKey
from tests.harness.engines import Harness


def _owner() -> OwnerKey:
    return OwnerKey(tenant_id="t-rt20", owner_id=f"rt20-{uuid.uuid4().hex}")


def _say(h: Harness, owner: OwnerKey, text: str) -> str:
    h.clock.advance(minutes=1)
    result = h.engine.ingest(
        owner, IngestInput.model_validate({"content": text, "wait_for_extraction": True})
    )
    return result.event_id


def fill(h: Harness, owner: OwnerKey, marker: str) -> None:
    """Every new kind of record: claims found by assertion key, a supersedence on ingest,
    a condition evaluated with a reason, a contradiction marked and resolved."""
    _say(h, owner, f"{marker} lives in Lisbon.")
    _say(h, owner, f"{marker} moved from Lisbon to Berlin.")
    evidence = h.engine.store(owner, StoreInput(content=f"{marker} said so")).event_id
    conditional = h.engine.store(
        owner,
        StoreInput.model_validate(
            {
                "content": f"{marker} flies on Friday",
                "epistemic_type": "conditional",
                "metadata": {"condition": f"{marker} booked the flight"},
            }
        ),
    ).node_id
    assert conditional is not None
    h.engine.evaluate_condition(
        owner,
        conditional,
        ConditionInput.model_validate(
            {
                "state": "true",
                "reason": f"{marker} confirmed\x07\x1b[2J\u202e",
                "evidence_id": evidence,
            }
        ),
    )
    a = h.engine.store(owner, StoreInput(content=f"{marker} likes tea")).node_id
    b = h.engine.store(owner, StoreInput(content=f"{marker} hates tea")).node_id
    assert a is not None and b is not None
    h.engine.mark_contradiction(owner, node_a_id=a, node_b_id=b, evidence_id=evidence)
    h.engine.resolve_contradiction(owner, winner_id=a, loser_id=b)


def _mentions(h: Harness, *needles: str) -> list[str]:
    return [text for text in h.scan_stores() if any(n in text for n in needles)]


def test_erasing_an_owner_leaves_no_item_of_the_new_kinds(any_backend: Harness) -> None:
    h = any_backend
    owner, kept = _owner(), _owner()
    marker, other = f"Zq{uuid.uuid4().hex[:12]}", f"Zq{uuid.uuid4().hex[:12]}"
    fill(h, owner, marker)
    fill(h, kept, other)
    assert _mentions(h, marker.casefold()), "the assertion keys hold the casefolded subject"

    receipt = h.engine.erase_owner(owner, confirm=owner.owner_id)
    while not receipt.complete:
        receipt = h.engine.erase_owner(owner, confirm=owner.owner_id)

    assert _mentions(h, marker, marker.casefold(), owner.owner_id) == []
    assert _mentions(h, other.casefold()), "the other owner keeps everything"


def test_deleting_a_memory_leaves_none_of_its_words_or_new_items(any_backend: Harness) -> None:
    h = any_backend
    owner = _owner()
    marker = f"Zq{uuid.uuid4().hex[:12]}"
    lisbon = _say(h, owner, f"{marker} lives in Lisbon.")
    berlin = _say(h, owner, f"{marker} moved from Lisbon to Berlin.")
    assert h.engine.get_event_extraction(owner, berlin).superseded

    for event_id in (lisbon, berlin):
        h.engine.delete_memory(owner, event_id)

    # The deletion records keep ids and counts; the saved extractions held the sentences.
    # (SQLite's full-text segments keep a deleted row's tokens until they merge: not a record.)
    left = [t for t in _mentions(h, marker, marker.casefold()) if "_fts_" not in t.split(" ")[0]]
    assert left == []

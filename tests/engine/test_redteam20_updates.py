"""Red-team tests of knowledge updates on ingest: hostile subjects, racing supersedences and
the largest extraction commit, on every backend."""

from __future__ import annotations

from prme.model.enums import LifecycleState
from prme.model.extraction import stored_assertion_key
from prme.model.records import MemoryNode
from tests.engine.test_ingest_updates import say
from tests.harness.engines import ALICE, Harness


def _claims(h: Harness, note: MemoryNode) -> list[MemoryNode]:
    (event_id,) = note.evidence_refs
    nodes = h.ledger.list_event_nodes(ALICE, event_id)
    return [n for n in nodes if stored_assertion_key(n.metadata) is not None]


def test_a_subject_whose_key_outgrows_a_sort_key_still_extracts_and_supersedes(
    any_backend: Harness,
) -> None:
    h = any_backend
    # "ΐ" casefolds to three characters of two bytes each: a 193-character subject makes
    # an assertion key of over 1,100 UTF-8 bytes, past DynamoDB's 1,024-byte sort key.
    name = "Ana-" + "ΐ" * 190
    first = say(h, f"{name} lives in Porto.")
    assert _claims(h, first), "the claim is extracted and stored"
    second = say(h, f"{name} lives in Berlin.")
    (old,) = _claims(h, first)
    assert h.ledger.get_node(ALICE, old.id).lifecycle_state is LifecycleState.SUPERSEDED  # type: ignore[union-attr]
    assert _claims(h, second)


"""Knowledge updates on ingest, on every backend: a claim that replaces an earlier value
supersedes it in the extraction's own commit; one source's assertion is stored once."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from prme.engine.extraction import MAX_SUPERSEDED, run_extractions
from prme.errors import StorageUnavailableError
from prme.model.enums import LifecycleState, NodeType, WorkKind
from prme.model.inputs import IngestInput, RetrieveInput
from prme.model.records import JournalRecord, MemoryNode, NodeChange, OwnerKey, WorkItem
from tests.harness.engines import ALICE, BOB, Harness

CLAIM = "prme_extraction_v1"


def say(h: Harness, text: str, owner: OwnerKey = ALICE, **fields: Any) -> MemoryNode:
    """Ingest one message (extraction waited for); its raw note, as stored now."""
    h.clock.advance(minutes=1)
    result = h.engine.ingest(
        owner,
        IngestInput.model_validate({"content": text, "wait_for_extraction": True, **fields}),
    )
    assert result.node_id is not None
    note = h.ledger.get_node(owner, result.node_id)
    assert note is not None
    return note


def state(h: Harness, node: MemoryNode, owner: OwnerKey = ALICE) -> LifecycleState:
    stored = h.ledger.get_node(owner, node.id)
    assert stored is not None
    return stored.lifecycle_state


def extract_item(h: Harness, event_id: str, owner: OwnerKey = ALICE) -> WorkItem:
    (item,) = [w for w in h.ledger.list_event_work(owner, event_id) if w.kind is WorkKind.EXTRACT]
    return item


def extraction_record(h: Harness, event_id: str) -> JournalRecord:
    item = extract_item(h, event_id)
    record = h.ledger.get_journal(ALICE, str(uuid.uuid5(uuid.UUID(item.id), "journal")))
    assert record is not None
    return record


def test_a_move_supersedes_the_old_residence_with_edge_and_journal(any_backend: Harness) -> None:
    h = any_backend
    sister = say(h, "My sister Ana lives in Porto.")
    lisbon = say(h, "I live in Lisbon.")

    berlin = say(h, "I moved from Lisbon to Berlin.")

    old = h.ledger.get_node(ALICE, lisbon.id)
    assert old is not None
    assert old.lifecycle_state is LifecycleState.SUPERSEDED
    assert old.valid_to is not None
    assert state(h, berlin) is not LifecycleState.SUPERSEDED
    assert state(h, sister) is LifecycleState.TENTATIVE  # someone else's residence
    (edge,) = [e for e in h.ledger.list_node_edges(ALICE, lisbon.id) if e.edge_type == "supersedes"]
    assert (edge.source_node_id, edge.target_node_id) == (berlin.id, lisbon.id)
    assert edge.evidence_refs == (berlin.evidence_refs[0],)
    record = extraction_record(h, berlin.evidence_refs[0])
    assert record.payload["superseded"] == [
        {"old_node_id": lisbon.id, "new_node_id": berlin.id, "edge_id": edge.id}
    ]


@pytest.mark.parametrize(
    "update",
    [
        "I no longer live in Lisbon.",
        "I now live in Berlin.",
        "Actually, I live in Berlin, not Lisbon.",
    ],
)
def test_negations_single_valued_facts_and_corrections_supersede(
    harness: Harness, update: str
) -> None:
    lisbon = say(harness, "I live in Lisbon.")

    say(harness, update)

    assert state(harness, lisbon) is LifecycleState.SUPERSEDED


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("I live in Lisbon.", "My sister moved to Berlin."),
        ("I live in Lisbon.", "I might move to Berlin."),
        ("I live in Lisbon.", "I live in Lisbon."),  # said again: nothing to replace
        ("I like tea.", "I like coffee."),  # many values may hold: no signal, no change
    ],
)
def test_other_subjects_possibilities_and_repetitions_supersede_nothing(
    harness: Harness, before: str, after: str
) -> None:
    first = say(harness, before)

    second = say(harness, after)

    assert state(harness, first) is LifecycleState.TENTATIVE
    assert state(harness, second) is LifecycleState.TENTATIVE


def test_a_preference_change_names_the_value_it_replaces(harness: Harness) -> None:
    tea = say(harness, "I like tea.")
    dogs = say(harness, "I like dogs.")

    say(harness, "I used to like tea but now I prefer coffee.")

    assert state(harness, tea) is LifecycleState.SUPERSEDED
    assert state(harness, dogs) is LifecycleState.TENTATIVE


def test_another_owners_claims_and_other_scopes_are_untouched(any_backend: Harness) -> None:
    h = any_backend
    bobs = say(h, "I live in Lisbon.", owner=BOB)
    project = say(h, "I live in Lisbon.", scope="project")

    say(h, "I moved from Lisbon to Berlin.")

    assert state(h, bobs, BOB) is LifecycleState.TENTATIVE
    assert state(h, project) is LifecycleState.TENTATIVE


def test_a_one_sentence_message_is_stored_once_with_its_claim_on_the_note(
    any_backend: Harness,
) -> None:
    h = any_backend
    note = say(h, "I live in Lisbon.")

    nodes = h.engine.get_event_nodes(ALICE, note.evidence_refs[0])

    assert [n.content for n in nodes if n.content == "I live in Lisbon."] == ["I live in Lisbon."]
    assert note.node_type is not NodeType.FACT
    claim = note.metadata[CLAIM]
    assert (claim["kind"], claim["assertion_key"], claim["polarity"]) == (
        "claim",
        "i|lives_in",
        "affirmed",
    )
    record = extraction_record(h, note.evidence_refs[0])
    assert record.payload["annotated_node_ids"] == [note.id]


def test_the_same_claim_twice_in_one_source_is_one_node(harness: Harness) -> None:
    note = say(harness, "I live in Lisbon. I live in Lisbon.")

    facts = [
        n
        for n in harness.engine.get_event_nodes(ALICE, note.evidence_refs[0])
        if n.node_type is NodeType.FACT
    ]

    assert [n.content for n in facts] == ["I live in Lisbon."]


def test_replaying_finished_extraction_work_changes_nothing(any_backend: Harness) -> None:
    h = any_backend
    lisbon = say(h, "I live in Lisbon.")
    berlin = say(h, "I moved from Lisbon to Berlin.")
    event_id = berlin.evidence_refs[0]
    item = extract_item(h, event_id)
    before = (h.engine.get_event_nodes(ALICE, event_id), h.ledger.list_node_edges(ALICE, lisbon.id))

    h.clock.advance(minutes=5)
    assert run_extractions(h.engine.deps, ALICE, [item]) is None

    after = (h.engine.get_event_nodes(ALICE, event_id), h.ledger.list_node_edges(ALICE, lisbon.id))
    assert after == before
    assert state(h, lisbon) is LifecycleState.SUPERSEDED


def test_the_supersedence_commits_with_the_extraction_or_not_at_all(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    lisbon = say(harness, "I live in Lisbon.")

    def failing(change: NodeChange) -> None:
        raise StorageUnavailableError()

    monkeypatch.setattr(harness.ledger, "commit_node_change", failing)
    with pytest.raises(StorageUnavailableError):
        say(harness, "I moved from Lisbon to Berlin.")

    assert state(harness, lisbon) is LifecycleState.TENTATIVE
    assert harness.ledger.list_node_edges(ALICE, lisbon.id) == []


def test_the_current_value_ranks_first_for_a_question_about_now(any_backend: Harness) -> None:
    h = any_backend
    say(h, "My sister Ana lives in Porto.")
    say(h, "I live in Lisbon.")
    berlin = say(h, "I moved from Lisbon to Berlin.")

    hits = h.engine.retrieve(ALICE, RetrieveInput(query="Where do I live now?"))

    assert hits.results[0].node_id == berlin.id
    assert berlin.metadata[CLAIM]["supersedes"]


def test_a_change_worded_record_beats_the_older_one_that_repeats_the_question(
    harness: Harness,
) -> None:
    # No shared key, so nothing is superseded: the wording alone says which is newer.
    h = harness
    say(h, "My job title is Junior Designer at Pixelworks.")
    senior = say(h, "Got promoted! I'm a Senior Designer now.")

    hits = h.engine.retrieve(ALICE, RetrieveInput(query="What is my current job title?"))

    assert hits.results[0].node_id == senior.id


def test_for_a_question_about_now_a_bare_name_ranks_after_the_records(harness: Harness) -> None:
    h = harness
    say(h, "We've got a two-bed in Dublin, near the canal.")
    say(h, "The lease in Dublin ended and we found a place in Galway.")
    question = RetrieveInput(query="Where do I live now?")

    results = h.engine.retrieve(ALICE, question).results
    nodes = [h.ledger.get_node(ALICE, r.node_id) for r in results]
    kinds = [n.node_type for n in nodes if n is not None]

    # The names ("Dublin", "Galway") come after every record, and the scores still say so.
    assert kinds[0] is NodeType.NOTE
    first_entity = kinds.index(NodeType.ENTITY)
    assert NodeType.ENTITY not in kinds[:first_entity] and set(kinds[first_entity:]) == {
        NodeType.ENTITY
    }
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)


def test_a_long_message_with_many_updates_fits_one_commit(any_backend: Harness) -> None:
    h = any_backend
    facts = ["I live in Lisbon.", "I work at Acme."] + [
        f"My favourite {thing} is {value}."
        for thing, value in [
            ("colour", "blue"),
            ("food", "sushi"),
            ("band", "Muse"),
            ("sport", "tennis"),
        ]
    ]
    for fact in facts:
        say(h, fact)
    updates = [
        "I moved from Lisbon to Berlin.",
        "I left Acme and joined Siemens.",
        "My favourite colour is green.",
        "My favourite food is ramen.",
        "My favourite band is Blur.",
        "My favourite sport is cricket.",
    ]
    filler = [f"Zoe {i} paid ${i}0 for Berlin tickets in May." for i in range(1, 30)]

    long_note = say(h, " ".join(updates + filler))

    record = extraction_record(h, long_note.evidence_refs[0])
    assert len(record.payload["superseded"]) == MAX_SUPERSEDED  # the most one commit takes
    assert len(record.payload["node_ids"]) == 20


def test_a_note_whose_every_claim_is_superseded_is_superseded_with_them(
    any_backend: Harness,
) -> None:
    h = any_backend
    lisbon = say(h, "I live in Lisbon. Loving it here!")
    (claim,) = [
        n
        for n in h.ledger.list_event_nodes(ALICE, lisbon.evidence_refs[0])
        if n.node_type is NodeType.FACT
    ]

    berlin = say(h, "I moved from Lisbon to Berlin.")

    assert state(h, claim) is LifecycleState.SUPERSEDED
    assert state(h, lisbon) is LifecycleState.SUPERSEDED  # the words of a stale value
    record = extraction_record(h, berlin.evidence_refs[0])
    assert {s["old_node_id"] for s in record.payload["superseded"]} == {claim.id, lisbon.id}


def test_a_note_that_still_says_something_current_stays(harness: Harness) -> None:
    both = say(harness, "I live in Lisbon. My sister lives in Porto.")

    say(harness, "I moved from Lisbon to Berlin.")

    assert state(harness, both) is LifecycleState.TENTATIVE


@pytest.mark.parametrize(
    ("correction", "session", "superseded"),
    [
        ("I meant Tuesday, not Thursday.", "visit", True),
        ("Hold on, I checked: it's Tuesday, not Thursday.", "visit", True),
        # A message of several sentences: the correction is a fact memory of its own.
        ("Sorry, I meant Tuesday, not Thursday. See you then!", "visit", True),
        # Another conversation: a correction answers what was said a moment ago.
        ("I meant Tuesday, not Thursday.", "later", False),
    ],
)
def test_a_correction_supersedes_what_it_corrects_in_its_session(
    any_backend: Harness, correction: str, session: str, superseded: bool
) -> None:
    h = any_backend
    said = say(h, "My dentist appointment is on Thursday.", session_id="visit")
    other = say(h, "My gym class is at noon.", session_id="visit")

    say(h, correction, session_id=session)

    expected = LifecycleState.SUPERSEDED if superseded else LifecycleState.TENTATIVE
    assert state(h, said) is expected
    assert state(h, other) is LifecycleState.TENTATIVE  # it does not name the withdrawn value

"""Assertion aggregation and fact state on every backend: exact counts, supersedence, negation,
knowledge_at, owner isolation and a scan that reads every page."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from prme.client import MemoryClient
from prme.engine import assertions
from prme.errors import InvalidRequestError
from prme.model.assertions import (
    AssertionAggregation,
    AssertionQuery,
    AssertionState,
    AssertionStateQuery,
)
from prme.model.enums import LifecycleState
from prme.model.inputs import IngestInput
from prme.model.records import (
    EXTRACTION_METADATA_KEY,
    JournalRecord,
    MemoryNode,
    NodeChange,
    OwnerKey,
)
from prme.settings import Settings
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness


def say(h: Harness, text: str, owner: OwnerKey = ALICE, **fields: Any) -> str:
    """Ingest one message with the rule extractor, wait for its claims, return its event id."""
    body = {"content": text, "wait_for_extraction": True, **fields}
    return h.engine.ingest(owner, IngestInput.model_validate(body)).event_id


def claim(h: Harness, event_id: str, owner: OwnerKey = ALICE) -> MemoryNode:
    """The one claim node extracted from a message."""
    (node,) = [
        n
        for n in h.engine.get_event_nodes(owner, event_id)
        if n.metadata.get(EXTRACTION_METADATA_KEY, {}).get("kind") == "claim"
    ]
    return node


def reshape(h: Harness, node: MemoryNode, **fields: Any) -> MemoryNode:
    """Rewrite a claim's recorded fields as a newer extractor writes them (polarity,
    replaces_object), keeping every time on the node as it was."""
    meta = {**node.metadata[EXTRACTION_METADATA_KEY], **fields}
    shaped = node.model_copy(update={"metadata": {**node.metadata, EXTRACTION_METADATA_KEY: meta}})
    owner = OwnerKey(tenant_id=node.tenant_id, owner_id=node.owner_id)
    journal = JournalRecord.build(
        record_id=f"test-reshape:{node.id}",
        owner=owner,
        operation="test_reshape",
        subject_id=node.id,
        created_at=h.clock.now(),
        payload={},
    )
    h.ledger.commit_node_change(NodeChange(updates=((node, shaped),), journal=journal))
    return shaped


def aggregate(h: Harness, owner: OwnerKey = ALICE, **fields: Any) -> AssertionAggregation:
    return h.engine.aggregate_assertions(owner, AssertionQuery.model_validate(fields))


def state(h: Harness, owner: OwnerKey = ALICE, **fields: Any) -> AssertionState:
    query = {"subject": "I", "predicate": "visited", **fields}
    return h.engine.get_assertion_state(owner, AssertionStateQuery.model_validate(query))


def counts(result: AssertionAggregation) -> dict[tuple[str | None, ...], int]:
    return {tuple(g.key.values()): g.count for g in result.groups}


def accounted(result: AssertionAggregation) -> None:
    """Every claim read is either counted or excluded for exactly one reason."""
    assert result.claim_nodes == result.counted + sum(result.exclusions.values())
    assert result.counted == sum(g.count for g in result.groups)


def values(result: AssertionState) -> list[str | None]:
    return [c.object for c in result.candidates]


def test_claims_are_counted_exactly_per_normalized_group(any_backend: Harness) -> None:
    h = any_backend
    lisbon = say(h, "I visited Lisbon.")
    berlin = [say(h, "I visited Berlin."), say(h, "I visited Berlin.")]
    say(h, "My sister Ana lives in Porto.")
    say(h, "I work at Acme.")
    result = aggregate(h, subjects=["  i "], predicates=["VISITED"], group_by=["object"])
    assert counts(result) == {("berlin",): 2, ("lisbon",): 1}
    top = result.groups[0]
    assert top.key == {"object": "berlin"}
    assert top.event_count == 2
    assert {e for s in top.samples for e in s.event_ids} == set(berlin)
    assert {s.object for s in top.samples} == {"Berlin"}  # as written
    assert result.groups[1].samples[0].event_ids == (lisbon,)
    assert result.exclusions == {"filtered": 2}
    assert (result.claim_nodes, result.matched, result.counted) == (5, 3, 3)
    assert result.scanned_nodes > result.claim_nodes  # entities are read too
    accounted(result)
    everything = aggregate(h, group_by=["subject", "predicate"])
    assert counts(everything) == {
        ("i", "visited"): 3,
        ("i", "work"): 1,
        ("my sister ana", "lives"): 1,
    }
    body = everything.model_dump(mode="json")
    assert body["stored_set_exhaustive"] is True
    assert body["extraction_coverage"] == "unknown"


def test_limits_cut_groups_and_samples_never_counts(any_backend: Harness) -> None:
    h = any_backend
    events = []
    for text in ("I visited Berlin.", "I visited Berlin.", "I visited Lisbon."):
        events.append(say(h, text))
        h.clock.advance(hours=1)
    result = aggregate(h, group_by=["object"], group_limit=1, sample_limit=1)
    assert [g.key for g in result.groups] == [{"object": "berlin"}]
    assert (result.group_count, result.groups_truncated, result.counted) == (2, True, 3)
    (group,) = result.groups
    assert group.samples_truncated and len(group.samples) == 1
    assert group.samples[0].node_id == claim(h, events[0]).id  # the oldest


def test_other_owners_and_tenants_are_never_counted(any_backend: Harness) -> None:
    h = any_backend
    say(h, "I visited Lisbon.")
    say(h, "I visited Oslo.", owner=BOB)
    say(h, "I visited Rome.", owner=OTHER_TENANT_ALICE)
    assert counts(aggregate(h, group_by=["object"])) == {("lisbon",): 1}
    assert counts(aggregate(h, BOB, group_by=["object"])) == {("oslo",): 1}
    other = aggregate(h, OTHER_TENANT_ALICE, group_by=["object"])
    assert counts(other) == {("rome",): 1}
    assert other.claim_nodes == 1
    assert values(state(h)) == ["Lisbon"]
    assert values(state(h, BOB)) == ["Oslo"]
    empty = aggregate(h, OwnerKey(tenant_id="t1", owner_id="nobody"))
    assert (empty.scanned_nodes, empty.groups, empty.group_count) == (0, (), 0)
    nobody = state(h, OwnerKey(tenant_id="t1", owner_id="nobody"))
    assert (nobody.status, nobody.timeline) == ("unknown", ())


def test_the_scan_reads_every_page(any_backend: Harness) -> None:
    h = any_backend
    cities = ["Lisbon", "Berlin", "Porto", "Oslo", "Rome"]
    for city in cities:
        say(h, f"I visited {city}.")
        h.clock.advance(minutes=1)
    stored = len(h.ledger.list_nodes(ALICE))
    query = AssertionQuery(group_by=("object",))
    result = assertions.aggregate_assertions(h.engine.deps, ALICE, query, page_size=2)
    # Each message makes an entity and a claim: five claims across at least five pages.
    assert result.scanned_nodes == stored >= 10
    assert result.counted == 5
    assert counts(result) == {(c.lower(),): 1 for c in cities}
    fact = AssertionStateQuery(subject="I", predicate="visited")
    paged = assertions.get_assertion_state(h.engine.deps, ALICE, fact, page_size=2)
    assert paged.scanned_nodes == stored
    assert (paged.timeline_count, paged.candidate_count) == (5, 5)
    assert paged.status == "ambiguous"
    cut = state(h, limit=2)
    assert [e.object for e in cut.timeline] == ["Oslo", "Rome"]  # the newest, in order
    assert (cut.timeline_truncated, cut.timeline_count) == (True, 5)
    assert [c.object for c in cut.candidates] == ["Rome", "Oslo"]
    assert cut.candidate_count == 5


def test_a_supersedence_ends_the_old_value_and_is_judged_as_of_knowledge_at(
    any_backend: Harness,
) -> None:
    h = any_backend
    t0 = h.clock.now()
    lisbon = claim(h, say(h, "I visited Lisbon."))
    h.clock.advance(days=10)
    t1 = h.clock.now()
    berlin_event = say(h, "I visited Berlin.")
    berlin = claim(h, berlin_event)
    # Two claims, nothing superseded: both are candidates, none is chosen.
    before = state(h)
    assert before.status == "ambiguous" and before.value is None
    assert values(before) == ["Berlin", "Lisbon"]  # newest first
    h.clock.advance(days=1)
    t2 = h.clock.now()
    h.engine.supersede(
        ALICE, old_node_id=lisbon.id, new_node_id=berlin.id, evidence_id=berlin_event
    )
    h.clock.advance(days=1)

    now = state(h)
    assert (now.status, now.value) == ("current", "Berlin")
    assert [(e.object, e.lifecycle_state, e.valid_to) for e in now.timeline] == [
        ("Lisbon", LifecycleState.SUPERSEDED, t2),
        ("Berlin", berlin.lifecycle_state, None),
    ]
    assert [e.current for e in now.timeline] == [False, True]
    assert now.timeline[1].event_ids == (berlin_event,)
    # Inside Lisbon's window, before Berlin was said.
    assert state(h, valid_at=t0 + timedelta(days=1)).value == "Lisbon"
    # Known just before the supersedence: Lisbon was still open, so the state was ambiguous.
    then = state(h, knowledge_at=t2 - timedelta(hours=1))
    assert then.status == "ambiguous"
    assert then.timeline[0].active_at_knowledge_at and then.timeline[0].valid_to is None
    assert then.knowledge_at_inexact == 0
    # Known before Berlin was stored: Lisbon alone.
    early = state(h, knowledge_at=t1 - timedelta(hours=1))
    assert (early.status, early.value, early.timeline_count) == ("current", "Lisbon", 1)

    default = aggregate(h, group_by=["object"])
    assert counts(default) == {("berlin",): 1}
    assert default.exclusions == {"inactive": 1}
    known_then = aggregate(h, group_by=["object"], knowledge_at=t2 - timedelta(hours=1))
    assert counts(known_then) == {("berlin",): 1, ("lisbon",): 1}
    assert known_then.knowledge_at_inexact == 0
    first_day = aggregate(h, group_by=["object"], knowledge_at=t0 + timedelta(hours=1))
    assert counts(first_day) == {("lisbon",): 1}
    assert first_day.exclusions == {"not_yet_known": 1}
    history = aggregate(
        h, group_by=["object"], retrieval_mode="explicit", lifecycle_states=["superseded"]
    )
    assert counts(history) == {("lisbon",): 1}
    assert history.exclusions == {"lifecycle_state": 1}
    window = aggregate(
        h, group_by=["object"], retrieval_mode="explicit", valid_at=t0 + timedelta(days=1)
    )
    assert counts(window) == {("lisbon",): 1}
    assert window.exclusions == {"not_valid_at": 1}


def test_a_negation_ends_a_value_instead_of_being_one(any_backend: Harness) -> None:
    h = any_backend
    t0 = h.clock.now()
    lisbon = claim(h, say(h, "I visited Lisbon."))
    h.clock.advance(days=5)
    t1 = h.clock.now()
    # The shape a negation-aware extractor records for "I don't live in Lisbon anymore."
    negation = reshape(
        h,
        claim(h, say(h, "I don't live in Lisbon anymore.")),
        predicate="visited",
        object="Lisbon",
        polarity="negated",
        replaces_object=None,
    )
    ended = state(h)
    assert (ended.status, ended.candidates) == ("unknown", ())
    assert [(e.object, e.polarity, e.ended_by) for e in ended.timeline] == [
        ("Lisbon", "affirmed", negation.id),
        ("Lisbon", "negated", None),
    ]
    assert state(h, valid_at=t0 + timedelta(days=1)).value == "Lisbon"
    h.clock.advance(days=5)
    say(h, "I visited Berlin.")
    moved = state(h)
    assert (moved.status, moved.value) == ("current", "Berlin")
    assert moved.timeline[0].node_id == lisbon.id and not moved.timeline[0].current

    by_polarity = aggregate(h, predicates=["visited"], group_by=["object", "polarity"])
    assert counts(by_polarity) == {
        ("lisbon", "affirmed"): 1,
        ("berlin", "affirmed"): 1,
        ("lisbon", "negated"): 1,
    }
    denied = aggregate(h, polarities=["negated"], group_by=["subject"])
    assert counts(denied) == {("i",): 1}
    assert denied.groups[0].samples[0].node_id == negation.id
    assert denied.groups[0].samples[0].valid_from == t1


def test_broken_claims_are_counted_as_malformed_never_guessed(any_backend: Harness) -> None:
    h = any_backend
    say(h, "I visited Lisbon.")
    reshape(h, claim(h, say(h, "I visited Berlin.")), polarity="maybe")
    reshape(h, claim(h, say(h, "I visited Porto.")), subject=5)
    result = aggregate(h, group_by=["object"])
    assert counts(result) == {("lisbon",): 1}
    assert result.exclusions == {"malformed": 2}
    accounted(result)
    assert [e.object for e in state(h).timeline] == ["Lisbon"]


def test_state_changed_after_knowledge_at_without_a_supersedence_is_reported_inexact(
    any_backend: Harness,
) -> None:
    h = any_backend
    lisbon = claim(h, say(h, "I visited Lisbon."))
    h.clock.advance(days=1)
    known = h.clock.now()
    h.clock.advance(days=1)
    h.engine.archive(ALICE, lisbon.id)
    result = aggregate(h, group_by=["object"], knowledge_at=known)
    # The archive time is not recorded on the node: judged by its stored state, and said so.
    assert result.exclusions == {"inactive": 1}
    assert result.knowledge_at_inexact == 1
    assert state(h, knowledge_at=known).knowledge_at_inexact == 1


def test_event_time_window_is_inclusive_and_needs_an_event_time(any_backend: Harness) -> None:
    h = any_backend
    say(h, "I visited Lisbon.", event_time="2024-01-10T12:00:00Z")
    say(h, "I visited Berlin.", event_time="2024-03-10T12:00:00Z")
    say(h, "I visited Porto.")
    result = aggregate(
        h,
        group_by=["object"],
        event_time_from="2024-01-01T00:00:00Z",
        event_time_to="2024-01-10T12:00:00Z",
    )
    assert counts(result) == {("lisbon",): 1}
    assert result.exclusions == {"no_event_time": 1, "outside_event_time_window": 1}
    assert result.matched == 1


def test_client_validates_a_dict_query_before_reading(tmp_path: Path) -> None:
    with MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing")) as memory:
        memory.ingest("I visited Lisbon.", wait_for_extraction=True)
        with pytest.raises(InvalidRequestError) as raised:
            memory.aggregate_assertions({"group_by": []})
        assert raised.value.field[:2] == ("query", "group_by")
        result = memory.aggregate_assertions({"group_by": ["object"]})
        assert counts(result) == {("lisbon",): 1}
        fact = memory.get_assertion_state({"subject": "I", "predicate": "visited"})
        assert (fact.status, fact.value) == ("current", "Lisbon")
        assert isinstance(fact.valid_at, datetime)


def test_a_fact_is_read_across_its_predicate_family_as_ingest_updates_it(
    any_backend: Harness,
) -> None:
    """ "live in", "moved to" and "relocated to" state one fact (`lives_in`), the same family
    ingest matches when it supersedes: the state of "I live" follows a move."""
    h = any_backend
    say(h, "I live in Lisbon.")
    h.clock.advance(hours=1)
    say(h, "I moved from Lisbon to Berlin.")
    now = state(h, predicate="live")
    assert (now.status, now.value) == ("current", "Berlin")
    assert [(e.object, e.current) for e in now.timeline] == [("in Lisbon", False), ("Berlin", True)]
    assert now.timeline[0].lifecycle_state is LifecycleState.SUPERSEDED
    # The family's own name reads the same fact; the count by family sees both claims.
    assert state(h, predicate="lives_in").value == "Berlin"
    counted = aggregate(h, predicates=["live"], group_by=["object"], retrieval_mode="explicit")
    assert counts(counted) == {("berlin",): 1, ("in lisbon",): 1}
    assert counts(aggregate(h, predicates=["live"], group_by=["object"])) == {("berlin",): 1}

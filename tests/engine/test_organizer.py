"""The organizer on every backend: each job's rule at its boundary, its change journaled with
it, reruns that change nothing, runs that stop at the budget and resume, owners kept apart."""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from prme.engine import organizer
from prme.engine.organizer import change_record_id
from prme.engine.organizer_rules import OrganizerConfig, scheduled_pass_due
from prme.model.enums import LifecycleState
from prme.model.inputs import StoreInput
from prme.model.organizer import OrganizeInput, OrganizeReport
from prme.model.records import (
    DECAY_METADATA_KEY,
    JournalRecord,
    MemoryNode,
    NodeChange,
    OwnerKey,
)
from tests.harness.engines import ALICE, BOB, Harness

DAY_S = 86400.0


def store(h: Harness, content: str, owner: OwnerKey = ALICE, **fields: Any) -> str:
    fields.setdefault("ttl_days", None)
    result = h.engine.store(owner, StoreInput.model_validate({"content": content, **fields}))
    assert result.node_id is not None
    return result.node_id


def node(h: Harness, node_id: str, owner: OwnerKey = ALICE) -> MemoryNode:
    found = h.ledger.get_node(owner, node_id)
    assert found is not None
    return found


def organize(
    h: Harness, *jobs: str, owner: OwnerKey = ALICE, budget_ms: int = 60_000
) -> OrganizeReport:
    request = OrganizeInput.model_validate({"jobs": list(jobs) or None, "budget_ms": budget_ms})
    return h.engine.organize(owner, request)


def set_values(h: Harness, node_id: str, **values: Any) -> None:
    """Give a node chosen values (as another writer would), journaled like any change."""
    before = node(h, node_id)
    after = before.model_copy(update=values)
    journal = JournalRecord.build(
        record_id=h.engine.deps.ids(),
        owner=ALICE,
        operation="test_values",
        subject_id=node_id,
        created_at=h.clock.now(),
        payload={},
    )
    h.ledger.commit_node_change(NodeChange(updates=((before, after),), journal=journal))


def journal_of(h: Harness, owner: OwnerKey, operation: str) -> list[JournalRecord]:
    records: list[JournalRecord] = []
    after: str | None = None
    while True:
        page = h.ledger.list_journal(owner, "", after_id=after, limit=500)
        records.extend(r for r in page if r.operation == operation)
        if len(page) < 500:
            return records
        after = page[-1].id


def test_promotion_waits_for_the_age_and_needs_evidence(any_backend: Harness) -> None:
    h = any_backend
    with_evidence = store(h, "I work at the harbour office")
    without_evidence = store(h, "My badge number is 4471")
    set_values(h, without_evidence, evidence_refs=())
    # A second short of seven days: nothing is due.
    h.clock.advance(seconds=7 * DAY_S - 1)
    assert organize(h, "promote").per_job["promote"].changed == 0
    assert node(h, with_evidence).lifecycle_state is LifecycleState.TENTATIVE
    h.clock.advance(seconds=1)
    report = organize(h, "promote")
    assert (report.per_job["promote"].scanned, report.per_job["promote"].changed) == (2, 1)
    promoted = node(h, with_evidence)
    assert promoted.lifecycle_state is LifecycleState.STABLE
    assert node(h, without_evidence).lifecycle_state is LifecycleState.TENTATIVE
    # The change and its journal record were committed together, under the id derived from
    # the node, the job and the new state.
    record = h.ledger.get_journal(ALICE, change_record_id(with_evidence, "promote", "stable"))
    assert record is not None and record.operation == "organizer_promote"
    assert record.payload["to_state"] == "stable" and record.subject_id == with_evidence
    # A rerun changes nothing and journals nothing more.
    assert organize(h, "promote").per_job["promote"].changed == 0
    assert len(journal_of(h, ALICE, "organizer_promote")) == 1


def test_decay_follows_the_profile_from_its_base_and_writes_in_steps(any_backend: Harness) -> None:
    h = any_backend
    asserted = store(h, "I keep my passport in the desk", confidence=0.8)
    observed = store(h, "The kettle broke on Monday", epistemic_type="observed", confidence=0.8)
    # Half a day moves an asserted memory's salience by 0.005: under the write step.
    h.clock.advance(seconds=DAY_S / 2)
    assert organize(h, "decay").per_job["decay"].changed == 0
    h.clock.advance(seconds=9.5 * DAY_S)
    assert organize(h, "decay").per_job["decay"].changed == 2
    decayed = node(h, asserted)
    # medium: 0.02 a day over ten days, from the stored values.
    assert decayed.salience == round(0.5 * math.exp(-0.2), 4)
    assert decayed.confidence == round(0.8 * math.exp(-0.2), 4)
    assert node(h, observed).salience == round(0.5 * math.exp(-0.05), 4)  # slow: 0.005 a day
    assert decayed.metadata[DECAY_METADATA_KEY]["salience"] == 0.5
    # Ten more days decay from the same base, not from the written values.
    h.clock.advance(seconds=10 * DAY_S)
    assert organize(h, "decay").per_job["decay"].changed == 2
    assert node(h, asserted).salience == round(0.5 * math.exp(-0.4), 4)
    # Every write is journaled, and a rerun at the same time writes nothing.
    assert organize(h, "decay").per_job["decay"].changed == 0
    records = journal_of(h, ALICE, "organizer_decay")
    assert Counter(r.subject_id for r in records) == {asserted: 2, observed: 2}
    # Reinforcing makes the reinforced values the new base: nothing decays at that moment.
    h.engine.reinforce(ALICE, asserted)
    assert organize(h, "decay").per_job["decay"].changed == 0


@pytest.mark.parametrize(
    ("salience", "confidence", "archived"),
    [
        (0.099, 0.399, True),
        (0.10, 0.399, False),  # salience at the threshold
        (0.099, 0.40, False),  # confidence at the threshold
        (0.049, 0.95, True),  # below the force threshold, whatever the confidence
        (0.05, 0.95, False),
    ],
)
def test_archive_thresholds(
    any_backend: Harness, salience: float, confidence: float, archived: bool
) -> None:
    h = any_backend
    node_id = store(h, "The old gym locker code")
    set_values(h, node_id, salience=salience, confidence=confidence)
    report = organize(h, "archive")
    state = node(h, node_id).lifecycle_state
    assert (state is LifecycleState.ARCHIVED) is archived
    assert report.per_job["archive"].changed == int(archived)
    if archived:
        record = h.ledger.get_journal(ALICE, change_record_id(node_id, "archive", "archived"))
        assert record is not None and record.payload["salience"] == salience


@pytest.mark.parametrize(("confidence", "deprecated"), [(0.149, True), (0.15, False)])
def test_deprecation_threshold(any_backend: Harness, confidence: float, deprecated: bool) -> None:
    h = any_backend
    node_id = store(h, "Maybe the meeting moved to Friday")
    set_values(h, node_id, confidence=confidence)
    assert organize(h, "deprecate").per_job["deprecate"].changed == int(deprecated)
    state = node(h, node_id).lifecycle_state
    assert (state is LifecycleState.DEPRECATED) is deprecated


def test_dedup_supersedes_the_weaker_same_text_memory_of_one_scope(any_backend: Harness) -> None:
    h = any_backend
    weaker = store(h, "I am allergic to penicillin", confidence=0.6)
    h.clock.advance(seconds=60)
    kept = store(h, "i am  ALLERGIC to penicillin", confidence=0.9)
    other_scope = store(h, "I am allergic to penicillin", scope="project")
    different = store(h, "I am allergic to peanuts")
    report = organize(h, "dedup")
    assert report.per_job["dedup"].changed == 1
    assert node(h, weaker).lifecycle_state is LifecycleState.SUPERSEDED
    for untouched in (kept, other_scope, different):
        assert node(h, untouched).lifecycle_state is LifecycleState.TENTATIVE
    edges = h.ledger.list_node_edges(ALICE, weaker)
    assert [(e.edge_type, e.source_node_id) for e in edges] == [("supersedes", kept)]
    (record,) = journal_of(h, ALICE, "organizer_dedup")
    assert record.payload["kept_node_id"] == kept and record.subject_id == weaker
    # A rerun finds nothing more to do.
    assert organize(h, "dedup").per_job["dedup"].changed == 0


def test_ttl_sweep_archives_the_owners_expired_memories(any_backend: Harness) -> None:
    h = any_backend
    expiring = store(h, "Parking spot 14 today", ttl_days=1)
    lasting = store(h, "My blood type is O negative")
    h.clock.advance(seconds=DAY_S - 1)
    assert organize(h, "ttl_sweep").per_job["ttl_sweep"].changed == 0
    h.clock.advance(seconds=1)
    assert organize(h, "ttl_sweep").per_job["ttl_sweep"].changed == 1
    assert node(h, expiring).lifecycle_state is LifecycleState.ARCHIVED
    assert node(h, lasting).lifecycle_state is LifecycleState.TENTATIVE
    assert [r.subject_id for r in journal_of(h, ALICE, "ttl_expiry_archive")] == [expiring]
    # Neither a rerun nor the tenant-wide expiry pass archives it again.
    assert organize(h, "ttl_sweep").per_job["ttl_sweep"].changed == 0
    assert h.engine.archive_expired() == 0


def test_other_owners_are_untouched(any_backend: Harness) -> None:
    h = any_backend
    bobs = store(h, "Bob's note about the boat", owner=BOB)
    store(h, "Alice's note about the bike")
    h.clock.advance(seconds=400 * DAY_S)
    report = organize(h)
    assert report.complete and report.per_job["promote"].scanned == 1
    assert node(h, bobs, BOB).lifecycle_state is LifecycleState.TENTATIVE
    assert node(h, bobs, BOB).salience == 0.5
    assert journal_of(h, BOB, "organizer_promote") == []


@pytest.fixture
def ticking_monotonic(monkeypatch: pytest.MonkeyPatch) -> None:
    """The organizer's stopwatch moves 1 ms each time it is read, so a budget of N ms lets a
    job examine a known, small number of nodes whatever the backend's speed."""
    ticks = iter(range(10**9))
    monkeypatch.setattr(organizer, "monotonic", lambda: next(ticks) / 1000)


def test_a_spent_budget_stops_part_way_and_the_next_runs_resume(
    any_backend: Harness, ticking_monotonic: None
) -> None:
    h = any_backend
    ids = {store(h, f"Fact number {n} about the garden") for n in range(12)}
    h.clock.advance(seconds=8 * DAY_S)
    runs: list[OrganizeReport] = []
    while not runs or not runs[-1].complete:
        runs.append(organize(h, "promote", budget_ms=4))
        assert len(runs) < 20
    assert len(runs) > 1 and not runs[0].complete
    assert runs[0].per_job["promote"].cursor is not None
    # Each node was examined once over the resumed pass and promoted exactly once.
    assert sum(r.per_job["promote"].scanned for r in runs) == len(ids)
    assert sum(r.per_job["promote"].changed for r in runs) == len(ids)
    assert Counter(
        r.subject_id for r in journal_of(h, ALICE, "organizer_promote")
    ) == dict.fromkeys(ids, 1)
    assert {node(h, i).lifecycle_state for i in ids} == {LifecycleState.STABLE}
    # The pass is finished: the next run starts from the first node and changes nothing.
    again = organize(h, "promote")
    assert again.complete and again.per_job["promote"].changed == 0
    assert again.per_job["promote"].scanned == len(ids)


def test_the_maintenance_pass_reaches_every_owner(any_backend: Harness) -> None:
    h = any_backend
    alices = store(h, "Alice waters the plants on Sundays")
    bobs = store(h, "Bob cycles to work", owner=BOB)
    h.clock.advance(seconds=8 * DAY_S + 3600)  # 01:00 UTC: outside the 03:00 window
    listed: list[str] = []

    def tenants() -> list[str]:
        listed.append(ALICE.tenant_id)
        return [ALICE.tenant_id]

    # Outside the daily window nothing is listed, read or changed.
    assert h.engine.organize_owners(tenants, budget_ms=60_000) is None
    assert listed == [] and node(h, alices).lifecycle_state is LifecycleState.TENTATIVE
    h.clock.advance(seconds=2 * 3600 + 120)  # 03:02 UTC
    result = h.engine.organize_owners(tenants, budget_ms=60_000)
    assert result is not None and (result.owners_visited, result.complete) == (2, True)
    assert node(h, alices).lifecycle_state is LifecycleState.STABLE
    assert node(h, bobs, BOB).lifecycle_state is LifecycleState.STABLE


@pytest.mark.parametrize(
    ("at", "due"),
    [("02:59", False), ("03:00", True), ("03:09", True), ("03:10", False), ("23:00", False)],
)
def test_the_scheduled_pass_runs_only_in_its_daily_window(at: str, due: bool) -> None:
    hour, minute = map(int, at.split(":"))
    now = datetime(2025, 3, 1, hour, minute, tzinfo=UTC)
    assert scheduled_pass_due(now, OrganizerConfig()) is due
    assert not scheduled_pass_due(now, OrganizerConfig(scheduled_hour_utc=None))
    # A window that crosses midnight stays open after it.
    late = OrganizerConfig(scheduled_hour_utc=23, scheduled_window_minutes=120)
    assert scheduled_pass_due(datetime(2025, 3, 2, 0, 30, tzinfo=UTC), late)

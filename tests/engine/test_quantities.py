"""Grounded quantity aggregation on every backend: exact per-unit totals of what still holds."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from prme.client import MemoryClient
from prme.errors import InvalidRequestError
from prme.model.enums import NodeType
from prme.model.inputs import IngestInput
from prme.model.quantities import QuantityAggregation, QuantityAggregationQuery
from prme.model.records import (
    EXTRACTION_METADATA_KEY,
    JournalRecord,
    MemoryNode,
    NodeChange,
    OwnerKey,
)
from prme.settings import Settings
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness

SHELTER = "I raised $1,200 for the shelter."
BAKE_SALE = "I raised $300 at the bake sale."
TOGETHER = "We raised $300 together."
EUROS = "I raised 50 euros online."


def say(h: Harness, text: str, owner: OwnerKey = ALICE, event_time: str | None = None) -> str:
    """Ingest one message, wait for its extraction, and return its event id."""
    fields: dict[str, Any] = {"content": text, "wait_for_extraction": True}
    if event_time is not None:
        fields["event_time"] = event_time
    return h.engine.ingest(owner, IngestInput.model_validate(fields)).event_id


def aggregate(h: Harness, owner: OwnerKey = ALICE, **fields: Any) -> QuantityAggregation:
    return h.engine.aggregate_quantities(owner, QuantityAggregationQuery.model_validate(fields))


def totals(result: QuantityAggregation) -> dict[str | None, Decimal]:
    return {g.unit: g.total for g in result.groups}


def quantity_node(h: Harness, event_id: str, owner: OwnerKey = ALICE) -> MemoryNode:
    (node,) = [
        n
        for n in h.engine.get_event_nodes(owner, event_id)
        if n.metadata.get(EXTRACTION_METADATA_KEY, {}).get("kind") == "quantity"
    ]
    return node


def tamper(h: Harness, node: MemoryNode, **changes: Any) -> None:
    """Rewrite a stored quantity node behind the engine's back, as a faulty writer could."""
    meta = {**node.metadata[EXTRACTION_METADATA_KEY], **changes.pop("quantity", {})}
    tampered = node.model_copy(
        update={"metadata": {**node.metadata, EXTRACTION_METADATA_KEY: meta}, **changes}
    )
    owner = OwnerKey(tenant_id=node.tenant_id, owner_id=node.owner_id)
    journal = JournalRecord.build(
        record_id=f"test-tamper:{node.id}",
        owner=owner,
        operation="test_tamper",
        subject_id=node.id,
        created_at=h.clock.now(),
        payload={},
    )
    h.ledger.commit_node_change(NodeChange(updates=((node, tampered),), journal=journal))


def accounted(result: QuantityAggregation) -> None:
    """Every quantity read is either counted or excluded for exactly one reason."""
    assert result.quantity_nodes == result.counted + sum(result.exclusions.values())
    assert result.counted == sum(g.count for g in result.groups)


def test_amounts_are_totalled_per_unit_and_never_converted(any_backend: Harness) -> None:
    h = any_backend
    for text in (SHELTER, BAKE_SALE, EUROS, "I ran 5 km this morning."):
        say(h, text)
    result = aggregate(h, subjects=["I"], predicates=["raised"], group_by=["unit"])
    assert totals(result) == {"$": Decimal("1500"), "euros": Decimal("50")}
    dollars = result.groups[0]
    assert (dollars.unit, dollars.count, dollars.event_count) == ("$", 2, 2)
    assert (dollars.minimum, dollars.maximum) == (Decimal("300"), Decimal("1200"))
    assert {s.evidence_quote for s in dollars.samples} == {SHELTER, BAKE_SALE}
    assert result.exclusions == {"filtered": 1}  # the run
    assert result.scanned_nodes >= result.quantity_nodes == 4
    accounted(result)
    body = result.model_dump(mode="json")
    assert body["groups"][0]["total"] == "1500"
    assert body["stored_set_exhaustive"] is True
    assert body["unit_conversion"] == "none"
    assert body["consistency"] == "complete_for_unchanged_store"
    assert body["extraction_coverage"] == "unknown"


def test_sums_are_exact_decimals(any_backend: Harness) -> None:
    h = any_backend
    say(h, "I spent $0.10 on gum.")
    say(h, "I spent $0.20 on candy.")
    (group,) = aggregate(h, predicates=["spent"]).groups
    assert group.total == Decimal("0.30")
    assert group.model_dump(mode="json")["total"] == "0.30"  # not 0.30000000000000004


def test_i_and_we_are_kept_apart(any_backend: Harness) -> None:
    h = any_backend
    for text in (SHELTER, TOGETHER):
        say(h, text)
    mine = h.engine.aggregate_quantities_text(ALICE, "How much did I raise?")
    ours = h.engine.aggregate_quantities_text(ALICE, "How much did we raise?")
    assert mine.aggregation is not None and ours.aggregation is not None
    assert totals(mine.aggregation) == {"$": Decimal("1200")}
    assert totals(ours.aggregation) == {"$": Decimal("300")}
    by_subject = aggregate(h, group_by=["unit", "subject"])
    assert [(g.subject, g.total) for g in by_subject.groups] == [
        ("I", Decimal("1200")),
        ("We", Decimal("300")),
    ]


def test_count_question_totals_the_counted_noun(any_backend: Harness) -> None:
    h = any_backend
    for text in ("I bought 3 books.", "I bought 2 novels.", "I bought 4 books for the class."):
        say(h, text)
    answer = h.engine.aggregate_quantities_text(ALICE, "How many books did I buy?")
    assert answer.plan.status == "ready"
    assert answer.aggregation is not None
    assert totals(answer.aggregation) == {"books": Decimal("7")}


def test_predicate_prefixes_match_the_predicate_or_an_underscore_extension(
    any_backend: Harness,
) -> None:
    h = any_backend
    say(h, "I bought 2 novels.")  # predicate bought_novels
    say(h, "I bought 3 books.")  # predicate bought
    odd = say(h, "I bought 4 books at the boughtx market.")
    # A grounded predicate that merely starts with the same letters.
    tamper(h, quantity_node(h, odd), quantity={"predicate": "boughtx"})
    result = aggregate(h, predicate_prefixes=["Bought"], group_by=["unit", "predicate"])
    assert [(g.predicate, g.unit, g.total) for g in result.groups] == [
        ("bought", "books", Decimal("3")),
        ("bought_novels", "novels", Decimal("2")),
    ]
    assert result.exclusions == {"filtered": 1}
    # The same node counts when named exactly: it was left out by the prefix rule alone.
    assert totals(aggregate(h, predicates=["boughtx"])) == {"books": Decimal("4")}


def test_tampered_quantities_are_excluded_and_never_summed(any_backend: Harness) -> None:
    h = any_backend
    say(h, SHELTER)
    cases: dict[str, dict[str, Any]] = {
        "value_not_in_evidence": {"quantity": {"value": "9999"}},
        "unparsable_value": {"quantity": {"value": "1.3e3"}},
        "evidence_not_in_source": {
            "quantity": {"value": "400", "evidence_quote": "I raised $400 for the shelter."}
        },
        "unit_not_in_evidence": {"quantity": {"unit": "€"}},
        "claim_not_in_source": {"quantity": {"subject": "Ana"}},
        "source_missing": {"evidence_refs": ("00000000-0000-4000-8000-000000000000",)},
        "malformed": {"quantity": {"value": 1200}},
    }
    for changes in cases.values():
        tamper(h, quantity_node(h, say(h, BAKE_SALE)), **changes)
    result = aggregate(h, group_by=["unit"])
    assert totals(result) == {"$": Decimal("1200")}
    assert result.counted == 1
    assert result.exclusions == dict.fromkeys(sorted(cases), 1)
    accounted(result)


def test_archived_quantities_are_left_out_unless_asked_for(any_backend: Harness) -> None:
    h = any_backend
    say(h, SHELTER)
    h.engine.archive(ALICE, quantity_node(h, say(h, BAKE_SALE)).id)
    result = aggregate(h, group_by=["unit"])
    assert totals(result) == {"$": Decimal("1200")}
    assert result.exclusions == {"inactive": 1}
    assert result.matched == 2
    everything = aggregate(h, group_by=["unit"], include_inactive=True)
    assert totals(everything) == {"$": Decimal("1500")}


def test_owners_and_tenants_never_see_each_others_quantities(any_backend: Harness) -> None:
    h = any_backend
    say(h, SHELTER)
    say(h, "I raised $70 for the club.", owner=BOB)
    say(h, "I raised $5,000 for the gala.", owner=OTHER_TENANT_ALICE)
    assert totals(aggregate(h, group_by=["unit"])) == {"$": Decimal("1200")}
    assert totals(aggregate(h, BOB, group_by=["unit"])) == {"$": Decimal("70")}
    other = aggregate(h, OTHER_TENANT_ALICE, group_by=["unit"])
    assert totals(other) == {"$": Decimal("5000")}
    assert other.quantity_nodes == 1


def test_event_time_window_is_inclusive_and_needs_an_event_time(any_backend: Harness) -> None:
    h = any_backend
    say(h, "I raised $10 in January.", event_time="2024-01-10T12:00:00Z")
    say(h, "I raised $20 in February.", event_time="2024-02-10T12:00:00Z")
    say(h, "I raised $40 at some point.")
    result = aggregate(
        h,
        group_by=["unit"],
        event_time_from="2024-01-01T00:00:00Z",
        event_time_to="2024-01-10T12:00:00Z",
    )
    assert totals(result) == {"$": Decimal("10")}
    assert result.exclusions == {"no_event_time": 1, "outside_event_time_window": 1}
    (group,) = result.groups
    assert group.earliest_event_time == group.latest_event_time
    assert group.earliest_event_time == datetime(2024, 1, 10, 12, tzinfo=UTC)
    assert totals(aggregate(h, group_by=["unit"])) == {"$": Decimal("70")}


def test_repeats_across_messages_count_and_are_flagged(any_backend: Harness) -> None:
    h = any_backend
    say(h, SHELTER)
    say(h, SHELTER)
    (group,) = aggregate(h, group_by=["unit"]).groups
    assert (group.total, group.count, group.event_count) == (Decimal("2400"), 2, 2)
    assert group.repeated_in_other_events == 1


def test_samples_and_groups_are_bounded_in_a_stable_order(any_backend: Harness) -> None:
    h = any_backend
    for day, text in enumerate((SHELTER, BAKE_SALE, EUROS, "I ran 5 km."), start=1):
        say(h, text, event_time=f"2024-03-0{day}T09:00:00Z")
    result = aggregate(h, group_by=["unit"], sample_limit=1, group_limit=2)
    assert [g.unit for g in result.groups] == ["$", "euros"]
    assert (result.group_count, result.groups_truncated) == (3, True)
    dollars = result.groups[0]
    assert [s.evidence_quote for s in dollars.samples] == [SHELTER]  # the earliest
    assert dollars.samples_truncated
    assert result.counted == 4  # truncation hides groups, never counts


def test_unsupported_questions_return_only_the_plan(any_backend: Harness) -> None:
    h = any_backend
    say(h, SHELTER)
    answer = h.engine.aggregate_quantities_text(ALICE, "How much did I raise for the shelter?")
    assert answer.plan.status == "unsupported"
    assert answer.aggregation is None


def test_quantities_are_fact_nodes_from_extraction(any_backend: Harness) -> None:
    h = any_backend
    node = quantity_node(h, say(h, SHELTER))
    assert node.node_type is NodeType.FACT
    assert node.metadata[EXTRACTION_METADATA_KEY]["value"] == "1200"


def test_client_validates_a_dict_query_before_reading(tmp_path: Path) -> None:
    with MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing")) as memory:
        memory.ingest(SHELTER, wait_for_extraction=True)
        with pytest.raises(InvalidRequestError) as raised:
            memory.aggregate_quantities({"group_by": ["subject"]})
        assert raised.value.field[:2] == ("query", "group_by")
        result = memory.aggregate_quantities({"group_by": ["unit"]})
        assert totals(result) == {"$": Decimal("1200")}

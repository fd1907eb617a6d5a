"""Which nodes a journal record is listed under in their operation history, and the order of
history positions; the same rule every ledger applies when it saves a record."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from prme.model.graph import (
    RECEIPT_OPERATION_NAME,
    direct_store_record_id,
    history_position,
    history_reference_ids,
    is_history_position,
    referenced_node_ids,
)
from prme.model.records import JournalRecord, OwnerKey
from prme.retrieval.receipts import RECEIPT_OPERATION

OWNER = OwnerKey(tenant_id="t", owner_id="o")
AT = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)


def record(operation: str, subject_id: str, payload: dict[str, Any], **ids: str) -> JournalRecord:
    return JournalRecord.build(
        record_id=ids.get("record_id", str(uuid.uuid4())),
        owner=OWNER,
        operation=operation,
        subject_id=subject_id,
        created_at=AT,
        payload=payload,
    )


def test_every_node_key_the_payload_names_is_referenced_once() -> None:
    a, b, c, d, event = (str(uuid.uuid4()) for _ in range(5))
    found = referenced_node_ids(
        record(
            "future_move",
            a,
            {
                "node_id": a,
                "winner_id": b,
                "loser_id": c,
                "node_ids": [c, d, 7],
                "evidence_id": event,
                "from_state": "stable",
            },
        )
    )
    assert found == (a, b, c, d)


def test_a_direct_store_names_its_event_and_the_node_of_its_snapshot() -> None:
    event, node = str(uuid.uuid4()), str(uuid.uuid4())
    stored = record("direct_store", event, {"event_id": event, "node": {"id": node}})
    assert referenced_node_ids(stored) == (event, node)


def test_receipts_batches_and_non_id_subjects_name_no_node() -> None:
    node = str(uuid.uuid4())
    receipt = record(RECEIPT_OPERATION, str(uuid.uuid4()), {"node_id": node})
    assert referenced_node_ids(receipt) == ()
    batch_id = str(uuid.uuid4())
    batch = record("fast_ingest", batch_id, {"event_ids": [node]}, record_id=batch_id)
    assert referenced_node_ids(batch) == ()
    assert referenced_node_ids(record("alias_scan_progress", "3", {})) == ()
    assert RECEIPT_OPERATION_NAME == RECEIPT_OPERATION


def test_positions_sort_by_instant_whatever_the_offset_then_by_id() -> None:
    later_elsewhere = (AT + timedelta(microseconds=1)).astimezone(timezone(timedelta(hours=-5)))
    positions = [history_position(later_elsewhere, "a"), history_position(AT, "b")]
    assert sorted(positions) == positions[::-1]
    assert history_position(AT, "a") < history_position(AT, "b")
    assert all(is_history_position(p) for p in positions)
    assert not is_history_position("2026-01-02|x")


def test_a_direct_store_under_its_derived_id_gets_no_reference_but_still_names_its_node() -> None:
    """A store's record is found from the node's evidence (one item less in each store's
    DynamoDB transaction); a record saved before ids were derived keeps its reference."""
    event, node = str(uuid.uuid4()), str(uuid.uuid4())
    payload = {"event_id": event, "node": {"id": node}}
    derived = JournalRecord.build(
        record_id=direct_store_record_id(event),
        owner=OwnerKey(tenant_id="t", owner_id="o"),
        operation="direct_store",
        subject_id=event,
        created_at=datetime.now(UTC),
        payload=payload,
    )
    older = derived.model_copy(update={"id": str(uuid.uuid4())})
    assert history_reference_ids(derived) == ()
    assert referenced_node_ids(derived) == (event, node)
    assert history_reference_ids(older) == (event, node)

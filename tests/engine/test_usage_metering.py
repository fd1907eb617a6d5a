"""Metering on every backend: a scripted workload's usage, summed, is exactly what it did;
retries and re-processed work count once, and a usage log that fails never fails the work."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from prme.backends.memory import InMemoryUsageLog
from prme.engine.materialize import materialize_work
from prme.model.enums import WorkStatus
from prme.model.inputs import FastIngestInput, IngestInput, RetrieveInput, StoreInput
from prme.model.portability import ImportBatch
from prme.model.usage import METERED_WORK_KINDS, UsageTotal, UsageUnits
from prme.operations import OPERATIONS
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness

STORE_KEY = "5b0c9a10-1d2e-4f3a-8b4c-5d6e7f8a9b01"
FAST_KEY = "5b0c9a10-1d2e-4f3a-8b4c-5d6e7f8a9b02"
INGEST_KEY = "5b0c9a10-1d2e-4f3a-8b4c-5d6e7f8a9b03"
FACTS = ("Ana's bike cost 1200 euros", "The café on Rua Augusta opens at 8")
LINES = ("we met at the harbour", "Ana brought the maps", "the ferry left at noon")
MESSAGE = "I paid $40 for the train tickets. My brother Tomás works at Siemens."


def utf8(*texts: str) -> int:
    return sum(len(t.encode("utf-8")) for t in texts)


def day_totals(h: Harness, user_id: str | None = None) -> list[UsageTotal]:
    start = h.clock.now().replace(hour=0, minute=0, second=0, microsecond=0)
    report = h.engine.get_usage(
        "t1", user_id=user_id, start=start, end=start + timedelta(days=1), period="day"
    )
    return report.totals


def test_a_scripted_workload_is_metered_exactly(any_backend: Harness) -> None:
    h = any_backend
    day = h.clock.now().astimezone(UTC).date().isoformat()
    # Stores: one retried with the same Idempotency-Key (a lost answer), one without a key.
    first = h.engine.store(ALICE, StoreInput(content=FACTS[0]), idempotency_key=STORE_KEY)
    again = h.engine.store(ALICE, StoreInput(content=FACTS[0]), idempotency_key=STORE_KEY)
    assert again.event_id == first.event_id
    h.engine.store(ALICE, StoreInput(content=FACTS[1]))
    # A fast ingest, retried too, then materialized; one of its work items processed again
    # by a pass that read it while it was still pending.
    batch = FastIngestInput.model_validate({"items": [{"content": line} for line in LINES]})
    fast = h.engine.ingest_fast(ALICE, batch, idempotency_key=FAST_KEY)
    assert h.engine.ingest_fast(ALICE, batch, idempotency_key=FAST_KEY).event_ids == fast.event_ids
    stale = h.ledger.list_pending_work(ALICE, 10)
    assert len(stale) == 3
    assert h.engine.process_materializations(ALICE).processed == 3
    assert materialize_work(h.engine.deps, ALICE, stale[:1]).processed == 1
    assert h.ledger.list_event_work(ALICE, stale[0].event_id)[0].status is WorkStatus.DONE
    # An ingest with extraction, retried, and its extraction.
    ingested = h.engine.ingest(ALICE, IngestInput(content=MESSAGE), idempotency_key=INGEST_KEY)
    h.engine.ingest(ALICE, IngestInput(content=MESSAGE), idempotency_key=INGEST_KEY)
    assert h.engine.process_extractions(ALICE).processed == 1
    extracted = len(h.engine.get_event_nodes(ALICE, ingested.event_id)) - 1
    assert extracted > 0
    # Retrievals, a delete, and other owners' and another tenant's usage.
    retrievals = [
        h.engine.retrieve(ALICE, RetrieveInput(query=query))
        for query in ("what did Ana's bike cost", "when did the ferry leave")
    ]
    deletion = h.engine.delete_memory(ALICE, fast.event_ids[0])
    h.engine.store(BOB, StoreInput(content="Bob's note"))
    h.engine.store(OTHER_TENANT_ALICE, StoreInput(content="another tenant's note"))
    # Bob's source imported into Alice's memory from an export file, the file sent twice.
    bobs_event = [r for r in h.engine.export_owner(BOB).records if r["kind"] == "event"]
    for _ in range(2):
        h.engine.import_records(ALICE, ImportBatch(version=1, records=bobs_event))

    expected = {
        "delete_memory": (1, UsageUnits(records=1 + len(deletion.deleted_node_ids))),
        "extract": (
            1,
            UsageUnits(records=extracted, embeddings=extracted, extractor_calls=1),
        ),
        "ingest": (1, UsageUnits(records=1, bytes_in=utf8(MESSAGE), embeddings=1)),
        "ingest_fast": (1, UsageUnits(records=3, bytes_in=utf8(*LINES))),
        "import_records": (1, UsageUnits(records=1, bytes_in=utf8("Bob's note"))),
        "materialize": (3, UsageUnits(records=3, embeddings=3)),
        "retrieve": (
            2,
            UsageUnits(
                records=sum(len(r.results) for r in retrievals),
                tokens=sum(r.metrics.tokens_used for r in retrievals),
                bytes_out=utf8(*(r.bundle.context for r in retrievals)),
                embeddings=2,
            ),
        ),
        "store": (2, UsageUnits(records=2, bytes_in=utf8(*FACTS), embeddings=2)),
    }
    assert sum(r.metrics.tokens_used for r in retrievals) > 0
    # The workload covers every kind the operations table meters, and nothing else is metered.
    assert set(expected) == {op.name for op in OPERATIONS if op.metered} | set(METERED_WORK_KINDS)
    assert day_totals(h, "alice") == [
        UsageTotal(period=day, kind=kind, operations=count, units=units)
        for kind, (count, units) in sorted(expected.items())
    ]
    # The tenant's total adds Bob's store; the other tenant's never shows.
    tenant_store = next(t for t in day_totals(h) if t.kind == "store")
    assert (tenant_store.operations, tenant_store.units.bytes_in) == (
        3,
        utf8(*FACTS, "Bob's note"),
    )
    (bob,) = day_totals(h, "bob")
    assert (bob.kind, bob.operations) == ("store", 1)


def test_a_failing_usage_log_fails_no_operation(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness
    assert isinstance(h.usage, InMemoryUsageLog)
    h.usage.failing = True
    with caplog.at_level(logging.WARNING, logger="prme.usage"):
        stored = h.engine.store(ALICE, StoreInput(content=FACTS[0]))
        hits = h.engine.retrieve(ALICE, RetrieveInput(query="bike cost")).results
    assert [hit.node_id for hit in hits] == [stored.node_id]
    lines = [r for r in caplog.records if r.getMessage() == "usage not recorded"]
    assert len(lines) == 2
    # The log line names kinds and counts, never what was stored or asked.
    assert all("bike" not in str(r.__dict__) for r in lines)
    h.usage.failing = False
    assert day_totals(h) == []


def test_a_usage_report_refuses_an_empty_or_overlong_range(harness: Harness) -> None:
    from prme.errors import InvalidRequestError

    now = datetime(2026, 12, 2, tzinfo=UTC)
    with pytest.raises(InvalidRequestError):
        harness.engine.get_usage("t1", start=now, end=now)
    with pytest.raises(InvalidRequestError):
        harness.engine.get_usage("t1", start=now - timedelta(days=367), end=now)
    report = harness.engine.get_usage("t1")
    assert report.period == "day"
    assert report.start == datetime(2025, 1, 1, tzinfo=UTC)  # the harness clock's month
    assert report.totals == []


def test_a_redelivered_bulk_import_counts_each_chunk_once(harness: Harness) -> None:
    from prme.model.imports import BulkImportInput

    h = harness
    contents = [f"line {n}" for n in range(120)]
    request = BulkImportInput.model_validate({"items": [{"content": c} for c in contents]})
    h.engine.submit_import(ALICE, request, idempotency_key="5b0c9a10-1d2e-4f3a-8b4c-5d6e7f8a9b04")
    assert len(h.import_queue.sent) == 3
    for _ in range(2):  # the queue delivers every chunk twice
        for message in list(h.import_queue.sent):
            h.engine.commit_import_chunk(message)
    (fast,) = day_totals(h, "alice")
    # Each chunk is one fast-ingest commit, metered under its own key: once.
    assert (fast.kind, fast.operations, fast.units.records) == ("ingest_fast", 3, len(contents))
    assert fast.units.bytes_in == utf8(*contents)


def test_work_processed_again_days_later_still_counts_once(any_backend: Harness) -> None:
    h = any_backend
    batch = FastIngestInput.model_validate({"items": [{"content": LINES[0]}]})
    h.engine.ingest_fast(ALICE, batch)
    stale = h.ledger.list_pending_work(ALICE, 10)
    assert h.engine.process_materializations(ALICE).processed == 1
    # A pass that read the item while it was pending finishes it again two UTC days later:
    # its entry is dated by the item, so it meets the first one in the same day.
    h.clock.advance(days=2)
    assert materialize_work(h.engine.deps, ALICE, stale).processed == 1
    start = (h.clock.now() - timedelta(days=3)).replace(hour=0, minute=0, second=0, microsecond=0)
    report = h.engine.get_usage("t1", start=start, end=h.clock.now() + timedelta(days=1))
    assert [(t.kind, t.operations) for t in report.totals] == [
        ("ingest_fast", 1),
        ("materialize", 1),
    ]

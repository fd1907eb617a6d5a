"""POST /v1/ingest's engine on every backend: verbatim source first, grounded extraction after."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from prme.engine.deps import EngineDeps
from prme.engine.service import MemoryEngine
from prme.errors import ConflictError, ExtractionUnavailableError, ProcessingIncompleteError
from prme.model.enums import NodeType, ProcessingStatus, WorkFailure
from prme.model.extraction import Extraction
from prme.model.inputs import IngestInput, RetrieveInput
from tests.harness.engines import ALICE, Harness

MESSAGE = "I paid $1,200 for the new bike yesterday. My sister Ana works at Siemens."


def ingest(h: Harness, **fields: Any) -> Any:
    return h.engine.ingest(ALICE, IngestInput.model_validate({"content": MESSAGE, **fields}))


class FailingExtractor:
    name = "failing"

    def extract(self, text: str, *, reference_time: datetime) -> Extraction:
        raise ExtractionUnavailableError(
            "provider said something secret", reason_code=WorkFailure.EXTRACTOR_TIMEOUT
        )


def with_extractor(h: Harness, extractor: Any) -> MemoryEngine:
    deps = h.engine.deps
    return MemoryEngine(EngineDeps(**{**deps.__dict__, "extractor": extractor}))


def test_waiting_ingest_extracts_grounded_memories_linked_to_the_source(
    any_backend: Harness,
) -> None:
    h = any_backend
    result = ingest(
        h, wait_for_extraction=True, event_time="2024-03-10T01:30:00-06:00", speaker="Me"
    )
    assert result.processing_status is ProcessingStatus.COMPLETED
    assert result.extraction_status is ProcessingStatus.COMPLETED
    assert h.engine.get_event(ALICE, result.event_id).content == MESSAGE
    nodes = h.engine.get_event_nodes(ALICE, result.event_id)
    raw = [n for n in nodes if n.id == result.node_id]
    assert raw[0].content == MESSAGE  # the raw message stays retrievable
    assert raw[0].speaker == "Me"
    derived = [n for n in nodes if n.id != result.node_id]
    assert {n.node_type for n in derived} >= {NodeType.FACT, NodeType.ENTITY}
    for node in derived:
        meta = node.metadata["prme_extraction_v1"]
        assert meta["evidence_quote"] in MESSAGE
        assert node.evidence_refs == (result.event_id,)
        assert node.speaker is None  # the speaker stays with the source and its raw note
    claims = [
        n.metadata["prme_extraction_v1"]
        for n in derived
        if n.metadata["prme_extraction_v1"]["kind"] == "claim"
    ]
    # "yesterday" resolves against the source's own time (its date in its own offset).
    assert "2024-03-09" in {c["occurred_on"] for c in claims}
    quantities = [
        n.metadata["prme_extraction_v1"]
        for n in derived
        if n.metadata["prme_extraction_v1"]["kind"] == "quantity"
    ]
    assert any(q["value"] == "1200" for q in quantities)
    hits = h.engine.retrieve(ALICE, RetrieveInput(query="how much was the bike"))
    assert result.event_id in {ref for r in hits.results for ref in r.evidence_refs}


def test_async_ingest_leaves_extraction_pending_for_a_processing_pass(any_backend: Harness) -> None:
    h = any_backend
    result = ingest(h)
    assert result.extraction_status is ProcessingStatus.PENDING
    # Materialization passes never run extraction.
    assert h.engine.process_materializations(ALICE).pending == 0
    assert h.engine.get_extraction_status(ALICE, result.event_id)[0] is ProcessingStatus.PENDING
    assert h.engine.process_extractions(ALICE, budget_ms=0).pending == 1
    report = h.engine.process_extractions(ALICE)
    assert (report.processed, report.pending, report.failed) == (1, 0, 0)
    assert h.engine.get_extraction_status(ALICE, result.event_id)[0] is ProcessingStatus.COMPLETED
    before = len(h.engine.get_event_nodes(ALICE, result.event_id))
    assert h.engine.process_extractions(ALICE).processed == 0
    assert len(h.engine.get_event_nodes(ALICE, result.event_id)) == before


def test_failed_waiting_extraction_is_a_sanitized_503_receipt_then_retryable(
    any_backend: Harness,
) -> None:
    h = any_backend
    failing = with_extractor(h, FailingExtractor())
    with pytest.raises(ProcessingIncompleteError) as raised:
        failing.ingest(ALICE, IngestInput(content=MESSAGE, wait_for_extraction=True))
    receipt = raised.value
    assert receipt.reason_code == "Timeout"
    assert "secret" not in receipt.detail
    # The source was admitted before extraction failed.
    assert h.engine.get_event(ALICE, receipt.event_id).content == MESSAGE
    status, work = h.engine.get_extraction_status(ALICE, receipt.event_id)
    assert status is ProcessingStatus.PENDING
    assert work[0].last_error == "Timeout"
    # The saved work finishes with a working extractor; nothing is resubmitted.
    assert h.engine.process_extractions(ALICE).processed == 1
    assert h.engine.get_extraction_status(ALICE, receipt.event_id)[0] is ProcessingStatus.COMPLETED


def test_idempotency_key_on_ingest(any_backend: Harness) -> None:
    h = any_backend
    key = "c0ffee00-0000-4000-8000-000000000001"
    first = h.engine.ingest(ALICE, IngestInput(content=MESSAGE), idempotency_key=key)
    again = h.engine.ingest(ALICE, IngestInput(content=MESSAGE), idempotency_key=key)
    assert again.event_id == first.event_id
    with pytest.raises(ConflictError):
        h.engine.ingest(
            ALICE, IngestInput(content=MESSAGE, wait_for_extraction=True), idempotency_key=key
        )


def test_index_outage_during_a_waiting_extraction_is_a_503_receipt(any_backend: Harness) -> None:
    from tests.harness.switchable_index import SwitchableIndex

    h = any_backend
    switch = SwitchableIndex(h.index)
    deps = h.engine.deps
    engine = MemoryEngine(EngineDeps(**{**deps.__dict__, "index": switch}))
    switch.down = True
    with pytest.raises(ProcessingIncompleteError) as raised:
        engine.ingest(ALICE, IngestInput(content=MESSAGE, wait_for_extraction=True))
    assert raised.value.reason_code == "IndexUnavailable"
    event_id = raised.value.event_id
    assert engine.get_processing_status(ALICE, event_id)[0] is ProcessingStatus.PENDING
    switch.down = False
    assert engine.process_materializations(ALICE).processed == 1
    assert engine.process_extractions(ALICE).processed == 1
    assert engine.get_extraction_status(ALICE, event_id)[0] is ProcessingStatus.COMPLETED

"""Compact receipts: small enough to journal on every retrieval, replaying exactly, and
expiring after the retention setting on every backend."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from typing import Any

import pytest

from prme.engine import retrieve as retrieve_module
from prme.engine.config import EngineConfig, RetrievalConfig
from prme.engine.reads import get_receipt_record
from prme.errors import NotFoundError
from prme.model.feedback import RelevanceInput
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.records import JournalRecord
from prme.retrieval.compact_receipt import session_context_provenance
from prme.retrieval.fusion import FusedCandidate, FusionConfig, FusionInput, fuse
from prme.retrieval.receipts import (
    COMPACT_RECEIPT_SCHEMA_VERSIONS,
    RECEIPT_OPERATION,
    RetrievalReceipt,
    stored_receipt_payload,
)
from tests.harness.engines import ALICE, Harness, memory_harness

WORDS = [
    "cat",
    "dog",
    "Oslo",
    "Berlin",
    "concert",
    "trip",
    "dinner",
    "work",
    "project",
    "meeting",
    "sister",
    "brother",
    "garden",
    "book",
    "film",
    "coffee",
    "train",
    "flight",
    "hotel",
    "museum",
]


def fill(h: Harness, records: int) -> None:
    """Records of about 250 characters in sessions of ten, over nine months."""
    rnd = random.Random(7)
    for i in range(records):
        text = f"Note {i}: " + " ".join(rnd.choice(WORDS) for _ in range(40))
        h.engine.store(
            ALICE,
            StoreInput(
                content=text[:250],
                session_id=f"session-{i // 10}",
                event_time=f"2023-0{1 + i % 9}-1{i % 9}T10:00:00Z",
            ),
        )


def stored_bytes(h: Harness, request_id: str) -> int:
    payload = get_receipt_record(h.engine.deps, ALICE, request_id).payload
    return len(json.dumps(payload, separators=(",", ":")).encode())


def test_a_default_retrieval_journals_at_most_20_kb_and_replays_exactly() -> None:
    h = memory_harness()
    fill(h, 600)
    response = h.engine.retrieve(ALICE, RetrieveInput(query="what did I do with my sister"))
    request_id = response.metrics.request_id
    receipt = h.engine.get_retrieval_receipt(ALICE, request_id)
    # A full pool: the bound must hold where receipts used to be largest (about 136 KB).
    assert len(receipt.candidates) > 200 and len(response.results) > 20
    assert receipt.schema_version in COMPACT_RECEIPT_SCHEMA_VERSIONS
    assert stored_bytes(h, request_id) <= 20 * 1024
    assert receipt.replay_ranking() == receipt.saved_ranking()
    # What the expansion recomputes or keeps agrees with what the retrieval returned.
    by_id = {c.node_id: c for c in receipt.candidates}
    nodes = h.ledger.get_nodes(ALICE, [r.node_id for r in response.results])
    for result in response.results:
        saved = by_id[result.node_id]
        assert saved.score == result.score
        assert saved.semantic_relevance == result.semantic_relevance
        assert saved.content_sha256 == nodes[result.node_id].content_sha256
        assert saved.score_provenance["score"] == result.score
    assert receipt.returned_node_ids == [r.node_id for r in response.results]
    assert receipt.context.context_sha256 == response.bundle.context_sha256
    assert receipt.context.entries == [e.model_dump(mode="json") for e in response.bundle.entries]
    excluded = {(e.node_id, e.reason) for e in response.bundle.excluded}
    assert {(str(e["node_id"]), str(e["reason"])) for e in receipt.context.excluded} <= excluded
    # Left-out candidates keep the outcome that says why.
    assert {c.outcome for c in receipt.candidates} >= {"returned", "limit"}


def test_compact_receipts_replay_on_every_backend(any_backend: Harness) -> None:
    h = any_backend
    fill(h, 40)
    response = h.engine.retrieve(ALICE, RetrieveInput(query="sister Berlin concert"))
    receipt = h.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    assert receipt.schema_version in COMPACT_RECEIPT_SCHEMA_VERSIONS
    assert receipt.session_context, "the fixture needs session context rows"
    offline = RetrievalReceipt.model_validate_json(receipt.model_dump_json())
    assert offline.replay_ranking() == offline.saved_ranking()
    assert offline.returned_node_ids == [r.node_id for r in response.results]
    report = h.engine.replay_retrieval(ALICE, response.metrics.request_id)
    assert report.matches and report.replayed_ranking == receipt.saved_ranking()


def test_a_receipt_saved_in_full_still_reads_and_replays(any_backend: Harness) -> None:
    h = any_backend
    fill(h, 12)
    response = h.engine.retrieve(ALICE, RetrieveInput(query="coffee train"))
    full = h.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    payload = full.model_dump(mode="json") | {"schema_version": 22, "request_id": "older"}
    # Receipts of that version had no channel weights: every channel counted 1.
    del payload["config"]["fusion"]["channel_weights"]
    h.ledger.append_journal(
        JournalRecord.build(
            record_id="older",
            owner=ALICE,
            operation=RECEIPT_OPERATION,
            subject_id="older",
            created_at=full.created_at,
            payload=payload,
        )
    )
    old = h.engine.get_retrieval_receipt(ALICE, "older")
    assert old.schema_version == 22 and old.candidates == full.candidates
    assert old.config.fusion.channel_weights == {}
    report = h.engine.replay_retrieval(ALICE, "older")
    assert report.matches and report.replayed_ranking == full.saved_ranking()


@pytest.mark.parametrize("retention_days", [30, 2])
def test_receipts_expire_after_the_retention_setting(retention_days: int) -> None:
    h = memory_harness(EngineConfig(receipt_retention_days=retention_days))
    fill(h, 6)
    request_id = h.engine.retrieve(ALICE, RetrieveInput(query="coffee")).metrics.request_id
    returned = h.engine.get_retrieval_receipt(ALICE, request_id).returned_node_ids
    record = get_receipt_record(h.engine.deps, ALICE, request_id)
    assert record.expires_at == record.created_at + timedelta(days=retention_days)
    h.clock.advance(days=retention_days, seconds=-1)
    assert h.engine.replay_retrieval(ALICE, request_id).matches
    h.clock.advance(seconds=1)
    with pytest.raises(NotFoundError):
        h.engine.get_retrieval_receipt(ALICE, request_id)
    with pytest.raises(NotFoundError):
        h.engine.replay_retrieval(ALICE, request_id)
    with pytest.raises(NotFoundError):
        h.engine.record_relevance(
            ALICE,
            RelevanceInput.model_validate(
                {"request_id": request_id, "labels": {returned[0]: True}}
            ),
        )


def test_expired_receipts_read_as_not_found_on_every_backend(any_backend: Harness) -> None:
    h = any_backend
    fill(h, 4)
    request_id = h.engine.retrieve(ALICE, RetrieveInput(query="coffee")).metrics.request_id
    h.clock.advance(days=29)
    assert h.engine.get_retrieval_receipt(ALICE, request_id).request_id == request_id
    h.clock.advance(days=1)
    # Still stored (DynamoDB's TTL deletes it only eventually), but no longer readable.
    assert h.ledger.get_journal(ALICE, request_id) is not None
    with pytest.raises(NotFoundError):
        h.engine.get_retrieval_receipt(ALICE, request_id)


def test_every_candidate_reads_with_its_score_provenance_that_is_not_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Few candidates per channel, so session context reads records that were not candidates.
    h = memory_harness(EngineConfig(retrieval=RetrievalConfig(fill_candidate_k=5, candidate_k=5)))
    fill(h, 30)
    live: list[dict[str, Any]] = []
    live_fused: list[list[FusedCandidate]] = []

    def keep_live_form(full: dict[str, Any]) -> dict[str, Any]:
        live.append(full)
        return stored_receipt_payload(full)

    def keep_live_fusion(inputs: list[FusionInput], config: FusionConfig) -> list[FusedCandidate]:
        live_fused.append(fuse(inputs, config))
        return live_fused[-1]

    monkeypatch.setattr(retrieve_module, "stored_receipt_payload", keep_live_form)
    monkeypatch.setattr(retrieve_module, "fuse", keep_live_fusion)
    # A small budget leaves out fused candidates and session-context records alike.
    response = h.engine.retrieve(ALICE, RetrieveInput(query="sister Berlin", token_budget=120))
    request_id = response.metrics.request_id
    receipt = h.engine.get_retrieval_receipt(ALICE, request_id)
    left_out = [c for c in receipt.candidates if c.outcome != "returned"]
    assert any(c.context_of is None for c in left_out)
    assert any(c.context_of is not None for c in left_out)
    for c in receipt.candidates:
        if c.context_of is None:
            # Its RRF term per channel it was found in, the adjustments in order, its score.
            assert set(c.score_provenance["rrf_terms"]) == set(c.ranks)
            assert isinstance(c.score_provenance["adjustments"], list)
        else:
            assert c.score_provenance["session_context"]["anchor"] == c.context_of
        assert c.score_provenance["score"] == c.score
    # What a read recomputes is what the retrieval itself had, for every candidate: the live
    # fusion's provenance of each fused one, the anchor and decay of each context record.
    (full,) = live
    (fused,) = live_fused
    decay = h.engine.deps.config.packing.session_context_rank_fusion_score_decay
    assert [c.provenance() for c in fused] + [
        session_context_provenance(row["context_of"], decay, row["score"])
        for row in full["candidates"]
        if row.get("context_of") is not None
    ] == [c.score_provenance for c in receipt.candidates]
    # Provenance is recomputed on read: the journaled form keeps none of it.
    stored = json.dumps(get_receipt_record(h.engine.deps, ALICE, request_id).payload)
    assert "score_provenance" not in stored and "rrf_terms" not in stored

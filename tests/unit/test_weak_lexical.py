"""Weak lexical hits: a record that shares only a common word with the query is fused without
its lexical rank, so it no longer outranks a closer match; the receipt shows it and replays."""

from __future__ import annotations

from prme.engine.config import EngineConfig, ScoringConfig
from prme.model.inputs import RetrieveInput, StoreInput
from prme.retrieval.fusion import weak_lexical_hits
from prme.retrieval.receipts import ReceiptCandidate
from tests.harness.engines import ALICE, Harness, memory_harness


def test_hits_far_below_the_best_one_are_weak() -> None:
    scores = {"best": 10.0, "close": 4.0, "far": 2.5, "barely": 0.1}
    assert weak_lexical_hits(scores, 0.3) == {"far", "barely"}
    assert weak_lexical_hits(scores, 0.5) == {"close", "far", "barely"}
    # Off, or nothing to compare with: no hit is weak.
    assert weak_lexical_hits(scores, 0.0) == set()
    assert weak_lexical_hits({}, 0.3) == set()
    assert weak_lexical_hits({"only": 0.0, "other": -1.0}, 0.3) == set()


def store(h: Harness, content: str) -> str:
    result = h.engine.store(ALICE, StoreInput(content=content))
    assert result.node_id is not None
    return result.node_id


def filled(config: EngineConfig) -> tuple[Harness, str, str]:
    h = memory_harness(config)
    strong = store(h, "Booked the flight to Lisbon for the dentistry conference in March.")
    # Many records share the word "trip", so it weighs little; this one shares nothing else.
    weak = store(h, "The trip was fine.")
    for i in range(12):
        store(h, f"Packing list number {i} for the trip: socks, charger, passport.")
    return h, strong, weak


def fused(h: Harness, query: str) -> dict[str, ReceiptCandidate]:
    response = h.engine.retrieve(ALICE, RetrieveInput(query=query))
    receipt = h.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    assert receipt.replay_ranking() == receipt.saved_ranking()
    return {c.node_id: c for c in receipt.candidates}


QUERY = "Lisbon dentistry conference flight trip"


def test_a_record_sharing_only_a_common_word_is_fused_without_its_lexical_rank() -> None:
    h, strong, weak = filled(EngineConfig())
    on = fused(h, QUERY)
    # The strong match keeps both channels; the weak hit stays a candidate, ranked by its
    # vector alone, and the receipt's config says why.
    assert set(on[strong].ranks) == {"vector", "lexical"}
    assert set(on[weak].ranks) == {"vector"}

    h_off, strong_off, weak_off = filled(
        EngineConfig(scoring=ScoringConfig(weak_lexical_share=0.0))
    )
    off = fused(h_off, QUERY)
    assert set(off[weak_off].ranks) == {"vector", "lexical"}
    # Off, the common word alone lifts it; on, it scores only what its vector earns.
    assert on[weak].score < off[weak_off].score
    assert on[strong].score == off[strong_off].score


def test_the_plain_profile_turns_it_off() -> None:
    assert EngineConfig(retrieval_profile="plain").scoring.weak_lexical_share == 0.0
    assert EngineConfig().scoring.weak_lexical_share == 0.3

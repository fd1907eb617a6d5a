"""The session-neighbour term: a record said next to a strong match in the same session
gains a share of that match's score, visibly in its provenance and reproducibly on replay."""

from __future__ import annotations

from typing import Any

import pytest

from prme.engine.config import EngineConfig, ScoringConfig
from prme.model.inputs import RetrieveInput, StoreInput
from prme.retrieval.fusion import FusionConfig, FusionInput, fuse
from prme.retrieval.receipts import RetrievalReceipt
from tests.harness.engines import ALICE, Harness, memory_harness

RRF_K = 20


def rrf(rank: int) -> float:
    return 1.0 / (RRF_K + rank)


def config(weight: float, span: int = 1) -> FusionConfig:
    return FusionConfig(rrf_k=RRF_K, session_neighbour_weight=weight, session_neighbour_span=span)


def test_each_candidate_gains_a_share_of_its_best_neighbour_in_the_same_session() -> None:
    candidates = [
        FusionInput("question", {"lexical": 5}, 10.0, session="s1"),
        FusionInput("answer", {"lexical": 1}, 11.0, session="s1"),
        FusionInput("aside", {"lexical": 4}, 12.0, session="s1"),
        # As close in time, but another session: no neighbour of anything above.
        FusionInput("elsewhere", {"lexical": 3}, 11.5, session="s2"),
    ]
    scores = {c.node_id: c for c in fuse(candidates, config(0.5))}
    assert scores["question"].score == pytest.approx(rrf(5) + 0.5 * rrf(1))
    assert scores["aside"].score == pytest.approx(rrf(4) + 0.5 * rrf(1))
    # The best match gains from its better neighbour, read before anyone gained.
    assert scores["answer"].score == pytest.approx(rrf(1) + 0.5 * rrf(4))
    assert scores["elsewhere"].score == pytest.approx(rrf(3))
    assert scores["question"].adjustments == [
        {"op": "session_neighbour", "neighbour": "answer", "term": 0.5 * rrf(1)}
    ]
    assert scores["elsewhere"].adjustments == []
    # The question now outranks a record that beat it on its own.
    order = [c.node_id for c in fuse(candidates, config(0.5))]
    assert order.index("question") < order.index("elsewhere")


def test_the_span_counts_candidates_on_each_side_in_time_order() -> None:
    candidates = [
        FusionInput("a", {"vector": 1}, 1.0, session="s"),
        FusionInput("b", {"vector": 9}, 2.0, session="s"),
        FusionInput("c", {"vector": 8}, 3.0, session="s"),
    ]
    # With a span of 1, "c" sees only "b"; with 2 it reaches "a" too.
    one = {c.node_id: c.score for c in fuse(candidates, config(1.0, span=1))}
    two = {c.node_id: c.score for c in fuse(candidates, config(1.0, span=2))}
    assert one["c"] == pytest.approx(rrf(8) + rrf(9))
    assert two["c"] == pytest.approx(rrf(8) + rrf(1))


def test_records_without_a_session_and_a_zero_weight_change_nothing() -> None:
    candidates = [
        FusionInput("x", {"vector": 1}, 1.0),
        FusionInput("y", {"vector": 2}, 2.0),
        FusionInput("z", {"vector": 3}, 3.0, session="s"),
    ]
    for fused in (fuse(candidates, config(0.5)), fuse(candidates[:2], config(0.0))):
        for candidate in fused:
            assert candidate.score == pytest.approx(candidate.rrf_score)
            assert candidate.adjustments == []


def store(h: Harness, content: str, **fields: Any) -> str:
    result = h.engine.store(ALICE, StoreInput.model_validate({"content": content, **fields}))
    assert result.node_id is not None
    return result.node_id


def test_a_reply_that_shares_no_words_with_the_query_rises_with_its_question() -> None:
    def conversation(h: Harness) -> tuple[str, str]:
        store(
            h,
            "Which bakery sells the sourdough you like?",
            session_id="s1",
            event_time="2023-05-01T10:00:00Z",
            speaker="Ana",
        )
        reply = store(
            h,
            "The little place on Elm Street, every Saturday.",
            session_id="s1",
            event_time="2023-05-01T10:00:01Z",
            speaker="Ben",
        )
        other = store(
            h,
            "Saturday football was rained off again.",
            session_id="s2",
            event_time="2023-05-08T10:00:00Z",
            speaker="Ben",
        )
        return reply, other

    def ranks(h: Harness) -> tuple[list[str], Any]:
        response = h.engine.retrieve(
            ALICE, RetrieveInput(query="sourdough bakery saturday", limit=3)
        )
        receipt = h.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
        return [r.node_id for r in response.results], receipt

    on = memory_harness()
    reply, other = conversation(on)
    ranked, receipt = ranks(on)
    assert ranked.index(reply) < ranked.index(other)
    saved = RetrievalReceipt.model_validate_json(receipt.model_dump_json())
    by_id = {c.node_id: c for c in saved.candidates}
    assert by_id[reply].session_id == "s1"
    assert any(a["op"] == "session_neighbour" for a in by_id[reply].score_provenance["adjustments"])
    assert saved.config.fusion.session_neighbour_weight == 0.2
    assert saved.replay_ranking() == saved.saved_ranking()

    # The weak-lexical rule off too: the tie below is between two lexical hits.
    off = memory_harness(
        EngineConfig(scoring=ScoringConfig(session_neighbour_weight=0.0, weak_lexical_share=0.0))
    )
    reply, other = conversation(off)
    ranked, receipt = ranks(off)
    # Both match "saturday" alone; without the term, the newer record wins the tie.
    assert ranked.index(other) < ranked.index(reply)
    assert all(
        a["op"] != "session_neighbour"
        for c in receipt.candidates
        for a in c.score_provenance.get("adjustments", [])
    )

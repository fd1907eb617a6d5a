"""Learning ranking weights from an owner's judgments: what is read, the scope rule, owner and
tenant isolation, the refusal when there is too little to learn from, and receipts ranked
under learned weights that replay with them (a receipt saved before channel weights replays
unchanged: tests/engine/test_compact_receipts.py)."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import pytest

from prme.engine import learning_fit
from prme.engine.deadlines import deadline_scope, remaining_seconds
from prme.engine.reads import get_receipt_record
from prme.engine.retrieve import retrieve_memories
from prme.errors import NotEnoughJudgmentsError
from prme.model.enums import Scope
from prme.model.feedback import AnswerCitationInput, RelevanceInput
from prme.model.inputs import RetrievalFilters, RetrieveInput, StoreInput
from prme.model.learning import LearningEvaluation, LearningInput, RankingWeights
from prme.retrieval import weight_fit
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness, memory_harness

TOPICS = [
    "sailing", "violin", "pottery", "chess", "marathon", "baking", "gardening", "painting",
    "climbing", "knitting", "cycling", "fishing", "karate", "tango", "archery", "rowing",
    "surfing", "juggling", "origami", "skating",
]  # fmt: skip


def judged_owner(h: Harness, *, in_project: int, unfiltered: int, cite_every: int = 0) -> list[str]:
    """Notes about each topic in the project scope; one retrieval per topic question, filtered
    to the project scope or not, each judged (the note about the topic relevant, the first
    other result not) or, every `cite_every`-th one, cited instead. Returns the request ids."""
    note_of: dict[str, str] = {}
    for topic in TOPICS:
        for i in range(3):
            stored = h.engine.store(
                ALICE,
                StoreInput(
                    content=f"Weekend {i}: went to {topic} practice with friends",
                    scope=Scope.PROJECT,
                ),
            )
            if i == 0:
                assert stored.node_id is not None
                note_of[topic] = stored.node_id
    request_ids = []
    for n in range(in_project + unfiltered):
        topic = TOPICS[n % len(TOPICS)]
        filters = RetrievalFilters(scope=Scope.PROJECT) if n < in_project else None
        response = h.engine.retrieve(
            ALICE, RetrieveInput(query=f"Weekend 0 {topic}", filters=filters, limit=5)
        )
        request_id = response.metrics.request_id
        request_ids.append(request_id)
        returned = [r.node_id for r in response.results]
        assert note_of[topic] in returned
        if cite_every and n % cite_every == 0:
            h.engine.record_answer_citations(
                ALICE,
                AnswerCitationInput.model_validate(
                    {
                        "request_id": request_id,
                        "answer_id": f"answer-{n}",
                        "cited_node_ids": [note_of[topic]],
                        "method": "application_verified",
                    }
                ),
            )
            continue
        other = next(node for node in returned if node != note_of[topic])
        labels = {note_of[topic]: True, other: False}
        h.engine.record_relevance(
            ALICE, RelevanceInput.model_validate({"request_id": request_id, "labels": labels})
        )
    return request_ids


def test_an_evaluation_learns_from_every_judged_retrieval_and_writes_nothing() -> None:
    h = memory_harness()
    request_ids = judged_owner(h, in_project=40, unfiltered=0, cite_every=4)
    before = h.scan_stores()
    evaluation = h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))
    assert h.scan_stores() == before
    assert evaluation.relevance_records == 30 and evaluation.citation_records == 10
    assert evaluation.judged_retrievals == 40 and evaluation.skipped_retrievals == 0
    assert evaluation.train_size + evaluation.holdout_size == 40
    assert evaluation.train_size >= 10 and evaluation.holdout_size >= 5
    assert evaluation.metric == "ndcg@10" and evaluation.baseline == RankingWeights()
    assert evaluation.gain == pytest.approx(
        evaluation.proposal_holdout - evaluation.baseline_holdout
    )
    assert evaluation.proposal_train >= evaluation.baseline_train
    lines = sorted(
        f"{rid} {get_receipt_record(h.engine.deps, ALICE, rid).checksum}\n" for rid in request_ids
    )
    assert evaluation.input_checksum == hashlib.sha256("".join(lines).encode()).hexdigest()
    again = h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))
    assert again == evaluation


def test_a_later_false_label_outweighs_an_earlier_true_label_and_a_citation() -> None:
    h = memory_harness()
    # 40: request ids are random, and so is the split; 30 left too few to fit about 1 in 50.
    request_ids = judged_owner(h, in_project=40, unfiltered=0, cite_every=10)
    first = h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))
    assert first.skipped_retrievals == 0
    # Retrieval 0 was cited, retrieval 1 judged: a later judgment takes both answers back.
    h.clock.advance(minutes=1)
    for request_id in request_ids[:2]:
        receipt = h.engine.get_retrieval_receipt(ALICE, request_id)
        labels = dict.fromkeys(receipt.returned_node_ids, False)
        h.engine.record_relevance(
            ALICE, RelevanceInput.model_validate({"request_id": request_id, "labels": labels})
        )
    later = h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))
    assert later.judged_retrievals == 40 and later.skipped_retrievals == 2
    assert later.input_checksum != first.input_checksum


def test_a_scoped_evaluation_counts_only_retrievals_filtered_to_those_scopes() -> None:
    h = memory_harness()
    judged_owner(h, in_project=40, unfiltered=12)
    everything = h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))
    assert everything.train_size + everything.holdout_size == 52
    project = h.engine.evaluate_learning(
        ALICE, LearningInput(scopes=[Scope.PROJECT, Scope.PERSONAL], holdout_share=0.5)
    )
    assert project.train_size + project.holdout_size == 40
    assert project.skipped_retrievals == 12
    assert project.scopes == [Scope.PROJECT, Scope.PERSONAL]
    with pytest.raises(NotEnoughJudgmentsError, match="0 judged retrievals are usable"):
        h.engine.evaluate_learning(ALICE, LearningInput(scopes=[Scope.PERSONAL]))


def test_another_owner_or_tenant_learns_nothing_from_alices_judgments() -> None:
    h = memory_harness()
    judged_owner(h, in_project=30, unfiltered=0)
    for stranger in (BOB, OTHER_TENANT_ALICE):
        with pytest.raises(NotEnoughJudgmentsError, match="0 judged retrievals"):
            h.engine.evaluate_learning(stranger, LearningInput())


def test_too_few_judgments_on_either_side_of_the_split_are_refused() -> None:
    h = memory_harness()
    judged_owner(h, in_project=8, unfiltered=0)
    with pytest.raises(NotEnoughJudgmentsError, match="at least 10 judged retrievals to fit"):
        h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))


def test_max_records_bounds_the_judgments_read() -> None:
    h = memory_harness()
    judged_owner(h, in_project=30, unfiltered=0)
    with pytest.raises(NotEnoughJudgmentsError):
        h.engine.evaluate_learning(ALICE, LearningInput(max_records=12))


def test_a_retrieval_ranked_under_learned_weights_saves_them_and_replays_with_them() -> None:
    h = memory_harness()
    for topic in TOPICS:
        h.engine.store(ALICE, StoreInput(content=f"went to {topic} practice with friends"))
    query = RetrieveInput(query="violin practice with friends")
    weights = RankingWeights(channel_weights={"vector": 0.0}, rrf_k=5)
    learned = retrieve_memories(h.engine.deps, ALICE, query, ranking_weights=weights)
    plain = h.engine.retrieve(ALICE, query)
    receipt = h.engine.get_retrieval_receipt(ALICE, learned.metrics.request_id)
    assert receipt.config.fusion.channel_weights == {"vector": 0.0}
    assert receipt.config.fusion.rrf_k == 5
    assert receipt.replay_matches()
    assert h.engine.replay_retrieval(ALICE, learned.metrics.request_id).matches
    plain_receipt = h.engine.get_retrieval_receipt(ALICE, plain.metrics.request_id)
    assert plain_receipt.config.fusion.channel_weights == {}
    # Candidates the vector channel ranked gain nothing from it under these weights.
    ranked_by_vector = [c for c in receipt.candidates if "vector" in c.ranks]
    assert ranked_by_vector
    assert all(c.score_provenance["rrf_terms"]["vector"] == 0.0 for c in ranked_by_vector)
    assert any(
        c.score_provenance["rrf_terms"]["vector"] > 0.0
        for c in plain_receipt.candidates
        if "vector" in c.ranks
    )


class _SlowClock:
    """time.monotonic advancing by `step` seconds at each call of a patched function: work
    that is slow on a busy Lambda, deterministic here."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.offset = 0.0
        real = time.monotonic
        monkeypatch.setattr(time, "monotonic", lambda: real() + self.offset)

    def slow_down(
        self, monkeypatch: pytest.MonkeyPatch, target: Any, name: str, step: float
    ) -> None:
        original = getattr(target, name)

        def slow(*args: Any, **kwargs: Any) -> Any:
            self.offset += step
            return original(*args, **kwargs)

        monkeypatch.setattr(target, name, slow)


def evaluated_in_time(h: Harness, seconds: float) -> LearningEvaluation:
    """An evaluation under a deadline of `seconds`, which it answered before."""
    with deadline_scope(seconds):
        evaluation = h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))
        left = remaining_seconds()
    assert left is not None and left > 0
    return evaluation


def test_a_search_too_slow_for_the_deadline_stops_in_time_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = memory_harness()
    judged_owner(h, in_project=40, unfiltered=0)
    unbounded = h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))
    assert unbounded.complete and unbounded.search_complete
    clock = _SlowClock(monkeypatch)
    # Each re-ranked retrieval takes 10 ms: the whole search would take about 15 s.
    clock.slow_down(monkeypatch, weight_fit, "rank_candidates", 0.01)
    evaluation = evaluated_in_time(h, 3.0)
    assert not evaluation.complete and not evaluation.search_complete
    assert evaluation.unread_retrievals == 0
    assert evaluation.train_size == unbounded.train_size
    assert evaluation.proposal_train >= evaluation.baseline_train


def test_receipts_too_slow_to_read_in_time_are_left_unread_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = memory_harness()
    judged_owner(h, in_project=60, unfiltered=0)
    clock = _SlowClock(monkeypatch)
    clock.slow_down(monkeypatch, learning_fit, "get_receipt_record", 0.05)
    evaluation = evaluated_in_time(h, 4.0)
    assert not evaluation.complete and evaluation.unread_retrievals > 0
    assert evaluation.judged_retrievals == 60
    assert evaluation.train_size + evaluation.holdout_size == 60 - evaluation.unread_retrievals
    # Too little time to read enough: the refusal says why.
    clock.slow_down(monkeypatch, learning_fit, "get_receipt_record", 0.5)
    with deadline_scope(4.0), pytest.raises(NotEnoughJudgmentsError, match="not read in the time"):
        h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))

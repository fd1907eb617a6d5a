"""Learning ranking weights from an owner's judgments: what is read, the scope rule, owner and
tenant isolation, the refusal when there is too little to learn from, and receipts ranked
under learned weights that replay with them (a receipt saved before channel weights replays
unchanged: tests/engine/test_compact_receipts.py); and the whole loop from judgments to an
active profile and back."""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Any

import pytest
from pydantic import ValidationError

from prme.engine import learning_fit
from prme.engine.deadlines import deadline_scope, remaining_seconds
from prme.engine.identity import Principal
from prme.engine.reads import get_receipt_record
from prme.errors import NotEnoughJudgmentsError
from prme.model.enums import Scope
from prme.model.feedback import AnswerCitationInput, RelevanceInput
from prme.model.inputs import RetrievalFilters, RetrieveInput, StoreInput
from prme.model.learning import (
    LearningEvaluation,
    LearningInput,
    ProfileEvaluation,
    RankingProfileInput,
    RankingWeights,
)
from prme.retrieval import weight_fit
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness, memory_harness

OPERATOR = Principal.operator("t1", key_id="op-key")
RECOMMENDING = ProfileEvaluation(
    holdout_size=20,
    metric="ndcg@10",
    baseline_metric=0.5,
    proposal_metric=0.75,
    gain=0.25,
    recommended=True,
    input_checksum="ab" * 32,
)
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
    profile = h.engine.create_ranking_profile(
        ALICE, RankingProfileInput(weights=weights, evaluation=RECOMMENDING)
    )
    h.engine.activate_ranking_profile(ALICE, profile.profile_id, actor=OPERATOR)
    learned = h.engine.retrieve(ALICE, query)
    plain = h.engine.retrieve(ALICE, query.model_copy(update={"ranking_profile": "none"}))
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


def test_a_profile_with_an_unknown_channel_is_refused_when_saved() -> None:
    h = memory_harness()
    with pytest.raises(ValidationError, match="unknown ranking channel 'bm25'"):
        RankingProfileInput.model_validate(
            {"weights": {"channel_weights": {"bm25": 2.0}}, "evaluation": RECOMMENDING}
        )
    with pytest.raises(ValidationError, match="from 0 to 10"):
        RankingWeights.model_validate({"channel_weights": {"vector": -1.0}})
    assert h.engine.list_ranking_profiles(ALICE, limit=10, after_id=None) == []


def corrections_judged_irrelevant(h: Harness, *, profiled: bool = False) -> dict[str, str]:
    """Per topic a plain note and a note worded as a correction (which the engine's correction
    boost ranks first, unless an active profile turned it off: `profiled`); 40 retrievals whose
    judgments say the plain note was the relevant one and another result not. Returns the
    plain note of each topic."""
    plain_of: dict[str, str] = {}
    for topic in TOPICS:
        stored = h.engine.store(
            ALICE, StoreInput(content=f"I go to {topic} practice every Saturday morning.")
        )
        assert stored.node_id is not None
        plain_of[topic] = stored.node_id
        h.engine.store(ALICE, StoreInput(content=f"Actually, correction: the {topic} club moved."))
    for n in range(40):
        topic = TOPICS[n % len(TOPICS)]
        response = h.engine.retrieve(ALICE, RetrieveInput(query=f"{topic} practice", limit=5))
        returned = [r.node_id for r in response.results]
        assert (returned[0] == plain_of[topic]) is profiled
        other = next(node for node in returned if node != plain_of[topic])
        labels = {plain_of[topic]: True, other: False}
        h.engine.record_relevance(
            ALICE,
            RelevanceInput.model_validate(
                {"request_id": response.metrics.request_id, "labels": labels}
            ),
        )
    return plain_of


def test_judgments_evaluate_create_activate_retrieve_replay_and_roll_back(
    any_backend: Harness,
) -> None:
    """The whole loop through the public operations, on every backend: what the evaluation
    answers is saved as is, activated, ranks the next retrieval (named in its metrics and
    receipt, replayed with it), and the next evaluation is compared with it."""
    h = any_backend
    plain_of = corrections_judged_irrelevant(h)
    evaluation = h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))
    assert evaluation.baseline_profile_id is None and evaluation.recommended
    assert evaluation.proposal.correction_boost == 0.0
    body = evaluation.profile
    assert body.weights == evaluation.proposal and body.scopes == []
    assert body.evaluation is not None
    assert body.evaluation.proposal_metric == evaluation.proposal_holdout
    assert body.evaluation.input_checksum == evaluation.input_checksum

    # Saved from the evaluation's body as a client would send it, then activated.
    profile = h.engine.create_ranking_profile(
        ALICE, RankingProfileInput.model_validate(body.model_dump(mode="json"))
    )
    activated = h.engine.activate_ranking_profile(ALICE, profile.profile_id, actor=OPERATOR)
    assert activated.active_profile_id == profile.profile_id

    query = RetrieveInput(query=f"{TOPICS[0]} practice", limit=5)
    ranked = h.engine.retrieve(ALICE, query)
    assert ranked.metrics.ranking_profile_id == profile.profile_id
    assert ranked.results[0].node_id == plain_of[TOPICS[0]]
    unranked = h.engine.retrieve(ALICE, query.model_copy(update={"ranking_profile": "none"}))
    assert unranked.metrics.ranking_profile_id is None
    assert unranked.results[0].node_id != plain_of[TOPICS[0]]
    receipt = h.engine.get_retrieval_receipt(ALICE, ranked.metrics.request_id)
    assert receipt.config.ranking_profile_id == profile.profile_id
    replay = h.engine.replay_retrieval(ALICE, ranked.metrics.request_id)
    assert replay.matches and replay.ranking_profile_id == profile.profile_id

    # The next evaluation is compared with the live profile, and names it as its baseline.
    again = h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))
    assert again.baseline_profile_id == profile.profile_id
    assert again.baseline == profile.weights
    assert again.profile.baseline_profile_id == uuid.UUID(profile.profile_id)

    deactivated = h.engine.deactivate_ranking_profile(
        ALICE, actor=OPERATOR, change_id=activated.change_id, scopes=[]
    )
    assert h.engine.retrieve(ALICE, query).metrics.ranking_profile_id is None
    rolled_back = h.engine.rollback_ranking_profile(
        ALICE,
        actor=OPERATOR,
        change_id=deactivated.change_id,
        scopes=[],
        profile_id=profile.profile_id,
    )
    assert rolled_back.action == "rollback"
    assert h.engine.retrieve(ALICE, query).metrics.ranking_profile_id == profile.profile_id
    history = h.engine.list_ranking_profile_history(ALICE, [], limit=10)
    assert [state.action for state in history] == ["rollback", "deactivate", "activate"]
    # A receipt made before the deactivation still replays with the profile it was ranked by.
    assert h.engine.replay_retrieval(ALICE, ranked.metrics.request_id).matches


def test_retrievals_ranked_by_an_earlier_profile_are_evaluated_as_ranked_today() -> None:
    """Judged while a profile without the correction boost was active, then deactivated: the
    neutral baseline re-ranks those receipts with the engine's weights, not the old profile's
    (which ranked every plain note first), so the evaluation finds the boost to remove again."""
    h = memory_harness()
    earlier = h.engine.create_ranking_profile(
        ALICE,
        RankingProfileInput(weights=RankingWeights(correction_boost=0.0), evaluation=RECOMMENDING),
    )
    activated = h.engine.activate_ranking_profile(ALICE, earlier.profile_id, actor=OPERATOR)
    corrections_judged_irrelevant(h, profiled=True)
    h.engine.deactivate_ranking_profile(
        ALICE, actor=OPERATOR, change_id=activated.change_id, scopes=[]
    )
    evaluation = h.engine.evaluate_learning(ALICE, LearningInput(holdout_share=0.5))
    assert evaluation.baseline_profile_id is None
    assert evaluation.baseline_holdout < 1.0 and evaluation.recommended
    assert evaluation.proposal.correction_boost == 0.0

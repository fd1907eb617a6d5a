"""Channel weights in fusion, ranking weights applied to fusion settings, and the offline fit
of weights to judged retrievals with its holdout."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from prme.model.learning import RankingWeights
from prme.retrieval.fusion import FusionConfig, FusionInput, fuse
from prme.retrieval.weight_fit import (
    JudgedRetrieval,
    Split,
    apply_weights,
    evaluate_fit,
    fit_weights,
    holdout_fraction,
    input_checksum,
    mean_metric,
    ndcg_at,
    split_judged,
)

BASE = FusionConfig(rrf_k=20)


def test_a_channel_weight_scales_that_channels_term_and_an_empty_map_changes_nothing() -> None:
    candidates = [
        FusionInput("seen-by-vector", {"vector": 1, "lexical": 9}, None),
        FusionInput("seen-by-lexical", {"vector": 9, "lexical": 1}, None),
    ]
    plain = fuse(candidates, BASE)
    assert {c.node_id: c.score for c in plain} == {
        "seen-by-vector": pytest.approx(1 / 21 + 1 / 29),
        "seen-by-lexical": pytest.approx(1 / 29 + 1 / 21),
    }
    weighted = fuse(candidates, BASE.model_copy(update={"channel_weights": {"lexical": 3.0}}))
    assert [c.node_id for c in weighted] == ["seen-by-lexical", "seen-by-vector"]
    by_id = {c.node_id: c for c in weighted}
    assert by_id["seen-by-lexical"].rrf_terms == {
        "vector": pytest.approx(1 / 29),
        "lexical": pytest.approx(3 / 21),
    }
    silenced = fuse(candidates, BASE.model_copy(update={"channel_weights": {"lexical": 0.0}}))
    assert [c.node_id for c in silenced] == ["seen-by-vector", "seen-by-lexical"]


def test_a_fusion_config_saved_before_channel_weights_reads_with_none() -> None:
    saved = BASE.model_dump(mode="json")
    del saved["channel_weights"]
    assert FusionConfig.model_validate(saved) == BASE
    assert BASE.channel_weights == {}


def test_apply_weights_overrides_only_what_the_weights_set() -> None:
    config = BASE.model_copy(update={"speaker_boost": 2.0, "channel_weights": {"vector": 0.5}})
    assert apply_weights(config, RankingWeights()) == config
    applied = apply_weights(
        config, RankingWeights(rrf_k=60, channel_weights={"lexical": 2.0}, speaker_boost=0.0)
    )
    assert applied.rrf_k == 60 and applied.speaker_boost == 0.0
    assert applied.channel_weights == {"vector": 0.5, "lexical": 2.0}
    assert applied.recency_boost == config.recency_boost


@pytest.mark.parametrize("channels", [{"graph": 1.0}, {"lexical": -1.0}, {"vector": float("nan")}])
def test_apply_weights_refuses_an_unknown_channel_or_a_weight_below_zero(
    channels: dict[str, float],
) -> None:
    with pytest.raises(ValueError, match="channel"):
        apply_weights(BASE, RankingWeights(channel_weights=channels))


def lexical_knows_best(request_id: str, noise: int = 6) -> JudgedRetrieval:
    """A retrieval whose relevant node the lexical channel ranks first and the vector channel
    ranks below `noise` others, which the lexical channel ranks just below it: only a heavier
    lexical channel (no rrf_k) puts it first."""
    decoys = [
        FusionInput(f"{request_id}-decoy-{i}", {"vector": i + 1, "lexical": i + 2}, None)
        for i in range(noise)
    ]
    answer = FusionInput(f"{request_id}-answer", {"vector": noise + 1, "lexical": 1}, None)
    return JudgedRetrieval(
        request_id=request_id,
        receipt_checksum=f"checksum-{request_id}",
        fusion=BASE,
        candidates=(*decoys, answer),
        relevant=frozenset({answer.node_id}),
    )


def test_the_fit_learns_a_heavier_lexical_channel_when_lexical_is_always_right() -> None:
    train = [lexical_knows_best(f"r{i}", noise=12) for i in range(20)]
    baseline = RankingWeights()
    before = mean_metric(train, baseline)
    proposal = fit_weights(train, baseline)
    channels = {"vector": 1.0, "lexical": 1.0} | (proposal.channel_weights or {})
    assert channels["lexical"] > channels["vector"]
    assert before < 0.4
    assert mean_metric(train, proposal) > before + 0.3


def test_the_proposal_is_not_recommended_when_it_does_not_beat_the_baseline() -> None:
    # The vector channel already puts every answer first: nothing to gain.
    def vector_first(request_id: str) -> JudgedRetrieval:
        answer = FusionInput(f"{request_id}-a", {"vector": 1, "lexical": 1}, None)
        other = FusionInput(f"{request_id}-b", {"vector": 2, "lexical": 2}, None)
        return JudgedRetrieval(request_id, "c", BASE, (other, answer), frozenset({answer.node_id}))

    split = Split(
        train=tuple(vector_first(f"t{i}") for i in range(10)),
        holdout=tuple(vector_first(f"h{i}") for i in range(5)),
    )
    result = evaluate_fit(split, RankingWeights())
    assert result.proposal == RankingWeights()
    assert result.baseline_holdout == result.proposal_holdout == pytest.approx(1.0)
    assert result.gain == 0.0 and not result.recommended


def test_a_proposal_that_wins_on_train_and_loses_on_the_holdout_is_not_recommended() -> None:
    def vector_knows_best(request_id: str) -> JudgedRetrieval:
        flipped = lexical_knows_best(request_id, noise=12)
        swapped = tuple(
            FusionInput(
                c.node_id, {"vector": c.ranks["lexical"], "lexical": c.ranks["vector"]}, None
            )
            for c in flipped.candidates
        )
        return JudgedRetrieval(request_id, "c", BASE, swapped, flipped.relevant)

    split = Split(
        train=tuple(lexical_knows_best(f"t{i}", noise=12) for i in range(10)),
        holdout=tuple(vector_knows_best(f"h{i}") for i in range(5)),
    )
    result = evaluate_fit(split, RankingWeights())
    assert result.proposal_train > result.baseline_train
    assert result.proposal_holdout < result.baseline_holdout
    assert not result.recommended


def test_the_holdout_split_depends_on_request_ids_only() -> None:
    judged = [lexical_knows_best(f"request-{i}") for i in range(200)]
    split = split_judged(judged, 0.3)
    assert split_judged(list(reversed(judged)), 0.3) == split
    held = {j.request_id for j in split.holdout}
    assert held == {j.request_id for j in judged if holdout_fraction(j.request_id) < 0.3}
    assert 40 <= len(held) <= 80  # about 30% of 200
    # More judgments later never move a retrieval to the other side.
    grown = split_judged([*judged, *(lexical_knows_best(f"new-{i}") for i in range(50))], 0.3)
    assert held <= {j.request_id for j in grown.holdout}
    assert not held & {j.request_id for j in grown.train}


def test_the_input_checksum_is_stable_and_names_each_receipt() -> None:
    judged = [lexical_knows_best(f"request-{i}") for i in range(5)]
    checksum = input_checksum(judged)
    assert input_checksum(list(reversed(judged))) == checksum
    assert len(checksum) == 64
    changed = [*judged[:4], JudgedRetrieval(**{**judged[4].__dict__, "receipt_checksum": "x"})]
    assert input_checksum(changed) != checksum
    assert input_checksum(judged[:4]) != checksum


def test_ndcg_is_one_when_the_relevant_nodes_lead_and_zero_when_past_the_cutoff() -> None:
    relevant = frozenset({"a", "b"})
    assert ndcg_at(["a", "b", "c"], relevant) == pytest.approx(1.0)
    assert ndcg_at(["c", "a", "b"], relevant) < 1.0
    assert ndcg_at([f"x{i}" for i in range(10)] + ["a"], relevant) == 0.0


@pytest.mark.parametrize(
    "channels",
    [
        {"graph": 1.0},
        {"lexical": -1.0},
        {"vector": float("nan")},
        {"vector": float("inf")},
        {"lexical": 1e300},
    ],
)
def test_ranking_weights_refuse_an_unknown_channel_or_a_weight_out_of_range(
    channels: dict[str, float],
) -> None:
    # Refused where the weights are made (a request body, a saved profile), not only when
    # applied: NaN and infinity would also be saved as JSON null.
    with pytest.raises(ValidationError, match="channel"):
        RankingWeights.model_validate({"channel_weights": channels})
    with pytest.raises(ValidationError, match="channel"):
        RankingWeights.model_validate_json(json.dumps({"channel_weights": channels}))

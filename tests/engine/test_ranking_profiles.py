"""Ranking profiles: only an evaluated and recommended profile is activated, each change of a
scope slot names the slot's current change, a rollback goes back only to a profile active
there before, and retrievals are ranked (and their receipts replay) with the active profile."""

from __future__ import annotations

import uuid

import pytest

from prme.engine.identity import Principal
from prme.engine.retrieve import fusion_config_for
from prme.errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    RankingProfileNeverActiveError,
    RankingProfileNotEvaluatedError,
    RankingProfileNotRecommendedError,
    StaleRankingChangeError,
)
from prme.model.enums import Scope
from prme.model.inputs import RetrievalFilters, RetrieveInput, StoreInput
from prme.model.learning import (
    ProfileEvaluation,
    RankingProfile,
    RankingProfileInput,
    RankingWeights,
)
from prme.model.records import OwnerKey
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness, memory_harness

OPERATOR = Principal.operator("t1", key_id="op-key")
CHECKSUM = "ab" * 32


def evaluation(*, recommended: bool = True) -> ProfileEvaluation:
    proposal = 0.8 if recommended else 0.6
    return ProfileEvaluation(
        holdout_size=40,
        metric="ndcg@10",
        baseline_metric=0.7,
        proposal_metric=proposal,
        gain=proposal - 0.7,
        recommended=recommended,
        input_checksum=CHECKSUM,
    )


def create(
    h: Harness,
    owner: OwnerKey = ALICE,
    *,
    scopes: list[Scope] | None = None,
    weights: RankingWeights | None = None,
    evaluated: ProfileEvaluation | None = None,
    unevaluated: bool = False,
) -> RankingProfile:
    return h.engine.create_ranking_profile(
        owner,
        RankingProfileInput(
            scopes=scopes or [],
            weights=weights or RankingWeights(rrf_k=30),
            evaluation=None if unevaluated else (evaluated or evaluation()),
        ),
    )


def test_activate_deactivate_and_roll_back_one_slot(any_backend: Harness) -> None:
    h = any_backend
    first, second = create(h), create(h, weights=RankingWeights(rrf_k=90))

    on = h.engine.activate_ranking_profile(ALICE, first.profile_id, actor=OPERATOR)
    assert (on.sequence, on.action, on.active_profile_id, on.previous_profile_id) == (
        1,
        "activate",
        first.profile_id,
        None,
    )
    assert on.actor == "operator:op-key"
    switched = h.engine.activate_ranking_profile(
        ALICE, second.profile_id, actor=OPERATOR, change_id=on.change_id
    )
    off = h.engine.deactivate_ranking_profile(
        ALICE, actor=OPERATOR, change_id=switched.change_id, scopes=[]
    )
    assert (off.active_profile_id, off.previous_profile_id) == (None, second.profile_id)
    back = h.engine.rollback_ranking_profile(
        ALICE, actor=OPERATOR, change_id=off.change_id, scopes=[], profile_id=first.profile_id
    )

    assert (back.sequence, back.action, back.active_profile_id) == (4, "rollback", first.profile_id)
    history = h.engine.list_ranking_profile_history(ALICE, [], limit=10)
    assert [s.change_id for s in history] == [
        back.change_id,
        off.change_id,
        switched.change_id,
        on.change_id,
    ]
    active = h.engine.get_active_ranking_profile(ALICE, [])
    assert active.state == back
    assert active.profile == first


def test_a_profile_is_activated_only_on_a_recommending_holdout_evaluation() -> None:
    h = memory_harness()
    unevaluated = create(h, unevaluated=True)
    not_recommended = create(h, evaluated=evaluation(recommended=False))

    with pytest.raises(RankingProfileNotEvaluatedError):
        h.engine.activate_ranking_profile(ALICE, unevaluated.profile_id, actor=OPERATOR)
    with pytest.raises(RankingProfileNotRecommendedError):
        h.engine.activate_ranking_profile(ALICE, not_recommended.profile_id, actor=OPERATOR)

    assert h.engine.list_ranking_profile_history(ALICE, []) == []
    assert h.engine.get_active_ranking_profile(ALICE, []).profile is None


def test_an_evaluation_that_contradicts_itself_is_refused() -> None:
    with pytest.raises(ValueError, match="holdout gain"):
        ProfileEvaluation(
            holdout_size=10,
            metric="ndcg@10",
            baseline_metric=0.7,
            proposal_metric=0.6,
            gain=-0.1,
            recommended=True,
            input_checksum=CHECKSUM,
        )
    with pytest.raises(ValueError, match="proposal_metric - baseline_metric"):
        ProfileEvaluation(
            holdout_size=10,
            metric="ndcg@10",
            baseline_metric=0.5,
            proposal_metric=0.6,
            gain=0.5,
            recommended=True,
            input_checksum=CHECKSUM,
        )


def test_a_stale_change_id_is_refused_and_writes_nothing() -> None:
    h = memory_harness()
    first, second = create(h), create(h)
    on = h.engine.activate_ranking_profile(ALICE, first.profile_id, actor=OPERATOR)
    # A second operator who read the slot before `on` still holds no change id.
    with pytest.raises(StaleRankingChangeError):
        h.engine.activate_ranking_profile(ALICE, second.profile_id, actor=OPERATOR)
    with pytest.raises(StaleRankingChangeError):
        h.engine.deactivate_ranking_profile(
            ALICE, actor=OPERATOR, change_id=str(uuid.uuid4()), scopes=[]
        )
    switched = h.engine.activate_ranking_profile(
        ALICE, second.profile_id, actor=OPERATOR, change_id=on.change_id
    )
    # `on` is stale once `switched` landed.
    with pytest.raises(StaleRankingChangeError):
        h.engine.rollback_ranking_profile(
            ALICE, actor=OPERATOR, change_id=on.change_id, scopes=[], profile_id=first.profile_id
        )

    assert h.engine.list_ranking_profile_history(ALICE, []) == [switched, on]
    # A stale error is a conflict (409) with its own code.
    assert issubclass(StaleRankingChangeError, ConflictError)


def test_a_rollback_goes_back_only_to_a_profile_active_there_before() -> None:
    h = memory_harness()
    first, never, elsewhere = create(h), create(h), create(h)
    project = h.engine.activate_ranking_profile(
        ALICE, elsewhere.profile_id, actor=OPERATOR, scopes=[Scope.PROJECT]
    )
    on = h.engine.activate_ranking_profile(ALICE, first.profile_id, actor=OPERATOR)

    for profile_id in (never.profile_id, elsewhere.profile_id):
        with pytest.raises(RankingProfileNeverActiveError):
            h.engine.rollback_ranking_profile(
                ALICE, actor=OPERATOR, change_id=on.change_id, scopes=[], profile_id=profile_id
            )
    with pytest.raises(NotFoundError):
        h.engine.rollback_ranking_profile(
            ALICE, actor=OPERATOR, change_id=on.change_id, scopes=[], profile_id=str(uuid.uuid4())
        )
    assert h.engine.list_ranking_profile_history(ALICE, []) == [on]
    assert h.engine.list_ranking_profile_history(ALICE, [Scope.PROJECT]) == [project]


def test_a_profile_learned_on_some_scopes_serves_only_their_slot() -> None:
    h = memory_harness()
    project_only = create(h, scopes=[Scope.PROJECT])
    everywhere = create(h)

    with pytest.raises(InvalidRequestError):
        h.engine.activate_ranking_profile(
            ALICE, project_only.profile_id, actor=OPERATOR, scopes=[Scope.PERSONAL]
        )
    state = h.engine.activate_ranking_profile(ALICE, project_only.profile_id, actor=OPERATOR)
    assert state.scopes == [Scope.PROJECT]
    # An owner-wide profile may serve a narrower slot.
    narrowed = h.engine.activate_ranking_profile(
        ALICE, everywhere.profile_id, actor=OPERATOR, scopes=[Scope.PERSONAL, Scope.AGENT]
    )
    assert narrowed.scopes == [Scope.AGENT, Scope.PERSONAL]


def _retrieve(h: Harness, scope: Scope | list[Scope] | None = None) -> str | None:
    filters = RetrievalFilters(scope=scope) if scope is not None else None
    response = h.engine.retrieve(ALICE, RetrieveInput(query="green tea", filters=filters))
    return response.metrics.ranking_profile_id


def test_a_retrieval_is_ranked_by_its_exact_scope_slot_else_the_owner_wide_one() -> None:
    h = memory_harness()
    h.engine.store(ALICE, StoreInput(content="I drink green tea.", scope=Scope.PROJECT))
    wide, project = create(h), create(h, scopes=[Scope.PROJECT])
    assert _retrieve(h) is None

    h.engine.activate_ranking_profile(ALICE, wide.profile_id, actor=OPERATOR)
    h.engine.activate_ranking_profile(ALICE, project.profile_id, actor=OPERATOR)

    assert _retrieve(h) == wide.profile_id
    assert _retrieve(h, Scope.PROJECT) == project.profile_id
    assert _retrieve(h, [Scope.PROJECT]) == project.profile_id
    assert _retrieve(h, Scope.PERSONAL) == wide.profile_id
    # No slot of exactly {personal, project}: the owner-wide profile.
    assert _retrieve(h, [Scope.PROJECT, Scope.PERSONAL]) == wide.profile_id
    active = h.engine.get_active_ranking_profile(ALICE, [Scope.PERSONAL])
    assert (active.state, active.profile, active.profile_slot_scopes) == (None, wide, [])
    # A request may ask for the engine's settings instead, to compare.
    plain = h.engine.retrieve(ALICE, RetrieveInput(query="green tea", ranking_profile="none"))
    assert plain.metrics.ranking_profile_id is None
    receipt = h.engine.get_retrieval_receipt(ALICE, plain.metrics.request_id)
    assert receipt.config.fusion.rrf_k == h.engine.deps.config.scoring.rrf_k


def test_receipts_name_the_profile_and_replay_its_ranking(any_backend: Harness) -> None:
    h = any_backend
    for text in (
        "Green tea, green tea: I drink green tea every single morning.",
        "My green tea comes from a shop near the station.",
        "Actually, it is jasmine green tea that I like.",
    ):
        h.engine.store(ALICE, StoreInput(content=text))
    query = RetrieveInput(query="green tea every morning", limit=3)
    plain = h.engine.retrieve(ALICE, query)
    boosted = create(h, weights=RankingWeights(correction_boost=0.0, rrf_k=5))
    h.engine.activate_ranking_profile(ALICE, boosted.profile_id, actor=OPERATOR)

    profiled = h.engine.retrieve(ALICE, query)

    assert plain.metrics.ranking_profile_id is None
    assert profiled.metrics.ranking_profile_id == boosted.profile_id
    receipt = h.engine.get_retrieval_receipt(ALICE, profiled.metrics.request_id)
    assert receipt.config.ranking_profile_id == boosted.profile_id
    assert (receipt.config.fusion.correction_boost, receipt.config.fusion.rrf_k) == (0.0, 5)
    # The weights changed the ranking: the correction leads only without the profile.
    order = [r.node_id for r in profiled.results]
    assert order != [r.node_id for r in plain.results]
    replay = h.engine.replay_retrieval(ALICE, profiled.metrics.request_id)
    assert replay.matches
    assert replay.replayed_ranking[: len(order)] == order
    assert replay.ranking_profile_id == boosted.profile_id
    # Replayed under the engine's own settings instead, the saved order does not come back.
    unprofiled = receipt.model_copy(
        update={
            "config": receipt.config.model_copy(
                update={"fusion": fusion_config_for(h.engine.deps.config, query.query)}
            )
        }
    )
    assert unprofiled.replay_ranking() != receipt.saved_ranking()


def test_another_owners_profile_is_not_found() -> None:
    h = memory_harness()
    mine = create(h)
    for other in (BOB, OTHER_TENANT_ALICE):
        with pytest.raises(NotFoundError):
            h.engine.get_ranking_profile(other, mine.profile_id)
        with pytest.raises(NotFoundError):
            h.engine.activate_ranking_profile(other, mine.profile_id, actor=OPERATOR)
        assert h.engine.list_ranking_profiles(other) == []
        with pytest.raises(NotFoundError):
            h.engine.create_ranking_profile(
                other,
                RankingProfileInput(
                    weights=RankingWeights(), baseline_profile_id=uuid.UUID(mine.profile_id)
                ),
            )
    h.engine.activate_ranking_profile(ALICE, mine.profile_id, actor=OPERATOR)
    assert h.engine.get_active_ranking_profile(BOB, []).profile is None


def test_retrievals_read_the_active_profiles_once_per_cache_period() -> None:
    h = memory_harness()
    h.engine.store(ALICE, StoreInput(content="I drink green tea."))
    profile = create(h)
    cache = h.engine.deps.profile_cache
    for _ in range(5):
        _retrieve(h)
    assert cache.loads == 1

    # A change made through this engine applies to the next retrieval at once.
    on = h.engine.activate_ranking_profile(ALICE, profile.profile_id, actor=OPERATOR)
    assert _retrieve(h) == profile.profile_id
    h.engine.deactivate_ranking_profile(ALICE, actor=OPERATOR, change_id=on.change_id, scopes=[])
    assert _retrieve(h) is None
    assert cache.loads == 3


def test_profiles_page_in_id_order_and_a_used_id_is_refused() -> None:
    h = memory_harness()
    ids = sorted(create(h).profile_id for _ in range(5))
    first = h.engine.list_ranking_profiles(ALICE, limit=3)
    rest = h.engine.list_ranking_profiles(ALICE, limit=3, after_id=first[-1].profile_id)
    assert [p.profile_id for p in first + rest] == ids
    with pytest.raises(ConflictError):
        h.engine.create_ranking_profile(
            ALICE, RankingProfileInput(profile_id=uuid.UUID(ids[0]), weights=RankingWeights())
        )

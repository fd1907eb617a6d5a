"""The `RankingProfileStore` port on every adapter (dictionary fake, SQLite, DynamoDB on the
local AWS): profiles kept per owner, and per scope slot a history of changes where only the
holder of the current change id may add the next one."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from prme.backends.aws.dynamodb_ranking_profiles import DynamoDbRankingProfileStore
from prme.backends.embedded.sqlite_ranking_profiles import SqliteRankingProfileStore
from prme.backends.memory import InMemoryRankingProfileStore
from prme.errors import ConflictError
from prme.model.enums import Scope
from prme.model.learning import (
    RankingProfile,
    RankingProfileAction,
    RankingProfileState,
    RankingWeights,
    scope_slot,
)
from prme.model.records import OwnerKey
from prme.ports import RankingProfileStore

ALICE = OwnerKey(tenant_id="t1", owner_id="alice")
BOB = OwnerKey(tenant_id="t1", owner_id="bob")
ALICE_ELSEWHERE = OwnerKey(tenant_id="t2", owner_id="alice")
AT = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RankingProfileStore]:
    if request.param == "memory":
        yield InMemoryRankingProfileStore()
    elif request.param == "sqlite":
        sqlite = SqliteRankingProfileStore(tmp_path / "ranking_profiles.sqlite3")
        yield sqlite
        sqlite.close()
    else:
        client, table = request.getfixturevalue("dynamodb_table")
        yield DynamoDbRankingProfileStore(client, table)


def profile(
    number: int, owner: OwnerKey = ALICE, scopes: list[Scope] | None = None
) -> RankingProfile:
    return RankingProfile(
        profile_id=f"00000000-0000-4000-8000-{number:012d}",
        user_id=owner.owner_id,
        scopes=scopes or [],
        weights=RankingWeights(rrf_k=40 + number),
        created_at=AT,
    )


def change(
    sequence: int,
    active: str | None,
    *,
    scopes: list[Scope] | None = None,
    action: RankingProfileAction = "activate",
    previous: str | None = None,
) -> RankingProfileState:
    return RankingProfileState(
        scopes=scopes or [],
        sequence=sequence,
        change_id=f"change-{scope_slot(scopes or [])}-{sequence}",
        active_profile_id=active,
        previous_profile_id=previous,
        action=action,
        actor="owner:k1",
        at=AT + timedelta(minutes=sequence),
    )


def test_profiles_are_kept_per_owner_and_listed_in_id_order(store: RankingProfileStore) -> None:
    for number in (3, 1, 2):
        store.create_profile(ALICE, profile(number))
    store.create_profile(BOB, profile(9, BOB))

    assert store.get_profile(ALICE, profile(2).profile_id) == profile(2)
    assert store.get_profile(BOB, profile(2).profile_id) is None
    assert store.get_profile(ALICE_ELSEWHERE, profile(2).profile_id) is None
    first = store.list_profiles(ALICE, limit=2, after_id=None)
    assert [p.profile_id for p in first] == [profile(1).profile_id, profile(2).profile_id]
    rest = store.list_profiles(ALICE, limit=2, after_id=first[-1].profile_id)
    assert rest == [profile(3)]
    assert store.list_profiles(ALICE, limit=5, after_id=profile(3).profile_id) == []


def test_a_profile_id_is_saved_once(store: RankingProfileStore) -> None:
    store.create_profile(ALICE, profile(1))
    other = profile(1).model_copy(update={"weights": RankingWeights(rrf_k=7)})
    with pytest.raises(ConflictError):
        store.create_profile(ALICE, other)
    assert store.get_profile(ALICE, profile(1).profile_id) == profile(1)
    # Another owner may use the same id: ids are the owner's own.
    store.create_profile(BOB, profile(1, BOB))


def test_each_change_needs_the_current_change_id(store: RankingProfileStore) -> None:
    first = change(1, "p1")
    store.save_state(ALICE, first, replacing=None)
    # A second "first" change, or one naming anything but the current change id, is refused.
    with pytest.raises(ConflictError):
        store.save_state(ALICE, change(2, "p2"), replacing=None)
    with pytest.raises(ConflictError):
        store.save_state(ALICE, change(2, "p2"), replacing="change-*-0")
    assert store.current_states(ALICE) == [first]

    second = change(2, None, action="deactivate", previous="p1")
    store.save_state(ALICE, second, replacing=first.change_id)
    assert store.current_states(ALICE) == [second]
    # The replaced id is stale now.
    with pytest.raises(ConflictError):
        store.save_state(ALICE, change(3, "p3"), replacing=first.change_id)
    assert store.list_history(ALICE, "*", limit=10) == [second, first]


def test_slots_change_apart_and_history_is_newest_first(store: RankingProfileStore) -> None:
    project = [Scope.PROJECT]
    wide = [change(1, "p1"), change(2, "p2", previous="p1"), change(3, "p3", previous="p2")]
    replacing = None
    for state in wide:
        store.save_state(ALICE, state, replacing=replacing)
        replacing = state.change_id
    scoped = change(1, "p9", scopes=project)
    store.save_state(ALICE, scoped, replacing=None)
    store.save_state(BOB, change(1, "b1"), replacing=None)

    assert store.current_states(ALICE) == [wide[2], scoped]
    assert store.list_history(ALICE, "*", limit=2) == [wide[2], wide[1]]
    assert store.list_history(ALICE, scope_slot(project), limit=5) == [scoped]
    assert store.list_history(ALICE, scope_slot([Scope.PERSONAL]), limit=5) == []
    assert store.current_states(ALICE_ELSEWHERE) == []


def test_an_erased_owner_keeps_nothing_here_or_leaves_it_to_the_ledger(
    store: RankingProfileStore,
) -> None:
    store.create_profile(ALICE, profile(1))
    store.save_state(ALICE, change(1, profile(1).profile_id), replacing=None)
    store.create_profile(BOB, profile(2, BOB))

    removed = store.erase_owner(ALICE)

    if isinstance(store, DynamoDbRankingProfileStore):
        # The items live in the owner's partition, which the ledger's erasure empties.
        assert removed == 0
    else:
        assert removed == 2
        assert store.get_profile(ALICE, profile(1).profile_id) is None
        assert store.current_states(ALICE) == []
    assert store.get_profile(BOB, profile(2, BOB).profile_id) == profile(2, BOB)


def test_of_changes_racing_from_one_state_exactly_one_lands(store: RankingProfileStore) -> None:
    from concurrent.futures import ThreadPoolExecutor

    first = change(1, "p1")
    store.save_state(ALICE, first, replacing=None)
    racers = [
        change(2, f"p{n}", previous="p1").model_copy(update={"change_id": f"racer-{n}"})
        for n in range(2, 8)
    ]

    def attempt(state: RankingProfileState) -> bool:
        try:
            store.save_state(ALICE, state, replacing=first.change_id)
        except ConflictError:
            return False
        return True

    with ThreadPoolExecutor(max_workers=len(racers)) as pool:
        landed = list(pool.map(attempt, racers))

    assert landed.count(True) == 1
    winner = racers[landed.index(True)]
    assert store.current_states(ALICE) == [winner]
    assert store.list_history(ALICE, "*", limit=10) == [winner, first]

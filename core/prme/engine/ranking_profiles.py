"""Ranking profiles: save learned weights, and activate, deactivate or roll back the profile
that ranks an owner's retrievals in a scope slot, one checked change at a time.

A profile is activated only when its holdout evaluation exists and recommends it. Each change
of a slot names the change id of the slot's current state, so two operators acting on the
same state cannot both win (the second gets 409 and reads again). A retrieval is ranked by the
profile active in the slot of exactly its scope filter, else by the owner-wide one (slot of no
scopes), else by the engine's settings (`profile_for_retrieval`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from prme.engine.deps import EngineDeps
from prme.engine.identity import Principal
from prme.errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    OperationNotServedError,
    RankingProfileNeverActiveError,
    RankingProfileNotEvaluatedError,
    RankingProfileNotRecommendedError,
    StaleRankingChangeError,
)
from prme.model.enums import Scope
from prme.model.learning import (
    OWNER_WIDE_SLOT,
    ActiveRankingProfile,
    RankingProfile,
    RankingProfileAction,
    RankingProfileInput,
    RankingProfileState,
    scope_slot,
    sorted_scopes,
)
from prme.model.records import OwnerKey
from prme.ports import RankingProfileStore

DEFAULT_PROFILE_PAGE = 50
MAX_PROFILE_PAGE = 500
DEFAULT_HISTORY = 20
MAX_HISTORY = 1000
# A rollback looks this far back in its slot's history for the profile it names.
ROLLBACK_SCAN = MAX_HISTORY


def _store(deps: EngineDeps) -> RankingProfileStore:
    if deps.ranking_profiles is None:
        raise OperationNotServedError("ranking profiles are not configured for this deployment")
    return deps.ranking_profiles


def _actor(principal: Principal) -> str:
    return f"{principal.role.value}:{principal.key_id or 'keyless'}"


def _profile(store: RankingProfileStore, owner: OwnerKey, profile_id: str) -> RankingProfile:
    profile = store.get_profile(owner, profile_id)
    if profile is None:
        raise NotFoundError("ranking profile not found")
    return profile


def create_ranking_profile(
    deps: EngineDeps, owner: OwnerKey, request: RankingProfileInput
) -> RankingProfile:
    store = _store(deps)
    if request.baseline_profile_id is not None:
        _profile(store, owner, str(request.baseline_profile_id))
    profile = RankingProfile(
        profile_id=str(request.profile_id) if request.profile_id is not None else deps.ids(),
        user_id=owner.owner_id,
        scopes=sorted_scopes(request.scopes),
        weights=request.weights,
        baseline_profile_id=(
            str(request.baseline_profile_id) if request.baseline_profile_id else None
        ),
        evaluation=request.evaluation,
        created_at=deps.clock.now(),
    )
    try:
        store.create_profile(owner, profile)
    except ConflictError:
        raise ConflictError("the owner already has a ranking profile of that id") from None
    return profile


def get_ranking_profile(deps: EngineDeps, owner: OwnerKey, profile_id: str) -> RankingProfile:
    return _profile(_store(deps), owner, profile_id)


def list_ranking_profiles(
    deps: EngineDeps, owner: OwnerKey, *, limit: int, after_id: str | None
) -> list[RankingProfile]:
    return _store(deps).list_profiles(owner, limit=limit, after_id=after_id)


def _active_by_slot(store: RankingProfileStore, owner: OwnerKey) -> dict[str, RankingProfile]:
    """The profile active in each of the owner's slots: one read of the slots' states, and one
    of each active profile."""
    active: dict[str, RankingProfile] = {}
    for state in store.current_states(owner):
        if state.active_profile_id is not None:
            profile = store.get_profile(owner, state.active_profile_id)
            if profile is not None:
                active[state.slot] = profile
    return active


def _resolved(
    active: Mapping[str, RankingProfile], scopes: Iterable[Scope] | None
) -> tuple[str, RankingProfile] | None:
    """The slot whose profile ranks a retrieval filtered to `scopes` (None: no scope filter)
    and that profile: the slot of exactly those scopes, else the owner-wide slot."""
    slots = [OWNER_WIDE_SLOT] if scopes is None else [scope_slot(scopes), OWNER_WIDE_SLOT]
    for slot in slots:
        if slot in active:
            return slot, active[slot]
    return None


def profile_for_retrieval(
    deps: EngineDeps, owner: OwnerKey, scopes: Iterable[Scope] | None
) -> RankingProfile | None:
    """The profile that ranks this retrieval, from the process's short-lived cache (one read
    of the store per owner per `ranking_profile_cache_seconds`)."""
    store = deps.ranking_profiles
    if store is None:
        return None
    active = deps.profile_cache.get(
        owner, deps.config.ranking_profile_cache_seconds, lambda: _active_by_slot(store, owner)
    )
    found = _resolved(active, scopes) if active else None
    return found[1] if found else None


def active_ranking_profile(
    deps: EngineDeps, owner: OwnerKey, scopes: Iterable[Scope] | None
) -> RankingProfile | None:
    """The profile that ranks a retrieval filtered to `scopes` (None: no scope filter) as the
    store says now, bypassing the cache: what a learning evaluation compares a proposal with."""
    store = deps.ranking_profiles
    if store is None:
        return None
    found = _resolved(_active_by_slot(store, owner), scopes)
    return found[1] if found else None


def get_active_ranking_profile(
    deps: EngineDeps, owner: OwnerKey, scopes: Sequence[Scope]
) -> ActiveRankingProfile:
    """The slot of `scopes` as it stands (its current change, whose id the next change names)
    and the profile that ranks retrievals filtered to those scopes (read from the store, not
    the cache)."""
    store = _store(deps)
    slot_scopes = sorted_scopes(scopes)
    state = _current(store, owner, scope_slot(slot_scopes))
    found = _resolved(_active_by_slot(store, owner), slot_scopes or None)
    return ActiveRankingProfile(
        scopes=slot_scopes,
        state=state,
        profile=found[1] if found else None,
        profile_slot_scopes=None if found is None else _slot_scopes(found[0]),
    )


def _slot_scopes(slot: str) -> list[Scope]:
    return [] if slot == OWNER_WIDE_SLOT else [Scope(name) for name in slot.split("+")]


def list_ranking_profile_history(
    deps: EngineDeps, owner: OwnerKey, scopes: Sequence[Scope], *, limit: int
) -> list[RankingProfileState]:
    return _store(deps).list_history(owner, scope_slot(scopes), limit=limit)


def _current(store: RankingProfileStore, owner: OwnerKey, slot: str) -> RankingProfileState | None:
    newest = store.list_history(owner, slot, limit=1)
    return newest[0] if newest else None


def _check_change(current: RankingProfileState | None, change_id: str | None) -> None:
    if change_id != (current.change_id if current else None):
        raise StaleRankingChangeError()


def _trusted(profile: RankingProfile) -> None:
    if profile.evaluation is None:
        raise RankingProfileNotEvaluatedError()
    if not profile.evaluation.recommended:
        raise RankingProfileNotRecommendedError()


def _change(
    deps: EngineDeps,
    store: RankingProfileStore,
    owner: OwnerKey,
    *,
    scopes: list[Scope],
    current: RankingProfileState | None,
    active_profile_id: str | None,
    action: RankingProfileAction,
    actor: Principal,
) -> RankingProfileState:
    state = RankingProfileState(
        scopes=scopes,
        sequence=current.sequence + 1 if current else 1,
        change_id=deps.ids(),
        active_profile_id=active_profile_id,
        previous_profile_id=current.active_profile_id if current else None,
        action=action,
        actor=_actor(actor),
        at=deps.clock.now(),
    )
    try:
        store.save_state(owner, state, replacing=current.change_id if current else None)
    except ConflictError:
        raise StaleRankingChangeError() from None
    deps.profile_cache.invalidate(owner)
    return state


def activate_ranking_profile(
    deps: EngineDeps,
    owner: OwnerKey,
    profile_id: str,
    *,
    actor: Principal,
    change_id: str | None,
    scopes: Sequence[Scope] | None,
) -> RankingProfileState:
    """Make the profile the active one of a slot (by default the slot of the scopes it was
    learned on). A profile learned on every scope may serve any slot; one learned on some
    scopes only the slot of exactly those."""
    store = _store(deps)
    profile = _profile(store, owner, profile_id)
    slot_scopes = profile.scopes if scopes is None else sorted_scopes(scopes)
    if profile.scopes and slot_scopes != profile.scopes:
        raise InvalidRequestError(
            "scopes: a profile learned on some scopes is activated only for exactly those",
            field=("scopes",),
        )
    _trusted(profile)
    current = _current(store, owner, scope_slot(slot_scopes))
    _check_change(current, change_id)
    if current is not None and current.active_profile_id == profile.profile_id:
        return current
    return _change(
        deps,
        store,
        owner,
        scopes=slot_scopes,
        current=current,
        active_profile_id=profile.profile_id,
        action="activate",
        actor=actor,
    )


def deactivate_ranking_profile(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    actor: Principal,
    change_id: str,
    scopes: Sequence[Scope],
) -> RankingProfileState:
    """Leave the slot without a profile (its retrievals fall back to the owner-wide profile,
    or the engine's settings). A slot already without one is answered as it stands."""
    store = _store(deps)
    slot_scopes = sorted_scopes(scopes)
    current = _current(store, owner, scope_slot(slot_scopes))
    _check_change(current, change_id)
    if current is None:  # a slot that never changed has no change id to name
        raise StaleRankingChangeError()
    if current.active_profile_id is None:
        return current
    return _change(
        deps,
        store,
        owner,
        scopes=slot_scopes,
        current=current,
        active_profile_id=None,
        action="deactivate",
        actor=actor,
    )


def rollback_ranking_profile(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    actor: Principal,
    change_id: str,
    scopes: Sequence[Scope],
    profile_id: str,
) -> RankingProfileState:
    """Make active again a profile that was active in this slot before its current change
    (looked for among the slot's last ROLLBACK_SCAN changes)."""
    store = _store(deps)
    slot_scopes = sorted_scopes(scopes)
    history = store.list_history(owner, scope_slot(slot_scopes), limit=ROLLBACK_SCAN)
    current = history[0] if history else None
    _profile(store, owner, profile_id)
    _check_change(current, change_id)
    if current is not None and current.active_profile_id == profile_id:
        return current
    if not any(earlier.active_profile_id == profile_id for earlier in history[1:]):
        raise RankingProfileNeverActiveError()
    return _change(
        deps,
        store,
        owner,
        scopes=slot_scopes,
        current=current,
        active_profile_id=profile_id,
        action="rollback",
        actor=actor,
    )

"""In-memory ranking-profile store: profiles and per-slot change histories in dictionaries."""

from __future__ import annotations

import threading

from prme.errors import ConflictError
from prme.model.learning import RankingProfile, RankingProfileState
from prme.model.records import OwnerKey

_Owner = tuple[str, str]


class InMemoryRankingProfileStore:
    def __init__(self) -> None:
        self._profiles: dict[_Owner, dict[str, RankingProfile]] = {}
        # Per owner and slot: every change, oldest first; the last one is current.
        self._history: dict[_Owner, dict[str, list[RankingProfileState]]] = {}
        # A change's check and append happen at once, as the real stores' conditional writes.
        self._lock = threading.Lock()

    @staticmethod
    def _owner(owner: OwnerKey) -> _Owner:
        return (owner.tenant_id, owner.owner_id)

    def create_profile(self, owner: OwnerKey, profile: RankingProfile) -> None:
        profiles = self._profiles.setdefault(self._owner(owner), {})
        if profile.profile_id in profiles:
            raise ConflictError("a ranking profile of that id exists")
        profiles[profile.profile_id] = profile

    def get_profile(self, owner: OwnerKey, profile_id: str) -> RankingProfile | None:
        return self._profiles.get(self._owner(owner), {}).get(profile_id)

    def list_profiles(
        self, owner: OwnerKey, *, limit: int, after_id: str | None
    ) -> list[RankingProfile]:
        profiles = self._profiles.get(self._owner(owner), {})
        ids = sorted(i for i in profiles if after_id is None or i > after_id)
        return [profiles[i] for i in ids[:limit]]

    def current_states(self, owner: OwnerKey) -> list[RankingProfileState]:
        slots = self._history.get(self._owner(owner), {})
        return [slots[slot][-1] for slot in sorted(slots)]

    def list_history(self, owner: OwnerKey, slot: str, *, limit: int) -> list[RankingProfileState]:
        changes = self._history.get(self._owner(owner), {}).get(slot, [])
        return list(reversed(changes))[:limit]

    def save_state(
        self, owner: OwnerKey, state: RankingProfileState, *, replacing: str | None
    ) -> None:
        with self._lock:
            changes = self._history.setdefault(self._owner(owner), {}).setdefault(state.slot, [])
            current = changes[-1].change_id if changes else None
            if current != replacing:
                raise ConflictError("the slot changed since it was read")
            changes.append(state)

    def erase_owner(self, owner: OwnerKey) -> int:
        profiles = self._profiles.pop(self._owner(owner), {})
        slots = self._history.pop(self._owner(owner), {})
        return len(profiles) + sum(len(changes) for changes in slots.values())

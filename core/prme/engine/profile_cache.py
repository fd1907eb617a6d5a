"""The active ranking profiles of recently seen owners, kept in the process for a short time
so a retrieval does not read the profile store each time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from prme.model.learning import RankingProfile
from prme.model.records import OwnerKey

# Per slot key (`prme.model.learning.scope_slot`), the profile active there.
ActiveProfiles = Mapping[str, RankingProfile]
# Owners kept at most; the least recently loaded one goes first past it.
MAX_CACHED_OWNERS = 10_000


class ActiveProfileCache:
    """Per owner: the profiles active in its slots, as read at most `ttl` seconds ago.

    `invalidate` drops an owner at once (a change made through this process); a change made by
    another process is seen when the entry expires."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], tuple[float, ActiveProfiles]] = {}
        self.loads = 0

    def get(
        self, owner: OwnerKey, ttl: float, load: Callable[[], ActiveProfiles]
    ) -> ActiveProfiles:
        key = (owner.tenant_id, owner.owner_id)
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and now < entry[0]:
            return entry[1]
        active = load()
        with self._lock:
            self.loads += 1
            if ttl > 0:
                self._entries.pop(key, None)
                if len(self._entries) >= MAX_CACHED_OWNERS:
                    del self._entries[next(iter(self._entries))]
                self._entries[key] = (now + ttl, active)
        return active

    def invalidate(self, owner: OwnerKey) -> None:
        with self._lock:
            self._entries.pop((owner.tenant_id, owner.owner_id), None)

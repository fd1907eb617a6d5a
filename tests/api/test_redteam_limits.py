"""Red-team findings on per-tenant limits: writes that pass the stored quota or count twice."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import pytest

from prme.backends.clock import ManualClock
from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.service import MemoryEngine
from prme.errors import QuotaExceededError
from prme.http.admission import admitted
from prme.model.inputs import StoreInput
from prme.model.limits import TenantLimits
from prme.model.records import OwnerKey
from tests.harness.limits import START, LimitedApi


def used(api: LimitedApi, headers: dict[str, str]) -> dict[str, Any]:
    report = api.client.get("/v1/limits", headers=headers).json()
    return {usage["limit"]: usage["used"] for usage in report["limits"]}


def test_a_bulk_import_cannot_pass_the_stored_records_quota(limited_api: LimitedApi) -> None:
    api = limited_api
    api.set_limits("acme", stored_records=3)
    items = [{"content": f"bulk note {i} about herons"} for i in range(10)]

    answer = api.client.post("/v1/imports", json={"items": items}, headers=api.alice)

    assert answer.status_code == 403, answer.text
    assert answer.json()["limit"] == "stored_records"
    assert api.events("acme", "alice") == 0
    assert used(api, api.alice)["stored_records"] == 0


def test_a_replayed_store_is_not_counted_twice_nor_refused(limited_api: LimitedApi) -> None:
    api = limited_api
    api.set_limits("acme", stored_records=1)
    headers = {**api.alice, "Idempotency-Key": str(uuid.uuid4())}
    first = api.client.post("/v1/store", json={"content": "I live in Lisbon"}, headers=headers)
    assert first.status_code == 200

    # The client lost the answer and retries with the same key, as the remote client does.
    again = api.client.post("/v1/store", json={"content": "I live in Lisbon"}, headers=headers)

    assert again.status_code == 200, again.text
    assert again.json()["event_id"] == first.json()["event_id"]
    assert used(api, api.alice)["stored_records"] == 1


def test_key_management_counts_against_the_tenants_request_rate(limited_api: LimitedApi) -> None:
    api = limited_api
    api.set_limits("acme", requests_per_second=1, burst=2)
    for _ in range(2):
        assert api.client.get("/v1/stats", headers=api.alice).status_code == 200
    assert api.client.get("/v1/stats", headers=api.alice).status_code == 429

    created = api.client.post("/v1/keys", json={"user_id": "dave"}, headers=api.operator)

    assert created.status_code == 429, created.text


class _BothReadFirst:
    """An engine whose `get_event` returns only once two callers have read the event: two
    deletes of one memory both see it before either deletes it, as concurrent requests can."""

    def __init__(self, engine: MemoryEngine) -> None:
        self._engine = engine
        self._barrier = threading.Barrier(2, timeout=30)

    def get_event(self, owner: OwnerKey, event_id: str) -> Any:
        event = self._engine.get_event(owner, event_id)
        self._barrier.wait()
        return event

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def test_concurrent_deletes_of_one_memory_free_it_once(tmp_path: Path) -> None:
    backend = open_embedded(tmp_path / "data", embedder=HashingEmbedder(), clock=ManualClock(START))
    try:
        gate = backend.engine.deps.limits
        assert gate is not None
        gate.set_limits("acme", TenantLimits(stored_records=1))
        engine = admitted(cast(MemoryEngine, _BothReadFirst(backend.engine)))
        owner = OwnerKey(tenant_id="acme", owner_id="alice")
        stored = engine.store(owner, StoreInput(content="I live in Lisbon"))

        with ThreadPoolExecutor(max_workers=2) as pool:
            deletes = [pool.submit(engine.delete_memory, owner, stored.event_id) for _ in "ab"]
            for done in deletes:
                done.result()

        engine.store(owner, StoreInput(content="I work in Porto"))
        with pytest.raises(QuotaExceededError):
            engine.store(owner, StoreInput(content="I was born in Faro"))
    finally:
        backend.close()

"""Small helpers of the issue 20 red-team tests: ingest and store one message, swap the
extractor, and the HTTP calls of the condition routes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prme.engine.deps import EngineDeps
from prme.engine.service import MemoryEngine
from prme.model.inputs import IngestInput, StoreInput
from prme.model.records import MemoryNode, OwnerKey
from tests.harness.engines import ALICE, Harness, embedded_harness, memory_harness
from tests.harness.http import Api

CONDITION = {"condition": "Ana booked the Friday flight"}


def say(h: Harness, text: str, owner: OwnerKey = ALICE) -> MemoryNode:
    """Ingest one message a minute after the last (extraction waited for); its raw note."""
    h.clock.advance(minutes=1)
    result = h.engine.ingest(
        owner, IngestInput.model_validate({"content": text, "wait_for_extraction": True})
    )
    assert result.node_id is not None
    note = h.ledger.get_node(owner, result.node_id)
    assert note is not None
    return note


def store(h: Harness, content: str, **fields: Any) -> str:
    result = h.engine.store(ALICE, StoreInput.model_validate({"content": content, **fields}))
    assert result.node_id is not None
    return result.node_id


def with_extractor(h: Harness, extractor: Any) -> MemoryEngine:
    """An engine over the harness's stores with another extractor."""
    return MemoryEngine(EngineDeps(**{**h.engine.deps.__dict__, "extractor": extractor}))


def stored(api: Api, content: str, **body: Any) -> Any:
    response = api.client.post("/v1/store", json={"content": content, **body}, headers=api.alice)
    assert response.status_code == 200, response.text
    return response.json()


def put_condition(api: Api, node_id: str, body: dict[str, Any]) -> Any:
    return api.client.put(f"/v1/nodes/{node_id}/condition", json=body, headers=api.alice)


@pytest.fixture(params=["memory", "embedded"])
def racing_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    """The backends whose transactions stay isolated under concurrent commits. Moto is left
    out: a cancelled TransactWriteItems restores a copy of the whole table taken before it
    ran, undoing a concurrent transaction that committed meanwhile (real DynamoDB does not),
    so a race test on it fails for moto's reasons."""
    if request.param == "memory":
        yield memory_harness()
        return
    h = embedded_harness(tmp_path / "data")
    yield h
    h.index.close()  # type: ignore[attr-defined]
    h.ledger.close()  # type: ignore[attr-defined]
    h.usage.close()  # type: ignore[union-attr]

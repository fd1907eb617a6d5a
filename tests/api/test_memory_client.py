"""MemoryClient offers the write-side operations of the HTTP routes in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from prme.client import MemoryClient
from prme.errors import InvalidRequestError
from prme.model.enums import LifecycleState, ProcessingStatus
from prme.settings import Settings


@pytest.fixture
def client(tmp_path: Path) -> MemoryClient:
    return MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing"))


def test_ingest_fast_ingest_and_lifecycle_through_the_client(client: MemoryClient) -> None:
    with client:
        ingested = client.ingest(
            "I paid $40 for concert tickets yesterday.",
            event_time="2024-06-02T20:00:00+01:00",
            wait_for_extraction=True,
            user_id="alice",
        )
        assert ingested.extraction_status is ProcessingStatus.COMPLETED
        fast = client.ingest_fast([{"content": "first"}, {"content": "second"}], user_id="alice")
        assert fast.accepted == 2
        assert client.process_materializations(user_id="alice").processed == 2
        old = client.store("My gym is FitLab", user_id="alice")
        new = client.store("My gym is now PowerHouse", user_id="alice")
        assert old.node_id is not None
        assert new.node_id is not None
        superseded, current = client.supersede(old.node_id, new.node_id, user_id="alice")
        assert superseded.lifecycle_state == LifecycleState.SUPERSEDED
        assert client.promote(current.id, user_id="alice").lifecycle_state == LifecycleState.STABLE
        assert client.reinforce(current.id, user_id="alice").confidence > current.confidence
        assert (
            client.archive(current.id, user_id="alice").lifecycle_state == LifecycleState.ARCHIVED
        )
        state = client.get_extraction_status(ingested.event_id, user_id="alice")
        assert state.extraction_status is ProcessingStatus.COMPLETED


def test_client_validation_errors_are_prme_errors(client: MemoryClient) -> None:
    with client, pytest.raises(InvalidRequestError):
        client.ingest_fast([{"content": "x", "unknown": 1}])

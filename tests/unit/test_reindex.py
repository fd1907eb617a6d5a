"""A reindex re-embeds an owner's records with the current embedder and vector settings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from prme.cli import main
from prme.client import MemoryClient
from prme.embedding.hashing import HashingEmbedder
from prme.engine.reindex import reindex_owner
from prme.engine.service import MemoryEngine
from prme.errors import EmbeddingUnavailableError
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.records import OwnerKey
from prme.model.search import EmbeddingModelInfo, IndexDocument
from prme.ports import Embedder
from prme.settings import Settings
from tests.harness.engines import ALICE, BOB, Harness, memory_harness

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
# (session, minutes after START, speaker, text): two sessions, interleaved in time.
TURNS = [
    ("s1", 0, "Ana", "I signed up for a pottery class on Saturdays."),
    ("s1", 1, "Ben", "Yes, every Saturday morning!"),
    ("s2", 2, "Ana", "The lake near the cabin was freezing this year."),
    ("s1", 3, "Ana", "My first bowl came out lopsided but I love it."),
    ("s2", 4, "Ben", "We should rent the same cabin again next summer."),
]


def store_turns(h: Harness, owner: OwnerKey, order: Sequence[int]) -> None:
    for i in order:
        session, minutes, speaker, text = TURNS[i]
        request = StoreInput(
            content=text,
            speaker=speaker,
            session_id=session,
            event_time=START + timedelta(minutes=minutes),
        )
        h.engine.store(owner, request)


def switched(h: Harness, embedder: Embedder) -> MemoryEngine:
    """An engine over the same ledger and index with another embedder (a new release)."""
    return MemoryEngine(replace(h.engine.deps, embedder=embedder))


def vectors(doc: IndexDocument) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A document's searched vector and its own (content) vector."""
    assert doc.vector is not None and doc.content_vector is not None
    return np.asarray(doc.vector), np.asarray(doc.content_vector)


def documents(h: Harness, owner: OwnerKey) -> dict[str, IndexDocument]:
    """The owner's index documents by text (the in-memory index keeps them in a dict)."""
    held = h.index.documents.values()  # type: ignore[attr-defined]
    return {
        d.text: d for d in held if (d.tenant_id, d.owner_id) == (owner.tenant_id, owner.owner_id)
    }


class FailingEmbedder:
    """Embeds normally until `fail_after` calls, then raises like an unreachable model."""

    def __init__(self, inner: HashingEmbedder, fail_after: int) -> None:
        self.inner = inner
        self.calls = 0
        self.fail_after = fail_after

    @property
    def model(self) -> EmbeddingModelInfo:
        return self.inner.model

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self.inner.embed(texts)

    def embed_segmented(self, groups: Sequence[Sequence[str]]) -> NDArray[np.float32]:
        self.calls += 1
        if self.calls > self.fail_after:
            raise EmbeddingUnavailableError()
        return self.inner.embed_segmented(groups)


def test_reindex_moves_every_record_to_the_current_model_and_the_vector_channel_returns() -> None:
    old = memory_harness(embedder=HashingEmbedder(name="model-a"))
    store_turns(old, ALICE, range(len(TURNS)))
    engine = switched(old, HashingEmbedder(name="model-b"))
    query = RetrieveInput(query="pottery class")
    assert engine.retrieve(ALICE, query).metrics.backend_failures == ["VECTOR"]

    report = engine.reindex(ALICE)

    assert (report.nodes, report.batches) == (len(TURNS), 1)
    assert report.embedding_model == "model-b@1/64"
    assert {d.embedding_model for d in documents(old, ALICE).values()} == {"model-b@1/64"}
    after = engine.retrieve(ALICE, query)
    assert after.metrics.backend_failures == []
    assert after.results[0].semantic_relevance is not None


def test_reindexed_vectors_equal_storing_the_same_records_today_in_time_order() -> None:
    # Stored out of order under the old model; the reference stores them in time order under
    # the new one. Afterwards every record has the reference's own and session-context vector.
    old = memory_harness(embedder=HashingEmbedder(name="model-a"))
    store_turns(old, ALICE, [4, 2, 0, 3, 1])
    reference = memory_harness(embedder=HashingEmbedder(name="model-b"))
    store_turns(reference, ALICE, range(len(TURNS)))

    reindex_owner(switched(old, HashingEmbedder(name="model-b")).deps, ALICE, batch_size=2)

    got, want = documents(old, ALICE), documents(reference, ALICE)
    assert got.keys() == want.keys()
    for text, doc in got.items():
        (searched, own), (want_searched, want_own) = vectors(doc), vectors(want[text])
        assert np.allclose(searched, want_searched), text
        assert np.allclose(own, want_own), text
    # The second turn of s1 mixes in the first: its searched vector is not its own.
    searched, own = vectors(got[TURNS[1][3]])
    assert not np.allclose(searched, own)


def test_progress_is_reported_after_each_batch() -> None:
    h = memory_harness()
    store_turns(h, ALICE, range(len(TURNS)))
    seen: list[tuple[int, int]] = []
    report = reindex_owner(
        h.engine.deps, ALICE, batch_size=2, progress=lambda done, total: seen.append((done, total))
    )
    assert seen == [(2, 5), (4, 5), (5, 5)]
    assert report.batches == 3


def test_only_the_given_owner_is_reindexed() -> None:
    old = memory_harness(embedder=HashingEmbedder(name="model-a"))
    store_turns(old, ALICE, range(2))
    store_turns(old, BOB, range(2))
    switched(old, HashingEmbedder(name="model-b")).reindex(ALICE)
    assert {d.embedding_model for d in documents(old, ALICE).values()} == {"model-b@1/64"}
    assert {d.embedding_model for d in documents(old, BOB).values()} == {"model-a@1/64"}


def test_an_unavailable_embedder_stops_the_reindex_and_a_rerun_completes_it() -> None:
    old = memory_harness(embedder=HashingEmbedder(name="model-a"))
    store_turns(old, ALICE, range(len(TURNS)))
    flaky = FailingEmbedder(HashingEmbedder(name="model-b"), fail_after=1)
    with pytest.raises(EmbeddingUnavailableError):
        reindex_owner(switched(old, flaky).deps, ALICE, batch_size=2)
    models = [str(d.embedding_model) for d in documents(old, ALICE).values()]
    assert sorted(models) == ["model-a@1/64"] * 3 + ["model-b@1/64"] * 2

    flaky.fail_after = 100
    reindex_owner(switched(old, flaky).deps, ALICE, batch_size=2)
    assert {d.embedding_model for d in documents(old, ALICE).values()} == {"model-b@1/64"}


def test_reindex_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        reindex_owner(memory_harness().engine.deps, ALICE, batch_size=0)


def hashing_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, records: Sequence[tuple[str, str]]
) -> Path:
    """An embedded memory holding (user, text) records, and the CLI set to the same embedder."""
    data = tmp_path / "memory"
    with MemoryClient(data, settings=Settings(embedder="hashing")) as client:
        for user_id, text in records:
            client.store(text, user_id=user_id)
    monkeypatch.setenv("PRME_EMBEDDER", "hashing")
    return data


def test_cli_reindexes_one_users_records_and_reports_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [
        ("alice", "I signed up for a pottery class."),
        ("alice", "The lake was freezing."),
        ("bob", "Somebody else's record."),
    ]
    data = hashing_memory(tmp_path, monkeypatch, records)

    assert main(["--data-dir", str(data), "reindex", "--user-id", "alice"]) == 0

    out, err = capsys.readouterr()
    assert out.strip() == "reindexed=2 batches=1 model=prme/hashing@1/64"
    assert "reindexed 2/2 records" in err


def test_cli_says_why_a_reindex_stopped_and_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = hashing_memory(tmp_path, monkeypatch, [("alice", "I signed up for a pottery class.")])

    def unavailable(self: HashingEmbedder, groups: Sequence[Sequence[str]]) -> NDArray[np.float32]:
        raise EmbeddingUnavailableError()

    monkeypatch.setattr(HashingEmbedder, "embed_segmented", unavailable)

    assert main(["--data-dir", str(data), "reindex", "--user-id", "alice"]) == 1

    out, err = capsys.readouterr()
    assert out == ""
    assert "reindex stopped: Embedding model unavailable" in err


def test_cli_tenant_reindex_stops_at_the_failing_owner_and_says_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [("alice", "I signed up for a pottery class."), ("bob", "The lake was freezing.")]
    data = hashing_memory(tmp_path, monkeypatch, records)
    real = HashingEmbedder.embed_segmented
    calls = 0

    def fails_second_owner(
        self: HashingEmbedder, groups: Sequence[Sequence[str]]
    ) -> NDArray[np.float32]:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise EmbeddingUnavailableError()
        return real(self, groups)

    monkeypatch.setattr(HashingEmbedder, "embed_segmented", fails_second_owner)

    assert main(["--data-dir", str(data), "reindex", "--all-users"]) == 1

    out, err = capsys.readouterr()
    assert out.splitlines() == ["user_id=alice reindexed=1 batches=1"]
    assert "reindex stopped at bob: Embedding model unavailable" in err
    assert "prme reindex --all-users --start-after alice" in err

"""Bulk imports on the embedded backend: chunks commit in the process right after the job is
saved, and chunks a killed process left in the outbox commit when the directory is reopened."""

from __future__ import annotations

from pathlib import Path

import pytest

from prme.backends.clock import ManualClock
from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.backends.embedded.sqlite_imports import EmbeddedImportQueue
from prme.client import MemoryClient
from prme.embedding.hashing import HashingEmbedder
from prme.model.imports import ImportChunkMessage, ImportStatus
from prme.settings import Settings
from tests.harness.engines import ALICE, TOKEN_COUNTER
from tests.harness.imports import import_input


class ProcessKilledError(BaseException):
    """Stands for the process dying: nothing catches it."""


def opened(data: Path) -> EmbeddedBackend:
    return open_embedded(
        data, embedder=HashingEmbedder(), clock=ManualClock(), token_counter=TOKEN_COUNTER
    )


def test_the_client_imports_in_process_and_reports_completion(tmp_path: Path) -> None:
    items = [{"content": f"note {i} about herons"} for i in range(100)]
    with MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing")) as client:
        job = client.submit_import(items, user_id="alice")
        assert (job.status, job.chunks_done, job.chunks_total, job.items_accepted) == (
            ImportStatus.COMPLETED,
            3,
            3,
            100,
        )
        assert client.get_import(job.import_id, user_id="alice") == job
        assert client.get_stats(user_id="alice").events == 100


def test_chunks_a_killed_process_left_commit_exactly_when_reopened(tmp_path: Path) -> None:
    backend = opened(tmp_path / "data")
    queue = backend.engine.deps.import_queue
    assert isinstance(queue, EmbeddedImportQueue)
    committed: list[int] = []

    def dies_after_one_chunk(message: ImportChunkMessage) -> None:
        if committed:
            raise ProcessKilledError
        backend.engine.commit_import_chunk(message)
        committed.append(message.chunk_index)

    queue.attach(dies_after_one_chunk)
    with pytest.raises(ProcessKilledError):
        backend.engine.submit_import(ALICE, import_input(120))
    backend.close()

    again = opened(tmp_path / "data")
    try:
        (job_id,) = _import_ids(again)
        job = again.engine.get_import(ALICE, job_id)
        assert (job.status, job.chunks_done, job.items_accepted) == (ImportStatus.COMPLETED, 3, 120)
        assert again.engine.get_stats(ALICE).events == 120
        queue_again = again.engine.deps.import_queue
        assert isinstance(queue_again, EmbeddedImportQueue)
        assert queue_again.pending() == 0
    finally:
        again.close()


def _import_ids(backend: EmbeddedBackend) -> set[str]:
    assert backend.imports is not None
    return {row[0] for row in backend.imports.execute("SELECT import_id FROM import_jobs")}

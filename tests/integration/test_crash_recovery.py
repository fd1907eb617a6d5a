"""kill -9 at any point loses no acknowledged write, and reopening finishes pending work."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.errors import NotFoundError
from prme.model.enums import ProcessingStatus
from prme.model.inputs import RetrieveInput
from prme.model.records import OwnerKey
from prme.retrieval.tokens import WhitespaceTokenCounter

ALICE = OwnerKey(tenant_id="local", owner_id="alice")
WRITER = [sys.executable, "-m", "tests.harness.crash_writer"]
ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'core'}", **extra}


def _reopen(data_dir: Path):  # type: ignore[no-untyped-def]
    return open_embedded(
        data_dir, embedder=HashingEmbedder(), token_counter=WhitespaceTokenCounter()
    )


@pytest.mark.slow
@pytest.mark.parametrize("run_for", [0.0, 0.05, 0.3, 0.8])
def test_kill_9_loses_no_acknowledged_store(tmp_path: Path, run_for: float) -> None:
    data_dir = tmp_path / "data"
    with subprocess.Popen(
        [*WRITER, str(data_dir)], stdout=subprocess.PIPE, text=True, env=_env(), cwd=ROOT
    ) as proc:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the writer is up and storing
        time.sleep(run_for)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=30)
    acked = [line.split()[1] for line in (first + out).splitlines() if line.startswith("acked ")]
    backend = _reopen(data_dir)
    try:
        assert acked, "the writer acknowledged nothing before the kill"
        for event_id in acked:
            assert backend.engine.get_event(ALICE, event_id).content.endswith("about pelicans")
            # Reopening finished any index work the killed process left pending.
            status, _ = backend.engine.get_processing_status(ALICE, event_id)
            assert status is ProcessingStatus.COMPLETED
        assert backend.ledger.count_pending_work(None) == 0
        newest = backend.engine.retrieve(ALICE, RetrieveInput(query="pelicans", limit=200)).results
        assert len(newest) >= min(200, len(acked))
    finally:
        backend.close()


def _run_writer(data_dir: Path, **env: str) -> str:
    proc = subprocess.run(
        [*WRITER, str(data_dir)],
        capture_output=True,
        text=True,
        env=_env(**env),
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 137, proc.stderr
    return proc.stdout


@pytest.mark.slow
def test_crash_between_index_write_and_commit_leaves_nothing_visible(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    out = _run_writer(data_dir, PRME_TEST_CRASH_BEFORE_COMMIT="1")
    event_id = out.split()[1]
    backend = _reopen(data_dir)
    try:
        # Never acknowledged, never committed: the orphan index document must not surface.
        with pytest.raises(NotFoundError):
            backend.engine.get_event(ALICE, event_id)
        assert backend.engine.retrieve(ALICE, RetrieveInput(query="pelicans")).results == []
    finally:
        backend.close()


@pytest.mark.slow
def test_pending_work_of_a_killed_process_is_finished_on_reopen(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    out = _run_writer(data_dir, PRME_TEST_INDEX_DOWN="1")
    _, event_id, status = out.split()
    assert status == "pending"
    backend = _reopen(data_dir)
    try:
        assert (
            backend.engine.get_processing_status(ALICE, event_id)[0] is ProcessingStatus.COMPLETED
        )
        hits = backend.engine.retrieve(ALICE, RetrieveInput(query="pelicans")).results
        assert [h.evidence_refs for h in hits] == [[event_id]]
    finally:
        backend.close()


def test_fast_ingest_key_replays_after_a_restart(tmp_path: Path) -> None:
    from prme.model.inputs import FastIngestInput

    batch = FastIngestInput.model_validate({"items": [{"content": "a"}, {"content": "b"}]})
    key = "5a5a5a5a-0000-4000-8000-000000000001"
    backend = _reopen(tmp_path / "data")
    first = backend.engine.ingest_fast(ALICE, batch, idempotency_key=key)
    backend.close()
    backend = _reopen(tmp_path / "data")
    try:
        again = backend.engine.ingest_fast(ALICE, batch, idempotency_key=key)
        assert again.event_ids == first.event_ids
    finally:
        backend.close()

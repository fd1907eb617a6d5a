"""The embedded data directory is private: 0700, its SQLite files 0600, whatever the umask."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from prme.backends.clock import ManualClock
from prme.backends.embedded.service import INDEX_FILE, LEDGER_FILE, open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.model.inputs import StoreInput
from prme.model.records import OwnerKey
from tests.harness.engines import TOKEN_COUNTER

OWNER = OwnerKey(tenant_id="local", owner_id="alice")


@pytest.fixture(params=[0o022, 0o000], ids=["umask-022", "umask-000"])
def permissive_umask(request: pytest.FixtureRequest) -> Iterator[None]:
    previous = os.umask(request.param)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def database_files(data_dir: Path) -> list[Path]:
    return [
        data_dir / f"{name}{suffix}"
        for name in (LEDGER_FILE, INDEX_FILE)
        for suffix in ("", "-wal", "-shm")
    ]


def store_one_and_check_files(data_dir: Path) -> None:
    backend = open_embedded(
        data_dir, embedder=HashingEmbedder(), clock=ManualClock(), token_counter=TOKEN_COUNTER
    )
    try:
        backend.engine.store(OWNER, StoreInput(content="A private note"))
        # Checked while open: the -wal and -shm files exist only then.
        for file in database_files(data_dir):
            assert file.exists(), file.name
            assert mode(file) == 0o600, f"{file.name}: {oct(mode(file))}"
    finally:
        backend.close()


@pytest.mark.usefixtures("permissive_umask")
def test_a_new_data_directory_is_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "nested" / "data"
    store_one_and_check_files(data_dir)
    assert mode(data_dir) == 0o700


@pytest.mark.usefixtures("permissive_umask")
def test_an_existing_world_readable_data_directory_is_tightened(tmp_path: Path) -> None:
    # Given a data directory and databases left world-readable by an older version, still
    # open elsewhere so their -wal and -shm files exist
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)
    others = [sqlite3.connect(data_dir / name) for name in (LEDGER_FILE, INDEX_FILE)]
    try:
        for conn in others:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE leftover (x)")
        for file in database_files(data_dir):
            file.chmod(0o644)
        # When the backend opens it, then everything is the owner's only
        store_one_and_check_files(data_dir)
        assert mode(data_dir) == 0o700
    finally:
        for conn in others:
            conn.close()

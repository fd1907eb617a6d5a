"""The embedded backend's SQLite connections and the private file modes of its data directory.

Memories are private: the data directory is 0700 and every database file 0600, whatever the
process umask, and a directory or file left more open by an older version is tightened.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from pathlib import Path
from typing import Literal

Synchronous = Literal["normal", "full"]

PRIVATE_DIRECTORY_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
# SQLite's companions of a WAL-mode database.
_SIDE_FILES = ("-wal", "-shm")


def private_directory(path: Path) -> None:
    """Create `path` (and missing parents) readable by its owner only; tighten it if it exists."""
    path.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
    # mkdir's mode passes through the umask, and an existing directory keeps its own.
    _restrict(path, PRIVATE_DIRECTORY_MODE)


def _restrict(path: Path, mode: int) -> None:
    if stat.S_IMODE(path.stat().st_mode) == mode:
        return
    # Only the owner may change the mode. A directory shared with us by another account
    # stays as it is; the database files inside are still ours and 0600.
    with contextlib.suppress(PermissionError):
        path.chmod(mode)


def _private_database(path: Path) -> None:
    """Create the database file 0600 before SQLite opens it: SQLite then creates its -wal
    and -shm files with the database file's mode."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
    os.close(fd)
    for file in (path, *(path.with_name(path.name + suffix) for suffix in _SIDE_FILES)):
        if file.exists():
            _restrict(file, PRIVATE_FILE_MODE)


def connect(path: Path, synchronous: Synchronous = "normal") -> sqlite3.Connection:
    """A WAL-mode connection shared across threads (callers serialise with a lock).

    WAL with synchronous=NORMAL never loses a committed transaction when the process is
    killed; only an operating-system crash or power loss can roll back the newest ones.
    `full` closes that gap at the cost of an fsync per commit.
    """
    private_directory(path.parent)
    _private_database(path)
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn

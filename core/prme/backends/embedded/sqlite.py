"""Opening SQLite databases the way the embedded backend needs them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Literal

Synchronous = Literal["normal", "full"]


def connect(path: Path, synchronous: Synchronous = "normal") -> sqlite3.Connection:
    """A WAL-mode connection shared across threads (callers serialise with a lock).

    WAL with synchronous=NORMAL never loses a committed transaction when the process is
    killed; only an operating-system crash or power loss can roll back the newest ones.
    `full` closes that gap at the cost of an fsync per commit.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn

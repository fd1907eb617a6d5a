"""The `prme` command run as a subprocess on a data directory, and a free loopback port for servers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def prme_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment the command runs in: this tree's code and the fast test embedder."""
    return {
        **os.environ,
        "PRME_EMBEDDER": "hashing",
        "PYTHONPATH": f"{ROOT / 'core'}",
        **(env or {}),
    }


def run_prme(
    *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`prme ARGS...` exactly as typed: nothing is added to the command line."""
    return subprocess.run(
        [sys.executable, "-m", "prme.cli", *args],
        capture_output=True,
        text=True,
        env=prme_env(env),
        timeout=timeout,
        check=False,
    )


def prme(
    data_dir: Path, *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_prme("--data-dir", str(data_dir), *args, timeout=timeout, env=env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port

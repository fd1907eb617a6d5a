"""A benchmark's result file: its figures together with what produced them (the command, the
git commit and whether the checkout had changes, the machine, the parameters), so a figure
quoted in the docs can be traced to its run and repeated."""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
# What a run executes; a change elsewhere (a document, a result file) leaves a run clean.
CODE_PATHS = ("core", "functions", "benchmarks", ":!benchmarks/results", "pyproject.toml")
# What every result file says about its run, before the benchmark's own figures.
HEADER_FIELDS = ("benchmark", "command", "git_commit", "git_dirty", "machine", "started_at")


def git_state() -> tuple[str | None, bool | None]:
    """The checked-out commit and whether the code a run executes differs from it (None
    without git)."""
    git = shutil.which("git")
    if git is None:
        return None, None
    try:
        head = subprocess.run(
            [git, "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            [git, "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None, None
    return head, bool(status.strip())


def machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }


def command_line(module: str, argv: Sequence[str]) -> str:
    """How to repeat the run from the repository root."""
    return shlex.join(["python", "-m", module, *argv])


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunStart:
    """When a run began and the checkout it ran (read at the start: a commit made while a
    long run goes on must not be credited with its figures)."""

    started_at: str = field(default_factory=now)
    git: tuple[str | None, bool | None] = field(default_factory=git_state)


def start_run() -> RunStart:
    return RunStart()


def write_result(
    path: Path,
    module: str,
    results: Mapping[str, Any],
    *,
    parameters: Mapping[str, Any],
    started: RunStart,
    argv: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Write `results` to `path` under the run's header; return what was written."""
    commit, dirty = started.git
    document = {
        "benchmark": module,
        "command": command_line(module, sys.argv[1:] if argv is None else argv),
        "git_commit": commit,
        "git_dirty": dirty,
        "machine": machine(),
        "started_at": started.started_at,
        "finished_at": now(),
        "parameters": dict(parameters),
        "results": dict(results),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return document


@contextmanager
def base_worktree(git: str, base: str) -> Iterator[tuple[Path, str]]:
    """A temporary detached worktree of `base` and the commit it resolved to, for an A/B run
    of that commit against this checkout; removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp) / "base"
        subprocess.run(
            [git, "worktree", "add", "--detach", str(worktree), base],
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
        )
        try:
            commit = subprocess.run(
                [git, "rev-parse", "HEAD"], cwd=worktree, check=True, capture_output=True, text=True
            ).stdout.strip()
            yield worktree, commit
        finally:
            subprocess.run(
                [git, "worktree", "remove", "--force", str(worktree)],
                cwd=REPO_ROOT,
                check=False,
                capture_output=True,
            )

"""kill -9 trials against `prme serve` with concurrent keyed writers: lost and duplicated writes.

Each trial starts `prme serve` (embedded, its own data directory, an owner key made with
`prme keys create`), lets several writer threads send keyed `POST /v1/store` requests, kills
the server with SIGKILL at a random moment, starts it again on the same port and lets every
writer retry its unanswered write with the same Idempotency-Key. Then the ledger is read:
an acknowledged write whose event is missing is lost; a logical write (a unique token in its
content) stored as more than one event is duplicated.

Run: `.venv/bin/python -m benchmarks.crash_durability [--trials 30] [--writers 4]`.
Loopback only; every wait is bounded. Report only, never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from benchmarks.results import start_run, write_result
from prme.backends.embedded.service import LEDGER_FILE
from tests.harness.cli import ROOT, free_port, prme

OWNER_ID = "crash-bench"
CONTENT_PREFIX = "crash durability write"
SERVER_START_TIMEOUT_S = 60.0
TRIAL_TIMEOUT_S = 120.0
RETRY_PAUSE_S = 0.05


@dataclass
class Server:
    """One `prme serve` process on a loopback port over one data directory."""

    data_dir: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {**os.environ, "PRME_EMBEDDER": "hashing", "PYTHONPATH": str(ROOT / "core")}
        command = [sys.executable, "-m", "prme.cli", "--data-dir", str(self.data_dir)]
        self.process = subprocess.Popen(
            [*command, "serve", "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prme serve exited with {self.process.returncode}")
            try:
                if httpx.get(f"{self.base}/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError("prme serve did not answer /health in time")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Writer:
    """Sends one logical write at a time, each under its own key and token, until it is
    answered; an unanswered write is retried with the same key and body, never a new one."""

    base: str
    api_key: str
    stop: threading.Event
    deadline: float
    keyed: bool = True
    acknowledged: dict[str, str] = field(default_factory=dict)  # token -> event_id
    retried: int = 0  # writes that needed more than one attempt
    # Writes whose request may have reached the server but got no answer (the connection
    # broke after it was sent): the ones an Idempotency-Key exists for.
    in_doubt: set[str] = field(default_factory=set)
    refused: list[int] = field(default_factory=list)  # unexpected 4xx answers

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.api_key}"}
        with httpx.Client(base_url=self.base, headers=headers, timeout=10) as client:
            while not self.stop.is_set() and time.monotonic() < self.deadline:
                self._write_once(client)

    def _write_once(self, client: httpx.Client) -> None:
        token = uuid.uuid4().hex
        key = str(uuid.uuid4())
        body = {"content": f"{CONTENT_PREFIX} {token}"}
        headers = {"Idempotency-Key": key} if self.keyed else {}
        attempts, doubted = 0, False
        while time.monotonic() < self.deadline:
            attempts += 1
            try:
                response = client.post("/v1/store", json=body, headers=headers)
            except httpx.ConnectError:
                time.sleep(RETRY_PAUSE_S)  # refused: the server is down, nothing was sent
                continue
            except httpx.TransportError:
                doubted = True
                time.sleep(RETRY_PAUSE_S)
                continue
            if response.status_code == 200:
                self.acknowledged[token] = response.json()["event_id"]
                self.retried += attempts > 1
                if doubted:
                    self.in_doubt.add(token)
                return
            if response.status_code >= 500:
                time.sleep(RETRY_PAUSE_S)
                continue
            self.refused.append(response.status_code)
            return


def stored_events(data_dir: Path) -> list[tuple[str, str, datetime]]:
    """(id, content, ingested_at) of every stored event, read straight from the ledger file."""
    uri = f"file:{data_dir / LEDGER_FILE}?mode=ro"
    with sqlite3.connect(uri, uri=True) as conn:
        rows = conn.execute("SELECT id, body FROM events").fetchall()
    conn.close()
    bodies = [json.loads(body) for _, body in rows]
    return [
        (event_id, body["content"], datetime.fromisoformat(body["ingested_at"]))
        for (event_id, _), body in zip(rows, bodies, strict=True)
    ]


def run_trial(root: Path, writers: int, rng: random.Random, *, keyed: bool) -> dict[str, Any]:
    started = time.monotonic()
    data_dir = root / "data"
    created = prme(data_dir, "keys", "create", "--user-id", OWNER_ID)
    if created.returncode != 0:
        raise RuntimeError("prme keys create failed")
    api_key = dict(line.split(": ", 1) for line in created.stdout.splitlines())["api_key"]
    server = Server(data_dir, free_port())
    stop = threading.Event()
    deadline = started + TRIAL_TIMEOUT_S
    team = [Writer(server.base, api_key, stop, deadline, keyed=keyed) for _ in range(writers)]
    threads = [threading.Thread(target=w.run, daemon=True) for w in team]
    kill_after = rng.uniform(0.05, 1.5)
    try:
        server.start()
        for thread in threads:
            thread.start()
        time.sleep(kill_after)
        killed_at = datetime.now(UTC)
        server.kill()
        server.start()
        # Let the writers get past the restart (their unanswered writes retried) before stopping.
        time.sleep(0.3)
        stop.set()
        for thread in threads:
            thread.join(timeout=TRIAL_TIMEOUT_S)
    finally:
        stop.set()
        server.stop()
    events = stored_events(data_dir)
    copies = Counter(content.removeprefix(f"{CONTENT_PREFIX} ") for _, content, _ in events)
    content_of = {event_id: content for event_id, content, _ in events}
    ingested_at = {event_id: at for event_id, _, at in events}
    acknowledged = {t: e for w in team for t, e in w.acknowledged.items()}
    return {
        "kill_after_s": round(kill_after, 3),
        "acknowledged": len(acknowledged),
        "lost": sum(
            1 for t, e in acknowledged.items() if content_of.get(e) != f"{CONTENT_PREFIX} {t}"
        ),
        "duplicated": sum(1 for count in copies.values() if count > 1),
        "retried": sum(w.retried for w in team),
        "in_doubt": sum(len(w.in_doubt) for w in team),
        # In-doubt writes the killed server had committed: the retry got the first answer.
        "replayed": sum(
            1
            for w in team
            for t in w.in_doubt
            if ingested_at.get(acknowledged.get(t, ""), killed_at) < killed_at
        ),
        "unexpected_4xx": sum(len(w.refused) for w in team),
        "unfinished_writers": sum(1 for t in threads if t.is_alive()),
        "elapsed_s": round(time.monotonic() - started, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--writers", type=int, default=4, help="concurrent writer threads")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument(
        "--without-keys",
        action="store_true",
        help="control run: retry without Idempotency-Key (shows the duplicates keys prevent)",
    )
    parser.add_argument(
        "--json", type=Path, default=Path("benchmarks/results/crash_durability.json")
    )
    args = parser.parse_args()
    run_start = start_run()
    rng = random.Random(args.seed)
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    print(
        f"{'trial':>5} {'kill at s':>9} {'acked':>6} {'lost':>5} {'dup':>4} {'doubt':>5} {'repl':>4} {'s':>6}"
    )
    for trial in range(1, args.trials + 1):
        with tempfile.TemporaryDirectory(prefix="prme-crash-") as tmp:
            row = {
                "trial": trial,
                **run_trial(Path(tmp), args.writers, rng, keyed=not args.without_keys),
            }
        rows.append(row)
        print(
            f"{trial:5d} {row['kill_after_s']:9.3f} {row['acknowledged']:6d} {row['lost']:5d} "
            f"{row['duplicated']:4d} {row['in_doubt']:5d} {row['replayed']:4d} "
            f"{row['elapsed_s']:6.1f}",
            flush=True,
        )
    total = {
        "trials": len(rows),
        "writers_per_trial": args.writers,
        "idempotency_keys": not args.without_keys,
        "acknowledged": sum(r["acknowledged"] for r in rows),
        "lost": sum(r["lost"] for r in rows),
        "duplicated": sum(r["duplicated"] for r in rows),
        "retried": sum(r["retried"] for r in rows),
        "in_doubt": sum(r["in_doubt"] for r in rows),
        "replayed": sum(r["replayed"] for r in rows),
        "unexpected_4xx": sum(r["unexpected_4xx"] for r in rows),
        "unfinished_writers": sum(r["unfinished_writers"] for r in rows),
        "elapsed_s": round(time.monotonic() - started, 1),
    }
    print(
        f"\n{'trials':>6} {'acknowledged':>12} {'lost':>5} {'duplicated':>10} "
        f"{'in doubt':>8} {'replayed':>8} {'elapsed s':>9}"
    )
    print(
        f"{total['trials']:6d} {total['acknowledged']:12d} {total['lost']:5d} "
        f"{total['duplicated']:10d} {total['in_doubt']:8d} {total['replayed']:8d} "
        f"{total['elapsed_s']:9.1f}"
    )
    write_result(
        args.json,
        "benchmarks.crash_durability",
        {"total": total, "trials": rows},
        parameters={"trials": args.trials, "writers": args.writers, "seed": args.seed},
        started=run_start,
    )


if __name__ == "__main__":
    main()

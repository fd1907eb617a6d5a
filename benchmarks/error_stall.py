"""How long a server error stalls every other request: /health latency while 500s happen.

Run from the repo root: `.venv/bin/python -m benchmarks.error_stall [--quick]
[--json benchmarks/results/error_stall.json]`.

A child process serves the API as `prme serve` does (embedded backend, keyless loopback,
its logging setup), plus one route that fails from deep in a call stack, as a record nested
hundreds of levels did in issue 15. The parent makes one /mcp call first (the MCP SDK used to
install a Rich handler on the root logger at that moment), then probes /health every 50 ms,
first alone and then while the failing route is called every 0.5 s (a call or probe unanswered after 5 s counts as a
timeout). Run it with
`PYTHONPATH` pointing at an older tree to compare. Figures are reported, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.results import start_run, write_result
from tests.harness.cli import free_port
from tests.harness.http import MCP_INITIALIZE

STACK_DEPTH = 200


def serve(port: int, data_dir: Path) -> None:
    """The child: the app as `prme serve` wires it, plus a route failing 200 frames deep."""
    import logging

    import uvicorn

    from prme.backends.embedded.service import open_embedded
    from prme.embedding.hashing import HashingEmbedder
    from prme.http.app import create_app
    from prme.http.auth import AuthPolicy
    from prme.http.dependencies import ApiRuntime

    backend = open_embedded(data_dir, embedder=HashingEmbedder())
    runtime = ApiRuntime(
        engine=backend.engine, credentials=backend.credentials, auth=AuthPolicy(open_tenant="local")
    )
    app = create_app(runtime)

    def fail(depth: int) -> None:
        if depth == 0:
            raise ValueError("failed deep in the stack")
        fail(depth - 1)

    def crash() -> None:
        fail(STACK_DEPTH)

    app.add_api_route("/bench/crash", crash, methods=["POST"])
    try:
        from prme.logs import start_json_logging
    except ImportError:  # a tree from before JSON logging: serve as it did then
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
        return
    listener = start_json_logging(("prme", "uvicorn"))
    logging.getLogger("uvicorn").setLevel(logging.WARNING)
    try:
        uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
    finally:
        listener.stop()


PROBE_TIMEOUT_S = 5.0
TIMED_OUT = 0  # the status noted for a call that got no answer in time


def probe(base: str, seconds: float) -> list[float]:
    """/health latencies in ms, one probe every 50 ms for `seconds`; a probe that times out
    counts as the timeout."""
    latencies: list[float] = []
    with httpx.Client(timeout=PROBE_TIMEOUT_S) as client:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            started = time.perf_counter()
            with contextlib.suppress(httpx.TimeoutException):
                client.get(f"{base}/health")
            latencies.append((time.perf_counter() - started) * 1000)
            time.sleep(0.05)
    return latencies


def crash_every(base: str, interval: float, stop: threading.Event, statuses: list[int]) -> None:
    with httpx.Client(timeout=PROBE_TIMEOUT_S) as client:
        while not stop.is_set():
            try:
                statuses.append(client.post(f"{base}/bench/crash").status_code)
            except httpx.TimeoutException:
                statuses.append(TIMED_OUT)
            stop.wait(interval)


def summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "probes": len(ordered),
        "timed_out": sum(1 for ms in ordered if ms >= PROBE_TIMEOUT_S * 1000),
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
        "max_ms": round(ordered[-1], 1),
    }


def measure(seconds: float) -> dict[str, Any]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data_dir:
        command = [sys.executable, "-m", "benchmarks.error_stall", "--serve", str(port), data_dir]
        with subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        ) as child:
            try:
                wait_until_up(base)
                mcp = httpx.post(
                    f"{base}/mcp",
                    json=MCP_INITIALIZE,
                    headers={"accept": "application/json, text/event-stream"},
                )
                quiet = probe(base, seconds / 3)
                stop = threading.Event()
                statuses: list[int] = []
                crasher = threading.Thread(target=crash_every, args=(base, 0.5, stop, statuses))
                crasher.start()
                loaded = probe(base, seconds)
                stop.set()
                crasher.join()
            finally:
                child.terminate()
                _, log = child.communicate(timeout=120)
    return {
        "mcp_status": mcp.status_code,
        "errors_sent": len(statuses),
        "error_statuses": sorted(set(statuses)),
        "health_quiet": summary(quiet),
        "health_during_errors": summary(loaded),
        "stderr_bytes_per_error": round(len(log.encode()) / max(len(statuses), 1)),
    }


def wait_until_up(base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("the server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/error_stall.json"))
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "DATA_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), Path(args.serve[1]))
        return
    run_start = start_run()
    seconds = 6.0 if args.quick else 15.0
    result = measure(seconds=seconds)
    print(f"errors sent: {result['errors_sent']} (statuses {result['error_statuses']})")
    print(f"{'/health':<22}{'probes':>8}{'timeouts':>10}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}")
    for phase in ("health_quiet", "health_during_errors"):
        row = result[phase]
        print(
            f"{phase:<22}{row['probes']:>8}{row['timed_out']:>10}"
            f"{row['p50_ms']:>10}{row['p95_ms']:>10}{row['max_ms']:>10}"
        )
    print(f"stderr bytes per error: {result['stderr_bytes_per_error']}")
    write_result(
        args.json,
        "benchmarks.error_stall",
        result,
        parameters={"quick": args.quick, "seconds_per_phase": seconds},
        started=run_start,
    )


if __name__ == "__main__":
    main()

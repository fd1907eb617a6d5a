"""A real `prme serve` subprocess on a free loopback port over a temporary data directory,
with an operator key made before it starts (so it requires keys), and a relay in front of
it that loses chosen answers, for the client tests."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.model.enums import CredentialRole
from tests.harness.cli import free_port, prme_env
from tests.harness.engines import TOKEN_COUNTER

# The tenant of a server run on its default settings, as the embedded client's.
LOCAL_TENANT = "local"


@dataclass(frozen=True)
class LiveServer:
    url: str
    operator_key: str
    data_dir: Path


def _operator_key(data_dir: Path) -> str:
    backend = open_embedded(data_dir, embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    try:
        issued = backend.credentials.create(
            tenant_id=LOCAL_TENANT, owner_id=None, role=CredentialRole.OPERATOR
        )
    finally:
        backend.close()
    return issued.secret


@contextmanager
def live_server(
    data_dir: Path, *, ready_timeout_s: float = 60, keyless: bool = False
) -> Iterator[LiveServer]:
    """`prme serve` on `data_dir`, answering /health, until the block ends. `keyless`: no key
    is made first, so the server starts in keyless local mode (operator_key is empty)."""
    key = "" if keyless else _operator_key(data_dir)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "prme.cli", "serve", "--data-dir", str(data_dir)]
    with subprocess.Popen(
        [*command, "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=prme_env(),
    ) as proc:
        try:
            _wait_until_healthy(proc, url, ready_timeout_s)
            yield LiveServer(url, key, data_dir)
        finally:
            proc.terminate()
            proc.communicate(timeout=15)


def _wait_until_healthy(proc: subprocess.Popen[str], url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prme serve exited early: {proc.communicate()[1][-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("prme serve did not answer /health in time")


@dataclass
class Relayed:
    method: str
    path: str
    idempotency_key: str | None
    status: int


class _Relay(BaseHTTPRequestHandler):
    server: _RelayServer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads `relayed` instead."""

    def _relay(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        forwarded = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        answer = httpx.request(
            self.command, f"{self.server.target}{self.path}", content=body, headers=forwarded
        )
        path = self.path.split("?", 1)[0]
        status, content = answer.status_code, answer.content
        headers = {"Content-Type": answer.headers.get("Content-Type", "application/json")}
        if path in self.server.fail_once_after_forwarding:
            # The write happened; its answer is lost behind a gateway that says "not now".
            self.server.fail_once_after_forwarding.discard(path)
            status, content = 503, b'{"detail": "Service busy"}'
            headers = {"Content-Type": "application/json", "Retry-After": "0"}
        key = self.headers.get("Idempotency-Key")
        self.server.relayed.append(Relayed(self.command, path, key, status))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    # http.server finds a method's handler by this name.
    do_GET = do_POST = do_PUT = do_DELETE = _relay  # noqa: N815


HOP_HEADERS = {"host", "content-length", "connection", "accept-encoding"}


class _RelayServer(ThreadingHTTPServer):
    def __init__(self, target: str, fail_once_after_forwarding: set[str]) -> None:
        super().__init__(("127.0.0.1", 0), _Relay)
        self.target = target
        self.fail_once_after_forwarding = fail_once_after_forwarding
        self.relayed: list[Relayed] = []


@contextmanager
def flaky_relay(target: str, *, fail_once_after_forwarding: set[str]) -> Iterator[_RelayServer]:
    """An HTTP relay to `target` that, for each path listed, forwards the first request and
    then answers it 503 (Retry-After: 0) instead of the server's answer."""
    relay = _RelayServer(target, set(fail_once_after_forwarding))
    thread = threading.Thread(target=relay.serve_forever, daemon=True)
    thread.start()
    try:
        yield relay
    finally:
        relay.shutdown()
        relay.server_close()
        thread.join(timeout=5)

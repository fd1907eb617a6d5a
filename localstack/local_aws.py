"""The local AWS on loopback and its start and stop: moto's server (DynamoDB, SQS) and OpenSearch.

`python -m localstack.local_aws up` prints the endpoints as shell exports; `down` stops
everything it started. Both are idempotent: state lives in `localstack/.state/`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
STATE = HERE / ".state"
MOTO_PORT = int(os.environ.get("PRME_LOCAL_MOTO_PORT", "4566"))
OPENSEARCH_PORT = int(os.environ.get("PRME_LOCAL_OPENSEARCH_PORT", "9250"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _read_pid(name: str) -> int | None:
    path = STATE / f"{name}.pid"
    if not path.exists():
        return None
    pid = int(path.read_text().strip())
    return pid if _alive(pid) else None


def _wait_http(url: str, seconds: float, pid: int, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            raise SystemExit(f"process exited during startup; log tail:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback only
                if response.status < 500:
                    return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"{url} not ready after {seconds:.0f}s; log tail:\n{_tail(log)}")


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


def _start(name: str, argv: list[str], ready_url: str, ready_s: float) -> None:
    if _read_pid(name) is not None:
        return
    STATE.mkdir(parents=True, exist_ok=True)
    log = STATE / f"{name}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(  # noqa: S603 - fixed argv
            argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    (STATE / f"{name}.pid").write_text(str(proc.pid))
    _wait_http(ready_url, ready_s, proc.pid, log)


def endpoints() -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{MOTO_PORT}",
        "PRME_OPENSEARCH_URL": f"http://127.0.0.1:{OPENSEARCH_PORT}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def up(with_opensearch: bool) -> None:
    moto = Path(sys.executable).with_name("moto_server")
    _start(
        "moto",
        [str(moto), "-H", "127.0.0.1", "-p", str(MOTO_PORT)],
        f"http://127.0.0.1:{MOTO_PORT}/moto-api/",
        30,
    )
    if with_opensearch:
        _start(
            "opensearch",
            [
                "bash",
                str(HERE / "opensearch" / "run.sh"),
                str(STATE / "opensearch-home"),
                str(OPENSEARCH_PORT),
                str(OPENSEARCH_PORT + 100),
            ],
            f"http://127.0.0.1:{OPENSEARCH_PORT}/_cluster/health?wait_for_status=yellow&timeout=1s",
            600,
        )
    for key, value in endpoints().items():
        if key == "PRME_OPENSEARCH_URL" and not with_opensearch:
            continue
        print(f"export {key}={value}")


def down() -> None:
    for name in ("opensearch", "moto"):
        pid = _read_pid(name)
        if pid is not None:
            os.killpg(pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)
        (STATE / f"{name}.pid").unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("command", choices=["up", "down", "endpoints"])
    parser.add_argument("--no-opensearch", action="store_true")
    args = parser.parse_args()
    if args.command == "up":
        up(with_opensearch=not args.no_opensearch)
    elif args.command == "down":
        down()
    else:
        print(json.dumps(endpoints()))


if __name__ == "__main__":
    main()

"""The `prme` command run as users run it: key management, serve (bind rule, logs, keyless
mode ending), and clean one-line failures with documented exit codes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from prme.client import MemoryClient
from prme.settings import Settings
from tests.harness.cli import free_port, prme, prme_env, run_prme


@pytest.mark.slow
def test_keys_create_list_revoke(tmp_path: Path) -> None:
    created = prme(tmp_path, "keys", "create", "--user-id", "alice", "--label", "laptop")
    assert created.returncode == 0, created.stderr
    fields = dict(line.split(": ", 1) for line in created.stdout.splitlines())
    assert fields["user_id"] == "alice"
    assert fields["api_key"].startswith("prme_")
    listed = prme(tmp_path, "keys", "list")
    assert fields["key_id"] in listed.stdout
    assert fields["api_key"] not in listed.stdout  # only hashes are kept
    assert "active" in listed.stdout
    assert prme(tmp_path, "keys", "revoke", fields["key_id"]).returncode == 0
    assert "revoked" in prme(tmp_path, "keys", "list").stdout
    assert prme(tmp_path, "keys", "create").returncode == 2  # needs --user-id or --operator


@pytest.mark.slow
def test_serve_refuses_network_bind_without_a_key(tmp_path: Path) -> None:
    refused = prme(tmp_path, "serve", "--host", "0.0.0.0", "--port", str(free_port()))  # noqa: S104
    assert refused.returncode == 2
    assert refused.stderr.startswith("prme: error: refusing to bind 0.0.0.0: no API key exists")
    assert len(refused.stderr.splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("log_level", [None, "warning"])
def test_serve_on_loopback_answers_http(tmp_path: Path, log_level: str | None) -> None:
    port = free_port()
    # Shared options after the subcommand, where users type them
    levels = [] if log_level is None else ["--log-level", log_level]
    command = ["serve", "--data-dir", str(tmp_path), "--port", str(port), *levels]
    with subprocess.Popen(
        [sys.executable, "-m", "prme.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=prme_env(),
    ) as proc:
        err = _exercise_server(proc, f"http://127.0.0.1:{port}", tmp_path)
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    store = [line for line in lines if line.get("route") == "/v1/store"]
    if log_level is None:
        # At the default level (info), one JSON line per request, without content
        assert len(store) == 2, err
        assert (store[0]["status"], store[0]["tenant_id"], store[0]["role"]) == (
            200,
            "local",
            "operator",
        )
        assert store[1]["status"] == 401
    else:
        assert store == [], err
    # The server says when the first key ends keyless mode, at either level
    ended = [line for line in lines if line["message"].startswith("Keyless local mode ended")]
    assert len(ended) == 1, err
    assert ended[0]["level"] == "WARNING"


def _exercise_server(proc: subprocess.Popen[str], base: str, data_dir: Path) -> str:
    """Store keylessly, create the first key from the CLI, see keyless calls refused; the
    server's stderr (its log) once it has stopped."""
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        stored = httpx.post(
            f"{base}/v1/store", json={"content": "served verbatim", "user_id": "alice"}
        ).json()
        assert stored["processing_status"] == "completed"
        assert httpx.get(f"{base}/openapi.json").status_code == 200
        created = prme(data_dir, "keys", "create", "--user-id", "alice")
        assert created.returncode == 0, created.stderr
        assert "keyless `prme serve` running on this data directory now requires a key" in (
            created.stderr
        )
        refused = httpx.post(f"{base}/v1/store", json={"content": "x", "user_id": "alice"})
        assert refused.status_code == 401
        assert proc.poll() is None
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    assert "curl" in out  # serve prints how to call it
    assert "verbatim" not in err
    return err


@pytest.mark.slow
def test_expected_failures_are_one_line_and_a_documented_exit_code(tmp_path: Path) -> None:
    # The real entry point, for one runtime failure and one bad setting (tests/unit/test_cli.py
    # has every case in-process)
    failures = [
        (
            ["--data-dir", str(tmp_path), "keys", "revoke", "nope"],
            {},
            1,
            "prme: error: no API key has that key_id; `prme keys list` shows them\n",
        ),
        (
            ["keys", "list", "--data-dir", str(tmp_path)],
            {"PRME_EMBEDDER": "word2vec-secret-value"},
            2,
            "prme: error: invalid setting PRME_EMBEDDER: Input should be 'minilm', 'hashing' or"
            " 'bedrock'; fix that environment variable\n",
        ),
    ]
    for argv, env, code, line in failures:
        done = run_prme(*argv, env=env)
        assert (done.returncode, done.stderr, done.stdout) == (code, line, ""), argv


@pytest.mark.slow
def test_serve_on_a_port_in_use_fails_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = prme(tmp_path, "serve", "--port", str(port))
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"prme: error: could not serve at http://127.0.0.1:{port} (the log line above says"
        " why); choose another --port or --host"
    )
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_bootstrap_against_the_local_aws_is_idempotent(
    aws_endpoint: str, opensearch_url: str, aws_names: Any, tmp_path: Path
) -> None:
    env = {
        "PRME_TABLE_NAME": aws_names.table,
        "PRME_QUEUE_PREFIX": aws_names.queue_prefix,
        "PRME_OPENSEARCH_INDEX_ALIAS": aws_names.index_alias,
        "PRME_OPENSEARCH_URL": opensearch_url,
        "AWS_ENDPOINT_URL": aws_endpoint,
    }
    first = prme(tmp_path, "bootstrap", env=env)
    assert first.returncode == 0, first.stderr
    assert f"table {aws_names.table}: created" in first.stdout
    assert f"index alias {aws_names.index_alias}: created" in first.stdout
    second = prme(tmp_path, "bootstrap", env=env)
    assert second.returncode == 0, second.stderr
    assert f"table {aws_names.table}: exists" in second.stdout
    assert f"index alias {aws_names.index_alias}: exists" in second.stdout
    # Keys work against the table too.
    created = prme(tmp_path, "keys", "create", "--operator", env={**env, "PRME_BACKEND": "aws"})
    assert created.returncode == 0, created.stderr
    listed = prme(tmp_path, "keys", "list", env={**env, "PRME_BACKEND": "aws"})
    assert "operator" in listed.stdout


@pytest.mark.slow
def test_reindex_all_users_walks_every_owner_of_the_tenant_with_progress(tmp_path: Path) -> None:
    from prme.client import MemoryClient
    from prme.settings import Settings

    # Given three owners in tenant acme (one with enough records for several progress lines)
    # and another tenant's owner in the same store
    records = {"bob": 3, "alice": 130, "carol": 1}
    with MemoryClient(tmp_path, settings=Settings(embedder="hashing", tenant_id="acme")) as c:
        for user_id, count in records.items():
            for i in range(count):
                c.store(f"record {i} of {user_id}", user_id=user_id)
    with MemoryClient(tmp_path, settings=Settings(embedder="hashing", tenant_id="other")) as c:
        c.store("not acme's", user_id="dave")

    # When every owner of acme is reindexed
    done = prme(tmp_path, "reindex", "--all-users", env={"PRME_TENANT_ID": "acme"})

    # Then each owner is reindexed once, in id order, and nobody of the other tenant
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "user_id=alice reindexed=130 batches=2",
        "user_id=bob reindexed=3 batches=1",
        "user_id=carol reindexed=1 batches=1",
        "owners=3 reindexed=134",
    ]
    progress = done.stderr.splitlines()
    assert progress[0] == "tenant acme: 3 owners to reindex"
    assert "[1/3] alice: reindexed 128/130 records" in progress
    assert "[1/3] alice: reindexed 130/130 records" in progress
    assert "[3/3] carol: reindexed 1/1 records" in progress
    assert "dave" not in done.stdout + done.stderr

    # and a resumed run takes only the owners after the one named.
    resumed = prme(
        tmp_path, "reindex", "--all-users", "--start-after", "alice", env={"PRME_TENANT_ID": "acme"}
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[-1] == "owners=2 reindexed=4"
    assert prme(tmp_path, "reindex", "--user-id", "bob", "--all-users").returncode == 2
    assert prme(tmp_path, "reindex", "--start-after", "alice", "--user-id", "bob").returncode == 2


@pytest.mark.slow
def test_list_delete_and_stats_as_typed(tmp_path: Path) -> None:
    with MemoryClient(tmp_path, settings=Settings(embedder="hashing")) as memory:
        event_id = memory.store("Ring \x07 the \x1b[5m bell", user_id="alice").event_id
    listed = prme(tmp_path, "list", "--events", "--user-id", "alice")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:2] == [event_id, "user"]
    assert listed.stdout.rstrip().endswith("Ring \\x07 the \\x1b[5m bell")
    deleted = prme(tmp_path, "delete", event_id, "--user-id", "alice", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.startswith(f"deleted event {event_id}: 1 memory nodes")
    stats = prme(tmp_path, "stats", "--user-id", "alice", "--json")
    assert json.loads(stats.stdout)["events"] == 0

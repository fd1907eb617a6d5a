"""Run a Lambda handler as the stack deploys it: under credentials that hold exactly its role's
statements from the synthesized template, against a moto server that enforces IAM.

The IAM-enforcing server (localstack/iam_moto.py) is a second moto, started once per test run
on its own port and shared by xdist workers; the shared moto on 4566 stays IAM-free. Its free
calls create one administrator; each test then creates, as that administrator, its own table,
queues and one IAM user per function.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.harness.opensearch_iam_proxy import AuthorizingProxy
from tests.harness.stack_template import LOCAL_REGION, LocalBinding, StackTemplate

REPO_ROOT = Path(__file__).resolve().parents[2]
# The administrator's CreateUser, PutUserPolicy and CreateAccessKey; every later call is checked.
FREE_CALLS = 3
ADMIN_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}

# What a function is given here that differs from the template, and why. Nothing else is.
LOCAL_OVERRIDES: dict[str, str] = {
    # Bedrock cannot be reached here: the local embedder and extractor stand in for it.
    "PRME_EMBEDDER": "hashing",
    "PRME_EXTRACTOR": "rules",
}
# PRME_OPENSEARCH_URL is not an override: LocalBinding binds it, like the table and queue names,
# to the authorizing proxy in front of the local node (tests/harness/opensearch_iam_proxy.py).


@dataclass(frozen=True)
class IamServer:
    url: str
    admin_key_id: str
    admin_secret: str

    def client(self, service: str, key_id: str | None = None, secret: str | None = None) -> Any:
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.url,
            region_name=LOCAL_REGION,
            aws_access_key_id=key_id or self.admin_key_id,
            aws_secret_access_key=secret or self.admin_secret,
        )


_STARTED: list[subprocess.Popen[bytes]] = []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _start_server(root: Path, watch_pid: int) -> IamServer:
    port = _free_port()
    log = root / "iam-moto.log"
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(FREE_CALLS)}
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "localstack.iam_moto", str(port), str(watch_pid)],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    # It outlives this worker's use of it (other workers share it): kept referenced so that
    # it is not reported as a leaked child; it exits with the run's owner (see iam_moto.py).
    _STARTED.append(process)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            # Not a service call: it spends none of the free calls.
            with urllib.request.urlopen(f"{url}/moto-api/", timeout=2):  # noqa: S310 - loopback
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"IAM-enforcing moto did not start; see {log}") from None
            time.sleep(0.1)
    (root / "iam-moto.pid").write_text(str(process.pid))
    iam = IamServer(url, "free", "free").client("iam")
    iam.create_user(UserName="prme-test-admin")
    iam.put_user_policy(
        UserName="prme-test-admin", PolicyName="admin", PolicyDocument=json.dumps(ADMIN_POLICY)
    )
    key = iam.create_access_key(UserName="prme-test-admin")["AccessKey"]
    return IamServer(url, key["AccessKeyId"], key["SecretAccessKey"])


def shared_server(root: Path, watch_pid: int) -> IamServer:
    """One server per test run: the first worker starts it, the others read the state file."""
    root.mkdir(parents=True, exist_ok=True)
    state = root / "iam-moto.json"
    with (root / "iam-moto.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if state.exists():
            saved = json.loads(state.read_text())
            if _alive(saved["pid"]):
                return IamServer(saved["url"], saved["admin_key_id"], saved["admin_secret"])
        server = _start_server(root, watch_pid)
        pid = int((root / "iam-moto.pid").read_text())
        state.write_text(json.dumps({**server.__dict__, "pid": pid}))
        return server


def stop_shared_server(root: Path) -> None:
    state = root / "iam-moto.json"
    if state.exists():
        pid = json.loads(state.read_text())["pid"]
        if _alive(pid):
            os.kill(pid, 15)
        state.unlink()


@pytest.fixture(scope="session")
def iam_aws(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> IamServer:
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base
    # The server exits with the pytest process that owns the run (the xdist controller), in
    # case the run ends without reaching the session-finish hook.
    owner = os.getppid() if worker_id != "master" else os.getpid()
    return shared_server(shared / "iam-moto", owner)


@pytest.fixture(scope="session")
def opensearch_iam_proxy(
    opensearch_url: str, stack_template: StackTemplate
) -> Generator[AuthorizingProxy, None, None]:
    """This worker's authorizing proxy in front of the local OpenSearch node."""
    proxy = search_proxy(stack_template, opensearch_url)
    yield proxy
    proxy.close()


def search_proxy(stack: StackTemplate, opensearch_url: str) -> AuthorizingProxy:
    reference = LocalBinding("table", "prefix", "alias", opensearch_url)
    return AuthorizingProxy(opensearch_url, stack.search_domain_arn(reference))


def user_policy(statements: list[dict[str, Any]]) -> dict[str, Any]:
    """The role's statements as the user's policy, unchanged: the server checks transactions
    and batches by the actions AWS checks (see localstack/iam_moto.py), so no moto-only action
    name is added."""
    return {"Version": "2012-10-17", "Statement": statements}


@dataclass
class IamDeployment:
    """One test's resources on the IAM-enforcing moto and one IAM user per function."""

    server: IamServer
    stack: StackTemplate
    binding: LocalBinding
    queue_urls: dict[str, str]
    proxy: AuthorizingProxy
    keys: dict[str, tuple[str, str]] = field(default_factory=dict)

    def admin(self, service: str) -> Any:
        return self.server.client(service)

    def statements(self, function: str) -> list[dict[str, Any]]:
        return self.stack.role_statements(function, self.binding)

    def create_user(
        self, function: str, statements: list[dict[str, Any]] | None = None
    ) -> tuple[str, str]:
        """A user holding `function`'s role statements (or the given ones); its access key."""
        iam = self.admin("iam")
        user = f"{function}-{uuid.uuid4().hex[:10]}"
        iam.create_user(UserName=user)
        policy = user_policy(self.statements(function) if statements is None else statements)
        iam.put_user_policy(UserName=user, PolicyName="role", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=user)["AccessKey"]
        # The same statements authorize the user's OpenSearch requests (the proxy's check).
        self.proxy.grant(key["AccessKeyId"], policy["Statement"])
        return key["AccessKeyId"], key["SecretAccessKey"]

    def environment(self, function: str, key: tuple[str, str]) -> dict[str, str]:
        """What the function's process sees: the template's environment, the overrides above,
        the user's credentials and the IAM-enforcing endpoint."""
        return {
            **self.stack.environment(function, self.binding),
            **LOCAL_OVERRIDES,
            "AWS_ENDPOINT_URL": self.server.url,
            "AWS_ACCESS_KEY_ID": key[0],
            "AWS_SECRET_ACCESS_KEY": key[1],
            "AWS_DEFAULT_REGION": self.binding.region,
            "AWS_REGION": self.binding.region,
        }


def new_container() -> None:
    """Each entry point builds Powertools' logger, tracer and metrics from the environment when
    imported, and its backend on the first call: a new role is a new container, so both are
    built again from the current environment."""
    import importlib

    from functions import (
        api,
        extractor,
        index_setup,
        ingest_consumer,
        maintenance,
        materializer,
        runtime,
        work_consumer,
    )

    if runtime.backend.cache_info().currsize:
        runtime.backend().close()
    # Every module that took names from `runtime` when imported, so none keeps the old ones.
    modules = (
        runtime,
        work_consumer,
        api,
        materializer,
        extractor,
        ingest_consumer,
        maintenance,
        index_setup,
    )
    for module in modules:
        importlib.reload(module)


def release_container() -> None:
    """The backend closed and forgotten; the next test's `new_container` builds its own."""
    from functions import api, ingest_consumer, runtime

    if runtime.backend.cache_info().currsize:
        runtime.backend().close()
    for cached in (
        runtime.settings,
        runtime.backend,
        api._adapter,
        ingest_consumer._dead_letter_url,
    ):
        cached.cache_clear()


def enter_function(monkeypatch: pytest.MonkeyPatch, environment: Mapping[str, str]) -> None:
    """Replace the process environment's PRME, Powertools and AWS settings with `environment`."""
    prefixes = ("PRME_", "POWERTOOLS_", "AWS_")
    for key in list(os.environ):
        if key.startswith(prefixes):
            monkeypatch.delenv(key)
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    new_container()


def iam_deployment(
    server: IamServer,
    stack: StackTemplate,
    opensearch_url: str,
    proxy: AuthorizingProxy,
    dimension: int = 64,
) -> Generator[IamDeployment, None, None]:
    """Table, queues (as `prme bootstrap` creates them) and index for one test; functions reach
    OpenSearch through `proxy`, the harness directly."""
    from prme.backends.aws.bootstrap import (
        ensure_index,
        ensure_queues,
        ensure_table,
        ensure_upload_bucket,
    )
    from prme.backends.aws.opensearch_index import build_opensearch_client

    name = f"prme-iam-{uuid.uuid4().hex[:10]}"
    binding = LocalBinding(
        table_name=name,
        queue_prefix=name,
        index_alias=name,
        opensearch_url=proxy.url,
        upload_bucket=name,
    )
    ensure_table(server.client("dynamodb"), name)
    ensure_upload_bucket(server.client("s3"), name)
    urls = ensure_queues(server.client("sqs"), name)
    opensearch = build_opensearch_client(opensearch_url, auth="none", region=None)
    ensure_index(opensearch, name, dimension)
    try:
        yield IamDeployment(server, stack, binding, urls, proxy)
    finally:
        release_container()
        opensearch.indices.delete(index=f"{name}-v*", ignore_unavailable=True)
        opensearch.close()

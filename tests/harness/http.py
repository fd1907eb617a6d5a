"""The HTTP API under test on the embedded and aws backends: keys for two owners, an operator
and another tenant's owner, and a TestClient over the real app."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from prme.backends.clock import ManualClock
from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.credentials import CredentialService
from prme.engine.service import MemoryEngine
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.model.enums import CredentialRole
from prme.operations import McpToolSet
from prme.ports import UploadStore
from tests.harness.aws import aws_harness
from tests.harness.engines import TOKEN_COUNTER
from tests.harness.uploads import s3_client

TENANT = "acme"
# The first request of an MCP session over streamable HTTP, and the headers it needs.
MCP_HEADERS = {"accept": "application/json, text/event-stream"}
MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


@dataclass
class Api:
    client: TestClient
    credentials: CredentialService
    alice: dict[str, str]
    bob: dict[str, str]
    operator: dict[str, str]
    other_tenant: dict[str, str]


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@contextmanager
def api_app(
    request: pytest.FixtureRequest, tmp_path: Path, *, mcp_tools: McpToolSet = "default"
) -> Iterator[tuple[FastAPI, CredentialService, dict[str, str]]]:
    """The real app over the backend `request.param` names ("embedded" or "aws"), with the
    secrets of four keys: alice, bob, an operator and another tenant's alice ("other"), and
    `mcp_tools` listed at /mcp."""
    close: Callable[[], None] | None = None
    if request.param == "embedded":
        backend = open_embedded(
            tmp_path / "data",
            embedder=HashingEmbedder(),
            clock=ManualClock(),
            token_counter=TOKEN_COUNTER,
        )
        engine, creds, close = backend.engine, backend.credentials, backend.close
    else:
        h = aws_harness(*request.getfixturevalue("aws_resources"))
        # Imports by upload need a bucket: one per test process, as a deployment has one.
        engine = MemoryEngine(replace(h.engine.deps, uploads=_process_upload_store(h.clock)))
        creds = CredentialService(h.ledger, h.clock)  # type: ignore[arg-type]
    keys = {
        "alice": creds.create(tenant_id=TENANT, owner_id="alice", role=CredentialRole.OWNER).secret,
        "bob": creds.create(tenant_id=TENANT, owner_id="bob", role=CredentialRole.OWNER).secret,
        "operator": creds.create(
            tenant_id=TENANT, owner_id=None, role=CredentialRole.OPERATOR
        ).secret,
        "other": creds.create(
            tenant_id="globex", owner_id="alice", role=CredentialRole.OWNER
        ).secret,
    }
    try:
        yield (
            create_app(
                ApiRuntime(engine=engine, credentials=creds, auth=AuthPolicy(), mcp_tools=mcp_tools)
            ),
            creds,
            keys,
        )
    finally:
        if close is not None:
            close()


@pytest.fixture(params=["embedded", "aws"])
def api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    with api_app(request, tmp_path) as (app, creds, keys), TestClient(app) as client:
        yield Api(
            client,
            creds,
            bearer(keys["alice"]),
            bearer(keys["bob"]),
            bearer(keys["operator"]),
            bearer(keys["other"]),
        )


@cache
def _process_bucket() -> tuple[Any, str]:
    from prme.backends.aws.bootstrap import ensure_upload_bucket

    client = s3_client(os.environ["AWS_ENDPOINT_URL"])
    bucket = f"prme-api-{uuid.uuid4().hex[:12]}"
    ensure_upload_bucket(client, bucket)
    return client, bucket


def _process_upload_store(clock: ManualClock) -> UploadStore:
    from prme.backends.aws.s3_upload_store import S3UploadStore

    client, bucket = _process_bucket()
    return S3UploadStore(client, bucket, clock)

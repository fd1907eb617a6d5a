"""The embedded server's upload route: the file streamed to disk past the body limit, bounded
by the size its import was opened with, owner-scoped, and nothing kept from a failed upload."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from prme.backends.clock import ManualClock
from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.import_uploads import open_upload_import, start_upload_import
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.model.enums import CredentialRole
from prme.model.imports import ImportStatus
from prme.model.records import OwnerKey
from prme.model.uploads import UploadRequest
from tests.harness.engines import TOKEN_COUNTER
from tests.harness.http import bearer

ALICE = OwnerKey(tenant_id="acme", owner_id="alice")
# Far below the file: the upload route must not go through the buffered body limit.
BODY_LIMIT = 64 * 1024
FILE = b"".join(
    json.dumps({"content": f"streamed note {i} " + "x" * 900}).encode() + b"\n" for i in range(300)
)


@pytest.fixture
def served(
    tmp_path: Path,
) -> Iterator[tuple[TestClient, EmbeddedBackend, dict[str, dict[str, str]]]]:
    backend = open_embedded(
        tmp_path / "data",
        embedder=HashingEmbedder(),
        clock=ManualClock(),
        token_counter=TOKEN_COUNTER,
    )
    creds = backend.credentials
    keys = {
        name: bearer(
            creds.create(tenant_id="acme", owner_id=name, role=CredentialRole.OWNER).secret
        )
        for name in ("alice", "bob")
    }
    runtime = ApiRuntime(
        engine=backend.engine, credentials=creds, auth=AuthPolicy(), max_body_bytes=BODY_LIMIT
    )
    with TestClient(create_app(runtime)) as client:
        yield client, backend, keys
    backend.close()


def pieces(data: bytes, size: int = 16_384) -> Iterator[bytes]:
    """A body sent in pieces without a Content-Length, as a streaming client sends it."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def leftovers(tmp_path: Path) -> list[Path]:
    return [
        p for p in (tmp_path / "data" / "uploads").rglob("*") if p.suffix != ".json" and p.is_file()
    ]


def test_a_file_larger_than_the_body_limit_streams_to_its_import(
    served: tuple[TestClient, EmbeddedBackend, dict[str, dict[str, str]]],
) -> None:
    client, backend, keys = served
    deps = backend.engine.deps
    job, target = open_upload_import(deps, ALICE, UploadRequest(size_bytes=len(FILE)))
    assert target.send_api_key and target.url == f"/v1/imports/{job.import_id}/upload"

    answer = client.put(target.url, content=pieces(FILE), headers=keys["alice"])

    assert answer.status_code == 200, answer.text
    assert answer.json() == {"import_id": job.import_id, "size_bytes": len(FILE)}
    done = start_upload_import(deps, ALICE, job.import_id)
    assert (done.status, done.items_accepted) == (ImportStatus.COMPLETED, 300)


@pytest.mark.parametrize(
    ("body", "status"), [(FILE + b"\n", 413), (FILE[:-1], 422)], ids=["longer", "shorter"]
)
def test_a_body_of_another_size_is_refused_and_nothing_is_kept(
    served: tuple[TestClient, EmbeddedBackend, dict[str, dict[str, str]]],
    tmp_path: Path,
    body: bytes,
    status: int,
) -> None:
    client, backend, keys = served
    deps = backend.engine.deps
    job, target = open_upload_import(deps, ALICE, UploadRequest(size_bytes=len(FILE)))

    streamed = client.put(target.url, content=pieces(body), headers=keys["alice"])
    declared = client.put(target.url, content=body, headers=keys["alice"])

    assert (streamed.status_code, declared.status_code) == (status, status)
    assert b"streamed note" not in streamed.content + declared.content
    assert deps.uploads is not None and deps.uploads.uploaded_size(ALICE, job.import_id) is None
    assert leftovers(tmp_path) == []


def test_only_the_owner_with_a_key_may_upload(
    served: tuple[TestClient, EmbeddedBackend, dict[str, dict[str, str]]],
) -> None:
    client, backend, keys = served
    deps = backend.engine.deps
    job, target = open_upload_import(deps, ALICE, UploadRequest(size_bytes=len(FILE)))

    assert client.put(target.url, content=FILE).status_code == 401
    assert client.put(target.url, content=FILE, headers=keys["bob"]).status_code == 404
    named = client.put(target.url, content=FILE, headers=keys["bob"], params={"user_id": "alice"})
    assert named.status_code == 403
    assert deps.uploads is not None and deps.uploads.uploaded_size(ALICE, job.import_id) is None

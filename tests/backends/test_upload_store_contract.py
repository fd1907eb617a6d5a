"""The `UploadStore` contract on every backend: the fake, the embedded directory, and S3 on the
local AWS through a real HTTP PUT to the presigned URL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from prme.errors import NotFoundError
from prme.model.records import OwnerKey
from prme.model.uploads import UploadTarget
from tests.harness.uploads import (
    UploadBackend,
    embedded_uploads,
    memory_uploads,
    s3_uploads,
    upload_bucket,
)

ALICE = OwnerKey(tenant_id="acme", owner_id="alice")
BOB = OwnerKey(tenant_id="acme", owner_id="bob")
OTHER_TENANTS_ALICE = OwnerKey(tenant_id="globex", owner_id="alice")
# Three lines of NDJSON, more than one 64 KiB piece in all, with a multi-byte character.
FILE = b"".join((b'{"content": "line %d \xc3\xa9 ' % i) + b"x" * 30_000 + b'"}\n' for i in range(3))


@pytest.fixture(params=["memory", "embedded", "aws"])
def uploads(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[UploadBackend]:
    if request.param == "memory":
        yield memory_uploads()
    elif request.param == "embedded":
        yield embedded_uploads(tmp_path / "uploads")
    else:
        with upload_bucket(request.getfixturevalue("aws_endpoint")) as (client, bucket):
            yield s3_uploads(client, bucket)


def open_upload(
    uploads: UploadBackend, owner: OwnerKey, import_id: str, size: int = len(FILE)
) -> UploadTarget:
    expires = uploads.clock.now() + timedelta(hours=1)
    return uploads.store.create_upload(owner, import_id, size_bytes=size, expires_at=expires)


def test_an_upload_reads_back_byte_for_byte_in_any_range(uploads: UploadBackend) -> None:
    import_id = str(uuid.uuid4())
    target = open_upload(uploads, ALICE, import_id)
    assert uploads.store.uploaded_size(ALICE, import_id) is None

    assert uploads.send(ALICE, import_id, target, FILE) == "stored"

    store = uploads.store
    assert store.uploaded_size(ALICE, import_id) == len(FILE)
    for start, end in ((0, len(FILE)), (0, 1), (7, 30_010), (len(FILE) - 1, len(FILE))):
        assert store.read_range(ALICE, import_id, start, end) == FILE[start:end]
    assert store.read_range(ALICE, import_id, 5, 5) == b""
    with pytest.raises(NotFoundError):
        store.read_range(ALICE, import_id, len(FILE) - 10, len(FILE) + 1)


def test_the_target_says_how_to_send_the_declared_size_until_when(
    uploads: UploadBackend,
) -> None:
    expires = uploads.clock.now() + timedelta(minutes=30)
    target = uploads.store.create_upload(
        ALICE, str(uuid.uuid4()), size_bytes=1234, expires_at=expires
    )
    assert (target.method, target.size_bytes, target.expires_at) == ("PUT", 1234, expires)
    # A presigned URL carries its own credential: a bearer key beside it would be refused.
    absolute = urlsplit(target.url).scheme != ""
    assert target.send_api_key is not absolute


def test_an_upload_is_the_owners_alone(uploads: UploadBackend) -> None:
    import_id = str(uuid.uuid4())
    target = open_upload(uploads, ALICE, import_id)
    assert uploads.send(ALICE, import_id, target, FILE) == "stored"

    for stranger in (BOB, OTHER_TENANTS_ALICE):
        assert uploads.store.uploaded_size(stranger, import_id) is None
        with pytest.raises(NotFoundError):
            uploads.store.read_range(stranger, import_id, 0, 10)
        uploads.store.delete_upload(stranger, import_id)
    assert uploads.store.uploaded_size(ALICE, import_id) == len(FILE)


def test_a_deleted_upload_is_gone_and_deleting_again_is_no_error(
    uploads: UploadBackend,
) -> None:
    import_id = str(uuid.uuid4())
    target = open_upload(uploads, ALICE, import_id)
    assert uploads.send(ALICE, import_id, target, FILE) == "stored"

    uploads.store.delete_upload(ALICE, import_id)
    uploads.store.delete_upload(ALICE, import_id)

    assert uploads.store.uploaded_size(ALICE, import_id) is None
    with pytest.raises(NotFoundError):
        uploads.store.read_range(ALICE, import_id, 0, 1)


def test_a_second_upload_replaces_the_first_whole(uploads: UploadBackend) -> None:
    import_id = str(uuid.uuid4())
    target = open_upload(uploads, ALICE, import_id)
    replacement = FILE.replace(b"line", b"LINE")
    assert uploads.send(ALICE, import_id, target, FILE) == "stored"
    assert uploads.send(ALICE, import_id, target, replacement) == "stored"
    assert uploads.store.read_range(ALICE, import_id, 0, len(FILE)) == replacement


@pytest.mark.parametrize("size", [len(FILE) + 1, len(FILE) - 1])
def test_a_file_of_another_size_never_passes_for_the_declared_one(
    uploads: UploadBackend, size: int
) -> None:
    import_id = str(uuid.uuid4())
    target = open_upload(uploads, ALICE, import_id, size=size)

    outcome = uploads.send(ALICE, import_id, target, FILE)

    stored = uploads.store.uploaded_size(ALICE, import_id)
    if uploads.refuses_other_sizes:
        assert outcome != "stored"
        assert stored is None
    # Wherever the store took it (moto does not check the signed Content-Length), its size
    # says so, and the service compares it with the declared size before reading anything.
    assert stored != size


def test_ids_that_are_not_uuids_are_refused_before_any_key_is_made(
    uploads: UploadBackend,
) -> None:
    for import_id in ("../../etc/passwd", "x", ""):
        with pytest.raises(ValueError, match=r"UUID|hexadecimal"):
            open_upload(uploads, ALICE, import_id)


def test_an_expired_upload_is_refused_where_the_store_checks_it(uploads: UploadBackend) -> None:
    import_id = str(uuid.uuid4())
    target = open_upload(uploads, ALICE, import_id)
    uploads.clock.advance(hours=1)

    outcome = uploads.send(ALICE, import_id, target, FILE)

    # S3 checks the URL's own expiry against its clock (the emulator does not check it).
    if uploads.refuses_other_sizes:
        assert outcome == "not_open"
        assert uploads.store.uploaded_size(ALICE, import_id) is None

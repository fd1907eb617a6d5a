"""The presigned upload URL that S3UploadStore hands out, checked offline (signing is local)."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.config import Config

from prme.backends.aws.s3_upload_store import S3UploadStore
from prme.backends.clock import ManualClock
from prme.model.records import OwnerKey

OWNER = OwnerKey(tenant_id="acme.corp/eu", owner_id="alice@example.com")
IMPORT_ID = "2f1c6f0e-6d7a-4c55-9d8e-0c1f8f0b7a11"


def store(clock: ManualClock) -> S3UploadStore:
    client = boto3.client(
        "s3",
        region_name="eu-west-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(signature_version="s3v4"),
    )
    return S3UploadStore(client, "prme-uploads", clock)


def test_the_url_signs_the_declared_length_so_s3_refuses_any_other() -> None:
    clock = ManualClock()
    target = store(clock).create_upload(
        OWNER, IMPORT_ID, size_bytes=5_000_000, expires_at=clock.now() + timedelta(minutes=15)
    )

    query = parse_qs(urlsplit(target.url).query)
    assert query["X-Amz-SignedHeaders"] == ["content-length;host"]
    assert query["X-Amz-Expires"] == ["900"]
    assert not target.send_api_key


def test_the_key_sits_under_the_tenant_and_names_no_owner() -> None:
    clock = ManualClock()
    target = store(clock).create_upload(
        OWNER, IMPORT_ID, size_bytes=10, expires_at=clock.now() + timedelta(minutes=1)
    )

    # Path-style or virtual-hosted, whichever the endpoint asks for: the key is the same.
    key = urlsplit(target.url).path.removeprefix("/prme-uploads")
    assert key.startswith("/imports/acme%252Ecorp%252Feu/")
    assert key.endswith(f"/{IMPORT_ID}.ndjson")
    assert "alice" not in target.url


@pytest.mark.parametrize("lifetime", [timedelta(0), timedelta(days=8)])
def test_a_lifetime_presigning_cannot_give_is_refused(lifetime: timedelta) -> None:
    clock = ManualClock()
    with pytest.raises(ValueError, match=r"future|seven days"):
        store(clock).create_upload(
            OWNER, IMPORT_ID, size_bytes=10, expires_at=clock.now() + lifetime
        )

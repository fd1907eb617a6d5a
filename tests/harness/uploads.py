"""Import upload stores under test: the fake, the embedded directory and S3 on the local AWS,
each with the way a caller sends a file to it."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from prme.backends.clock import ManualClock
from prme.backends.embedded.upload_store import LocalUploadStore
from prme.backends.memory import InMemoryUploadStore
from prme.errors import InvalidRequestError, NotFoundError, PayloadTooLargeError
from prme.model.records import OwnerKey
from prme.model.uploads import UploadTarget
from prme.ports import UploadStore

# What a caller's upload came to: "stored", or why the store refused it.
Outcome = str


@dataclass
class UploadBackend:
    store: UploadStore
    clock: ManualClock
    # Sends `data` to a target the way a caller would; says what happened.
    send: Callable[[OwnerKey, str, UploadTarget, bytes], Outcome]
    # Whether the store itself refuses a file of another size than declared (S3 does by its
    # signature, which the local emulator does not check).
    refuses_other_sizes: bool


def s3_client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        config=Config(signature_version="s3v4", retries={"mode": "standard", "max_attempts": 8}),
    )


@contextmanager
def upload_bucket(endpoint: str) -> Iterator[tuple[Any, str]]:
    """A fresh bucket made as `prme bootstrap` makes it, emptied and removed afterwards."""
    from prme.backends.aws.bootstrap import ensure_upload_bucket

    client = s3_client(endpoint)
    bucket = f"prme-t-{uuid.uuid4().hex[:12]}"
    ensure_upload_bucket(client, bucket)
    try:
        yield client, bucket
    finally:
        listed = client.list_objects_v2(Bucket=bucket).get("Contents", [])
        for item in listed:
            client.delete_object(Bucket=bucket, Key=item["Key"])
        client.delete_bucket(Bucket=bucket)


def _outcome(run: Callable[[], None]) -> Outcome:
    try:
        run()
    except PayloadTooLargeError:
        return "too_large"
    except InvalidRequestError:
        return "incomplete"
    except NotFoundError:
        return "not_open"
    return "stored"


def memory_uploads(clock: ManualClock | None = None) -> UploadBackend:
    clock = clock or ManualClock()
    store = InMemoryUploadStore(clock)

    def send(owner: OwnerKey, import_id: str, _target: UploadTarget, data: bytes) -> Outcome:
        return _outcome(lambda: store.upload(owner, import_id, data))

    return UploadBackend(store, clock, send, refuses_other_sizes=True)


def embedded_uploads(root: Path, clock: ManualClock | None = None) -> UploadBackend:
    clock = clock or ManualClock()
    store = LocalUploadStore(root, clock)

    def send(owner: OwnerKey, import_id: str, _target: UploadTarget, data: bytes) -> Outcome:
        def write() -> None:
            with store.open_upload(owner, import_id) as writer:
                # In pieces, as the route hands them over.
                for start in range(0, len(data), 65_536):
                    writer.write(data[start : start + 65_536])
                writer.finish()

        return _outcome(write)

    return UploadBackend(store, clock, send, refuses_other_sizes=True)


def s3_uploads(client: Any, bucket: str, clock: ManualClock | None = None) -> UploadBackend:
    from prme.backends.aws.s3_upload_store import S3UploadStore

    clock = clock or ManualClock()
    store = S3UploadStore(client, bucket, clock)

    def send(_owner: OwnerKey, _import_id: str, target: UploadTarget, data: bytes) -> Outcome:
        # A real HTTP PUT to the presigned URL, as a caller's HTTP client sends it.
        answer = httpx.put(target.url, content=data, headers=target.headers, timeout=30.0)
        return "stored" if answer.status_code == 200 else f"refused_{answer.status_code}"

    return UploadBackend(store, clock, send, refuses_other_sizes=False)

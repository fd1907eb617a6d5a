"""`S3UploadStore`: import uploads as S3 objects, sent by the caller to a presigned PUT URL.

The URL signs the declared Content-Length (botocore puts `content-length` among the signed
headers when the length is a parameter), so S3 refuses an upload of any other size with a
signature mismatch; local emulators may not check signatures, which is why the service
compares `uploaded_size` with the declared size before reading. Objects are encrypted by the
bucket's default encryption and removed by its lifecycle rule if nobody deletes them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from prme.errors import NotFoundError, StorageUnavailableError
from prme.model.records import OwnerKey
from prme.model.uploads import UploadTarget, seconds_until, upload_object_key
from prme.ports import Clock

# SigV4 query signatures are valid for at most seven days.
MAX_PRESIGN_SECONDS = 7 * 24 * 3600
_ABSENT = {"404", "NoSuchKey", "NotFound", "InvalidRange"}


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class S3UploadStore:
    """Uploads in one bucket under `imports/<tenant>/<owner digest>/<import id>.ndjson`.

    `client` is a boto3 S3 client that signs with SigV4 (`signature_version="s3v4"`)."""

    def __init__(self, client: Any, bucket: str, clock: Clock) -> None:
        self._client = client
        self._bucket = bucket
        self._clock = clock

    def create_upload(
        self, owner: OwnerKey, import_id: str, *, size_bytes: int, expires_at: datetime
    ) -> UploadTarget:
        lifetime = seconds_until(expires_at, self._clock.now())
        if lifetime > MAX_PRESIGN_SECONDS:
            raise ValueError("a presigned upload URL lasts at most seven days")
        try:
            url: str = self._client.generate_presigned_url(
                "put_object",
                Params={
                    "Bucket": self._bucket,
                    "Key": upload_object_key(owner, import_id),
                    "ContentLength": size_bytes,
                },
                ExpiresIn=lifetime,
            )
        except (ClientError, BotoCoreError) as exc:
            # Signing is local: only missing credentials or configuration end up here.
            raise StorageUnavailableError("upload store unavailable") from exc
        return UploadTarget(
            url=url, send_api_key=False, size_bytes=size_bytes, expires_at=expires_at
        )

    def uploaded_size(self, owner: OwnerKey, import_id: str) -> int | None:
        try:
            head = self._client.head_object(
                Bucket=self._bucket, Key=upload_object_key(owner, import_id)
            )
        except ClientError as exc:
            if _error_code(exc) in _ABSENT:
                return None
            raise StorageUnavailableError("upload store unavailable") from exc
        except BotoCoreError as exc:
            raise StorageUnavailableError("upload store unavailable") from exc
        return int(head["ContentLength"])

    def read_range(self, owner: OwnerKey, import_id: str, start: int, end: int) -> bytes:
        if not 0 <= start <= end:
            raise NotFoundError("The upload is gone or shorter than the range")
        if start == end:
            if self.uploaded_size(owner, import_id) is None:
                raise NotFoundError("The upload is gone or shorter than the range")
            return b""
        try:
            answer = self._client.get_object(
                Bucket=self._bucket,
                Key=upload_object_key(owner, import_id),
                Range=f"bytes={start}-{end - 1}",
            )
            data: bytes = answer["Body"].read()
        except ClientError as exc:
            if _error_code(exc) in _ABSENT:
                raise NotFoundError("The upload is gone or shorter than the range") from None
            raise StorageUnavailableError("upload store unavailable") from exc
        except BotoCoreError as exc:
            raise StorageUnavailableError("upload store unavailable") from exc
        # S3 answers a range that runs past the end with the bytes it has.
        if len(data) != end - start:
            raise NotFoundError("The upload is gone or shorter than the range")
        return data

    def delete_upload(self, owner: OwnerKey, import_id: str) -> None:
        try:
            self._client.delete_object(Bucket=self._bucket, Key=upload_object_key(owner, import_id))
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailableError("upload store unavailable") from exc

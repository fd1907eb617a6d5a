"""`InMemoryUploadStore`: uploads in a dictionary, the contract suite's reference backend."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from prme.errors import InvalidRequestError, NotFoundError, PayloadTooLargeError
from prme.model.records import OwnerKey
from prme.model.uploads import UploadTarget, canonical_import_id, upload_object_key
from prme.ports import Clock


@dataclass
class _Upload:
    size_bytes: int
    expires_at: datetime
    data: bytes | None = None


class InMemoryUploadStore:
    """Keeps each upload's declared size and, once sent through `upload`, its bytes."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._uploads: dict[tuple[str, str, str], _Upload] = {}

    def _key(self, owner: OwnerKey, import_id: str) -> tuple[str, str, str]:
        return owner.tenant_id, owner.owner_id, canonical_import_id(import_id)

    def create_upload(
        self, owner: OwnerKey, import_id: str, *, size_bytes: int, expires_at: datetime
    ) -> UploadTarget:
        self._uploads[self._key(owner, import_id)] = _Upload(size_bytes, expires_at)
        return UploadTarget(
            url=f"memory:///{upload_object_key(owner, import_id)}",
            send_api_key=False,
            size_bytes=size_bytes,
            expires_at=expires_at,
        )

    def upload(self, owner: OwnerKey, import_id: str, data: bytes) -> None:
        """What the caller's PUT does: the whole file, or nothing kept."""
        upload = self._uploads.get(self._key(owner, import_id))
        if upload is None or self._clock.now() >= upload.expires_at:
            raise NotFoundError("No upload is open for this import")
        if len(data) > upload.size_bytes:
            raise PayloadTooLargeError("The upload is larger than the size it was opened for")
        if len(data) < upload.size_bytes:
            raise InvalidRequestError("The upload is shorter than the size it was opened for")
        upload.data = bytes(data)

    def uploaded_size(self, owner: OwnerKey, import_id: str) -> int | None:
        upload = self._uploads.get(self._key(owner, import_id))
        return None if upload is None or upload.data is None else len(upload.data)

    def read_range(self, owner: OwnerKey, import_id: str, start: int, end: int) -> bytes:
        upload = self._uploads.get(self._key(owner, import_id))
        if upload is None or upload.data is None or not 0 <= start <= end <= len(upload.data):
            raise NotFoundError("The upload is gone or shorter than the range")
        return upload.data[start:end]

    def delete_upload(self, owner: OwnerKey, import_id: str) -> None:
        self._uploads.pop(self._key(owner, import_id), None)

"""`LocalUploadStore`: import uploads as private files under the embedded data directory.

The caller sends its file to the embedded server's upload route, which streams it through an
`UploadWriter` into a temporary file: the file takes the upload's name only once exactly the
declared number of bytes arrived, so a failed, short or oversized upload leaves nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from datetime import datetime
from pathlib import Path
from types import TracebackType

from prme.backends.embedded.sqlite import PRIVATE_FILE_MODE, private_directory
from prme.errors import InvalidRequestError, NotFoundError, PayloadTooLargeError
from prme.model.records import OwnerKey
from prme.model.uploads import (
    EMBEDDED_UPLOAD_PATH,
    UploadTarget,
    canonical_import_id,
    owner_digest,
    tenant_digest,
)
from prme.ports import Clock

UPLOADS_DIRECTORY = "uploads"
_DECLARATION = ".json"
_DATA = ".ndjson"


class UploadWriter:
    """One upload in progress: bytes go to a temporary file, counted against the declared
    size; `finish` gives it its name, anything else (an error, `discard`) removes it."""

    def __init__(self, final: Path, size_bytes: int) -> None:
        self.size_bytes = size_bytes
        self.received = 0
        self._final = final
        self._temporary = final.with_name(f"{final.name}.part-{secrets.token_hex(8)}")
        descriptor = os.open(
            self._temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE
        )
        self._file = os.fdopen(descriptor, "wb")
        self._done = False

    def write(self, data: bytes) -> None:
        self.received += len(data)
        if self.received > self.size_bytes:
            self.discard()
            raise PayloadTooLargeError(
                f"The upload is larger than the {self.size_bytes} bytes it was opened for; "
                "nothing was kept"
            )
        self._file.write(data)

    def finish(self) -> None:
        if self.received != self.size_bytes:
            self.discard()
            raise InvalidRequestError(
                f"The upload ended after {self.received} of the {self.size_bytes} bytes it was "
                "opened for; nothing was kept"
            )
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        # A second upload of the same import replaces the first whole, never mixes with it.
        os.replace(self._temporary, self._final)
        self._done = True

    def discard(self) -> None:
        if self._done:
            return
        self._done = True
        self._file.close()
        with contextlib.suppress(FileNotFoundError):
            self._temporary.unlink()

    def __enter__(self) -> UploadWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.discard()


class LocalUploadStore:
    """Uploads under `root`, one folder per tenant and owner (named by digests, never by the
    ids themselves): `<import id>.json` holds the declared size and expiry, `<import
    id>.ndjson` the complete file."""

    def __init__(self, root: Path, clock: Clock) -> None:
        self._root = root
        self._clock = clock

    def _base(self, owner: OwnerKey, import_id: str) -> Path:
        folder = self._root / tenant_digest(owner.tenant_id) / owner_digest(owner)
        return folder / canonical_import_id(import_id)

    def create_upload(
        self, owner: OwnerKey, import_id: str, *, size_bytes: int, expires_at: datetime
    ) -> UploadTarget:
        base = self._base(owner, import_id)
        private_directory(base.parent)
        declaration = {"size_bytes": size_bytes, "expires_at": expires_at.isoformat()}
        _write_private(base.with_suffix(_DECLARATION), json.dumps(declaration).encode())
        return UploadTarget(
            url=EMBEDDED_UPLOAD_PATH.format(import_id=canonical_import_id(import_id)),
            send_api_key=True,
            size_bytes=size_bytes,
            expires_at=expires_at,
        )

    def open_upload(self, owner: OwnerKey, import_id: str) -> UploadWriter:
        """A writer for the owner's open upload; NotFoundError when none is open (never
        created, deleted, expired, or another owner's)."""
        base = self._base(owner, import_id)
        try:
            declaration = json.loads(base.with_suffix(_DECLARATION).read_bytes())
        except FileNotFoundError:
            raise NotFoundError("No upload is open for this import") from None
        if self._clock.now() >= datetime.fromisoformat(declaration["expires_at"]):
            raise NotFoundError("No upload is open for this import")
        return UploadWriter(base.with_suffix(_DATA), int(declaration["size_bytes"]))

    def uploaded_size(self, owner: OwnerKey, import_id: str) -> int | None:
        try:
            return self._base(owner, import_id).with_suffix(_DATA).stat().st_size
        except FileNotFoundError:
            return None

    def read_range(self, owner: OwnerKey, import_id: str, start: int, end: int) -> bytes:
        if not 0 <= start <= end:
            raise NotFoundError("The upload is gone or shorter than the range")
        try:
            with self._base(owner, import_id).with_suffix(_DATA).open("rb") as file:
                file.seek(start)
                data = file.read(end - start)
        except FileNotFoundError:
            raise NotFoundError("The upload is gone or shorter than the range") from None
        if len(data) != end - start:
            raise NotFoundError("The upload is gone or shorter than the range")
        return data

    def delete_upload(self, owner: OwnerKey, import_id: str) -> None:
        base = self._base(owner, import_id)
        for path in (base.with_suffix(_DATA), base.with_suffix(_DECLARATION)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _write_private(path: Path, data: bytes) -> None:
    """Write a file readable by its owner only, replacing any earlier one whole."""
    temporary = path.with_name(f"{path.name}.part-{secrets.token_hex(8)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    os.replace(temporary, path)

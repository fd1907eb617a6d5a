"""An import's upload: where a caller sends a large NDJSON file, and how the stores name it.

The file is uploaded once, by the caller, straight to the store (a presigned S3 URL on AWS, the
embedded server's own route locally); the service only reads it back in byte ranges.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Literal
from urllib.parse import quote
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from prme.model.imports import BulkImportStatus
from prme.model.records import OwnerKey

# The largest file an import takes by upload. The splitter's memory does not grow with it,
# but its import starts within one API request: validated twice (split, then sent) at about
# 16 MB/s per pass on a loaded 2-core machine, 64 MiB stays inside the request's budget.
MAX_UPLOAD_BYTES = 64 * 1024 * 1024
# Where every upload lives inside its store: the stack grants the functions this prefix only.
UPLOAD_PREFIX = "imports/"


class UploadTarget(BaseModel):
    """Where and how the caller sends its file: one request, exactly `size_bytes` long."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(
        description="Where to send the file: an absolute URL, or a path on this API (which "
        "then wants the caller's API key)",
    )
    method: Literal["PUT"] = Field(default="PUT", description="The HTTP method of the upload")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Headers the upload must carry exactly as given (Content-Length apart)",
    )
    send_api_key: bool = Field(
        description="Whether the upload carries the caller's `Authorization: Bearer` key: true "
        "for a path on this API, false for a presigned URL (which refuses a second credential)",
    )
    size_bytes: int = Field(
        ge=1,
        le=MAX_UPLOAD_BYTES,
        description="The exact size of the file in bytes; another size is refused",
    )
    expires_at: AwareDatetime = Field(description="The upload is refused after this time")


def owner_digest(owner: OwnerKey) -> str:
    """A short fixed-form stand-in for the owner in object keys and paths: owner ids are
    caller text (any length, any character) and personal data, kept out of names."""
    return hashlib.sha256(f"{owner.tenant_id}\x00{owner.owner_id}".encode()).hexdigest()[:32]


def tenant_digest(tenant_id: str) -> str:
    return hashlib.sha256(tenant_id.encode()).hexdigest()[:32]


def canonical_import_id(import_id: str) -> str:
    """The import id as every store spells it; anything but a UUID is refused (ValueError),
    so an id can never steer a key or a path elsewhere."""
    return str(UUID(import_id))


def upload_object_key(owner: OwnerKey, import_id: str) -> str:
    """The S3 key of an upload: under the import prefix and its tenant (percent-encoded, dots
    too, so no tenant id reads as a path step), then the owner's digest and the import id."""
    tenant = quote(owner.tenant_id, safe="").replace(".", "%2E")
    return f"{UPLOAD_PREFIX}{tenant}/{owner_digest(owner)}/{canonical_import_id(import_id)}.ndjson"


def seconds_until(expires_at: datetime, now: datetime) -> int:
    """Whole seconds from `now` to `expires_at`, rounded up; ValueError when already past."""
    remaining = (expires_at - now).total_seconds()
    if remaining <= 0:
        raise ValueError("an upload must expire in the future")
    return int(-(-remaining // 1))


# The embedded server's upload route: the path an embedded target names, relative to the API.
EMBEDDED_UPLOAD_PATH = "/v1/imports/{import_id}/upload"


class UploadRequest(BaseModel):
    """An import by upload: the size of the file that will be sent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    size_bytes: int = Field(
        ge=1,
        le=MAX_UPLOAD_BYTES,
        description=f"The exact size of the NDJSON file in bytes, at most {MAX_UPLOAD_BYTES}",
    )


class ImportUploadOpened(BaseModel):
    """An import opened for a file: the job awaiting it, and where and how to send the file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job: BulkImportStatus = Field(
        description="The import, awaiting_upload until POST /v1/imports/{import_id}/start"
    )
    upload: UploadTarget = Field(description="Where and how to send the NDJSON file")

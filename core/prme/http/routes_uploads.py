"""The embedded server's upload route: where a caller PUTs the NDJSON file of an import by upload.

On AWS the file goes to a presigned S3 URL instead and this route answers 404. The body is
streamed to disk as it arrives (the body policy lets this one route through unbuffered) and
counted against the size the import was opened with: a larger body is refused as soon as it
passes it, a shorter one at its end, and either way nothing is kept. The URL is not in the
OpenAPI document: callers get it from the answer that opened the import, as they get S3's.
"""

from __future__ import annotations

import re
from typing import Annotated
from uuid import UUID

from fastapi import FastAPI, Path, Request
from pydantic import BaseModel, Field

from prme.backends.embedded.upload_store import LocalUploadStore
from prme.engine.identity import resolve_owner
from prme.errors import NotFoundError, PayloadTooLargeError
from prme.http.admission import admit_request
from prme.http.dependencies import ApiRuntime, Caller, UserIdQuery
from prme.model.uploads import EMBEDDED_UPLOAD_PATH
from prme.operations import ID_DESCRIPTIONS

ImportIdPath = Annotated[UUID, Path(description=ID_DESCRIPTIONS["import_id"])]
# What the body policy lets through unread: PUT to this path, which bounds its own body.
STREAMED_PATH = re.compile(
    re.escape(EMBEDDED_UPLOAD_PATH).replace(re.escape("{import_id}"), "[^/]+")
)


class UploadReceipt(BaseModel):
    import_id: str = Field(description="The import the file was uploaded for")
    size_bytes: int = Field(description="The bytes received and kept")


def register(app: FastAPI, runtime: ApiRuntime) -> None:
    store = runtime.engine.deps.uploads

    @app.put(EMBEDDED_UPLOAD_PATH, include_in_schema=False, response_model=UploadReceipt)
    async def upload_import_file(
        import_id: ImportIdPath, request: Request, caller: Caller, user_id: UserIdQuery = None
    ) -> UploadReceipt:
        owner = resolve_owner(caller, user_id)
        admit_request(runtime.engine, owner.tenant_id)
        if not isinstance(store, LocalUploadStore):
            raise NotFoundError("This server takes no uploads; use the URL the import gave")
        with store.open_upload(owner, str(import_id)) as writer:
            declared = request.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > writer.size_bytes:
                raise PayloadTooLargeError(
                    f"The upload is larger than the {writer.size_bytes} bytes it was opened for"
                )
            async for piece in request.stream():
                writer.write(piece)
            writer.finish()
        return UploadReceipt(import_id=str(import_id), size_bytes=writer.size_bytes)

"""The export and import routes' adapters: an owner's memory out a page at a time, and back in."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query

from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import Caller, UserIdQuery, served
from prme.http.schemas import ImportRequest
from prme.model.portability import ExportPage, ImportBatch, ImportReport

ExportCursor = Annotated[
    str | None,
    Query(
        max_length=600,
        description="The previous page's next_cursor; omitted for the first page (which "
        "carries the header)",
    ),
]


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @served(app, "export_owner")
    def export_owner(
        caller: Caller, cursor: ExportCursor = None, user_id: UserIdQuery = None
    ) -> ExportPage:
        return engine.export_owner(resolve_owner(caller, user_id), cursor)

    @served(app, "import_records")
    def import_records(caller: Caller, body: ImportRequest) -> ImportReport:
        owner = resolve_owner(caller, body.user_id)
        batch = ImportBatch.model_validate(body.model_dump(exclude={"user_id"}))
        return engine.import_records(owner, batch)

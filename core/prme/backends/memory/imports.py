"""In-memory bulk-import ports: a job store and a queue that records the chunks it is sent."""

from __future__ import annotations

from collections.abc import Sequence

from prme.errors import ConflictError
from prme.model.imports import ImportChunkMessage, ImportJob
from prme.model.records import OwnerKey


class InMemoryImportJobStore:
    def __init__(self) -> None:
        self._jobs: dict[tuple[str, str, str], str] = {}

    @staticmethod
    def _key(owner: OwnerKey, import_id: str) -> tuple[str, str, str]:
        return (owner.tenant_id, owner.owner_id, import_id)

    def create_import(self, job: ImportJob) -> None:
        key = self._key(job.owner, job.import_id)
        if key in self._jobs:
            raise ConflictError("import already exists")
        self._jobs[key] = job.model_dump_json()

    def get_import(self, owner: OwnerKey, import_id: str) -> ImportJob | None:
        stored = self._jobs.get(self._key(owner, import_id))
        return None if stored is None else ImportJob.model_validate_json(stored)

    def save_import(self, job: ImportJob, *, replacing: ImportJob) -> None:
        key = self._key(job.owner, job.import_id)
        if self._jobs.get(key) != replacing.model_dump_json():
            raise ConflictError("the import changed since it was read")
        self._jobs[key] = job.model_dump_json()

    def erase_owner(self, owner: OwnerKey) -> int:
        keys = [k for k in self._jobs if k[:2] == (owner.tenant_id, owner.owner_id)]
        for key in keys:
            del self._jobs[key]
        return len(keys)


class RecordingImportQueue:
    """Keeps every chunk sent, in order; tests deliver them (again) to the engine."""

    def __init__(self) -> None:
        self.sent: list[ImportChunkMessage] = []

    def send_chunks(self, chunks: Sequence[ImportChunkMessage]) -> None:
        self.sent.extend(chunks)

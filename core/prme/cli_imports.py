"""`prme imports submit | status`: bulk imports of an NDJSON file of raw sources, with progress.

Each line of the file is one item of `POST /v1/ingest/fast` (`{"content": ...}`). A file larger
than one import is submitted as consecutive imports, each under an Idempotency-Key made from
the file's digest and the import's position, so submitting the same file again returns the
same imports instead of writing twice.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from prme.composition import open_backend
from prme.engine.identity import validate_user_id
from prme.engine.imports import is_finished
from prme.engine.service import MemoryEngine
from prme.errors import InvalidRequestError
from prme.model.imports import (
    MAX_IMPORT_BYTES,
    MAX_IMPORT_ITEMS,
    BulkImportInput,
    ImportJob,
    item_bytes,
)
from prme.model.inputs import FastIngestItem
from prme.model.records import OwnerKey
from prme.settings import Settings

# Keys of a file's imports: the same file (same bytes) gives the same keys.
_FILE_NAMESPACE = uuid.UUID("8d3c5e1a-2f4b-4e6d-9a7c-0b1d2e3f4a5b")
POLL_SECONDS = 1.0

CommandMaker = Callable[
    ["argparse._SubParsersAction[argparse.ArgumentParser]", str, str], argparse.ArgumentParser
]


def add_commands(
    command: CommandMaker, sub: argparse._SubParsersAction[argparse.ArgumentParser]
) -> None:
    imports = command(sub, "imports", "bulk imports of raw sources from an NDJSON file")
    actions = imports.add_subparsers(dest="imports_command", required=True, metavar="ACTION")
    submit = command(
        actions, "submit", "submit an NDJSON file of raw sources (one item per line) as imports"
    )
    submit.add_argument("file", help='the NDJSON file: one {"content": ...} item per line')
    submit.add_argument("--user-id", default="default", help="the owner to import into")
    submit.add_argument(
        "--wait",
        action="store_true",
        help="wait until every import is finished (progress on stderr)",
    )
    status = command(actions, "status", "show one import's progress")
    status.add_argument("import_id", help="the import id `prme imports submit` printed")
    status.add_argument("--user-id", default="default", help="the owner of the import")
    status.add_argument("--json", action="store_true", help="print the import's state as JSON")


def read_items(path: Path) -> list[FastIngestItem]:
    """Every line's item, checked before anything is submitted; the first bad line is named."""
    items: list[FastIngestItem] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                items.append(FastIngestItem.model_validate(json.loads(line)))
            except (ValueError, ValidationError):
                # The line is content: its text is not repeated.
                raise InvalidRequestError(f"line {number} is not a valid import item") from None
    if not items:
        raise InvalidRequestError("the file holds no items")
    return items


def split_into_imports(items: list[FastIngestItem]) -> list[list[FastIngestItem]]:
    """Consecutive batches that each fit one import (items and bytes)."""
    batches: list[list[FastIngestItem]] = [[]]
    size = 0
    for item in items:
        weight = item_bytes(item)
        if batches[-1] and (
            len(batches[-1]) >= MAX_IMPORT_ITEMS or size + weight > MAX_IMPORT_BYTES
        ):
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += weight
    return batches


def _progress_line(job: ImportJob) -> str:
    return (
        f"import {job.import_id}: chunks {job.chunks_done}/{len(job.chunks)} done, "
        f"{job.items_accepted} saved, {job.items_failed} failed ({job.status.value})"
    )


def _wait(engine: MemoryEngine, owner: OwnerKey, job: ImportJob) -> ImportJob:
    while not is_finished(job):
        print(_progress_line(job), file=sys.stderr, flush=True)
        time.sleep(POLL_SECONDS)
        job = engine.get_import(owner, job.import_id)
    print(_progress_line(job), file=sys.stderr, flush=True)
    return job


def run(args: argparse.Namespace, settings: Settings) -> int:
    owner = OwnerKey(tenant_id=settings.tenant_id, owner_id=validate_user_id(args.user_id))
    backend = open_backend(settings, args.data_dir)
    try:
        if args.imports_command == "status":
            job = backend.engine.get_import(owner, args.import_id)
            print(job.model_dump_json(indent=2) if args.json else _progress_line(job))
            return 0
        path = Path(args.file)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        failed = 0
        for position, batch in enumerate(split_into_imports(read_items(path))):
            key = str(uuid.uuid5(_FILE_NAMESPACE, f"{digest}:{position}"))
            job = backend.engine.submit_import(
                owner, BulkImportInput(items=batch), idempotency_key=key
            )
            if args.wait:
                job = _wait(backend.engine, owner, job)
            failed += job.items_failed
            print(
                f"{job.import_id} items={job.item_count} chunks={len(job.chunks)} {job.status.value}"
            )
    finally:
        backend.close()
    return 1 if failed else 0

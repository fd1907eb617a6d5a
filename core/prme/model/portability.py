"""The owner export format (versioned NDJSON): its header, its records and their checks as input.

An export is one header line, then one JSON object per line: every source event verbatim, every
memory node with the fields ranking and lifecycle read, every edge. Records name no tenant or
owner: an import writes them under the caller's owner, whatever a line claims.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prme.model.input_policy import (
    MAX_METADATA_DEPTH,
    InputPolicyError,
    check_json_value,
    check_name,
)
from prme.model.inputs import MAX_CONTENT_CHARS
from prme.model.records import Event, MemoryEdge, MemoryNode, OwnerKey

EXPORT_FORMAT = "prme-owner-export"
EXPORT_FORMAT_VERSION = 1
# A page of an export: far below Lambda's 6 MB response payload whatever the JSON escaping.
EXPORT_PAGE_BYTES = 2_000_000
EXPORT_PAGE_RECORDS = 1000
# One import batch: its JSON body stays under the Lambda API's 2,000,000-byte body limit.
IMPORT_BATCH_BYTES = 1_500_000
IMPORT_BATCH_RECORDS = 1000
# One record (line): a source holds at most 100,000 characters (400 KB in UTF-8) plus metadata.
MAX_RECORD_BYTES = 600_000

RecordKind = Literal["event", "node", "edge"]
_MODELS: dict[str, type[Event] | type[MemoryNode] | type[MemoryEdge]] = {
    "event": Event,
    "node": MemoryNode,
    "edge": MemoryEdge,
}
# Fields a record may carry but an import never reads: the target is always the caller's owner.
_PARTITION_FIELDS = ("tenant_id", "owner_id")

ImportedRecord = Event | MemoryNode | MemoryEdge
# A session label as a store takes it.
MAX_SESSION_CHARS = 256


class ExportCounts(BaseModel):
    """How many records of each kind the owner had when the export began."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    events: int = Field(ge=0, description="Source events")
    nodes: int = Field(ge=0, description="Memory nodes, in every lifecycle state")
    edges: int = Field(ge=0, description="Edges between memory nodes (supersedence, aliases)")

    @property
    def total(self) -> int:
        return self.events + self.nodes + self.edges


class ExportHeader(BaseModel):
    """The first line of an export file: what format it is and what follows."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["header"] = Field(default="header", description="Always `header`")
    format: Literal["prme-owner-export"] = Field(
        default="prme-owner-export", description="The format's name"
    )
    version: int = Field(
        default=EXPORT_FORMAT_VERSION,
        description="The format's version; an import refuses a version it does not know",
    )
    exported_at: datetime = Field(description="When the export began")
    counts: ExportCounts = Field(description="Records of each kind when the export began")


class ExportPage(BaseModel):
    """One page of an owner's export: records in file order and where the next page starts."""

    model_config = ConfigDict(frozen=True)

    header: ExportHeader | None = Field(
        default=None, description="The file's first line; on the first page only"
    )
    records: list[dict[str, Any]] = Field(
        description="The records of this page, one NDJSON line each: events, then nodes, then "
        "edges, each in id order, tagged by `kind`"
    )
    next_cursor: str | None = Field(
        description="Pass it as `cursor` for the next page; null after the last page"
    )


class ImportBatch(BaseModel):
    """A batch of export records to write under the caller's owner."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(
        description="The export format version of the records (the header line's `version`)"
    )
    first_line: int = Field(
        default=2,
        ge=1,
        description="The file line of the first record, so errors name lines of the file "
        "(the header is line 1)",
    )
    records: list[dict[str, Any]] = Field(
        max_length=IMPORT_BATCH_RECORDS,
        description="Export records (events, nodes, edges) as read from the file's lines",
    )


class ImportReport(BaseModel):
    """What one import batch wrote; records already present under their ids are skipped."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    events: int = Field(description="Source events written")
    nodes: int = Field(description="Memory nodes written")
    edges: int = Field(description="Edges written")
    skipped: int = Field(description="Records whose id the owner already had (not rewritten)")
    pending: int = Field(
        description="Written nodes not searchable yet (a dependency was down); processing "
        "materializations finishes them"
    )


class RecordError(ValueError):
    """A record of an import that cannot be taken; the message names no content."""


def record_of(record: ImportedRecord) -> dict[str, Any]:
    """A stored record as an export line's object: its kind and fields, no tenant or owner."""
    kind = next(name for name, model in _MODELS.items() if isinstance(record, model))
    body = record.model_dump(mode="json", exclude=set(_PARTITION_FIELDS))
    return {"kind": kind, **body}


def json_line(value: dict[str, Any]) -> str:
    """One compact NDJSON line (without its newline), UTF-8 text kept as is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def record_bytes(value: dict[str, Any]) -> int:
    return len(json_line(value).encode("utf-8", "surrogatepass"))


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def owned_record(value: object, owner: OwnerKey) -> ImportedRecord:
    """An export record read as the record it is, under `owner`. Raises RecordError."""
    if not isinstance(value, dict):
        raise RecordError("must be a JSON object")
    if record_bytes(value) > MAX_RECORD_BYTES:
        raise RecordError(f"is larger than {MAX_RECORD_BYTES} bytes")
    try:
        check_json_value(value, max_depth=MAX_METADATA_DEPTH + 2)
    except InputPolicyError as exc:
        raise RecordError(exc.message) from None
    kind = value.get("kind")
    model = _MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise RecordError("`kind` must be one of event, node, edge")
    fields = {k: v for k, v in value.items() if k != "kind" and k not in _PARTITION_FIELDS}
    unknown = sorted(set(fields) - set(model.model_fields))
    if unknown:
        raise RecordError(f"unknown field {unknown[0][:64]!r} for a {kind}")
    try:
        record = model.model_validate({**fields, **owner.model_dump()})
    except ValidationError as exc:
        # Pydantic's messages quote the input; name the fields only.
        names = sorted({".".join(str(p) for p in e["loc"])[:64] for e in exc.errors()})
        raise RecordError(f"invalid {kind} (fields: {', '.join(names)})") from None
    if isinstance(record, Event | MemoryNode) and record.content_sha256 != _sha256(record.content):
        raise RecordError(f"{kind} content does not match its content_sha256")
    _check_as_stored(record, str(kind))
    return record


def _id_fields(record: ImportedRecord) -> Iterator[tuple[str, str]]:
    yield "id", record.id
    if isinstance(record, MemoryEdge):
        yield "source_node_id", record.source_node_id
        yield "target_node_id", record.target_node_id
    if not isinstance(record, Event):
        yield from (("evidence_refs", ref) for ref in record.evidence_refs)


def _check_as_stored(record: ImportedRecord, kind: str) -> None:
    """Refuse what no store writes: every record PRME makes has lowercase UUID ids (the API
    addresses memories by UUID, so another id could never be read or deleted one by one, an
    empty one never ends an export's paging, and a long one passes DynamoDB's key size), a
    store's session label and at most a store's content."""
    for name, value in _id_fields(record):
        if not _is_uuid(value):
            raise RecordError(f"{kind} {name} must be a lowercase UUID")
    if isinstance(record, Event | MemoryNode):
        if len(record.content) > MAX_CONTENT_CHARS:
            raise RecordError(f"{kind} content is longer than {MAX_CONTENT_CHARS} characters")
        session = record.session_id
        if session is not None:
            if not 1 <= len(session) <= MAX_SESSION_CHARS:
                raise RecordError(
                    f"{kind} session_id must have 1 to {MAX_SESSION_CHARS} characters"
                )
            try:
                check_name(session)
            except ValueError as exc:
                raise RecordError(f"{kind} session_id {exc}") from None


def _is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def header_of(line: str) -> ExportHeader:
    """The header of an export file from its first line. Raises RecordError."""
    try:
        value = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        raise RecordError("is not JSON") from None
    if not isinstance(value, dict) or value.get("kind") != "header":
        raise RecordError("is not a PRME export header")
    if value.get("format") != EXPORT_FORMAT:
        raise RecordError(f"names another format than {EXPORT_FORMAT}")
    if value.get("version") != EXPORT_FORMAT_VERSION:
        raise RecordError(
            f"has format version {str(value.get('version'))[:16]}; this PRME reads version "
            f"{EXPORT_FORMAT_VERSION}"
        )
    try:
        return ExportHeader.model_validate(value)
    except ValidationError:
        raise RecordError("is not a valid export header") from None


class LineError(ValueError):
    """An export file line that cannot be read; names the line, never its content."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line


def import_batches(lines: Iterable[str], *, first_line: int = 2) -> Iterator[ImportBatch]:
    """The records of an export file's lines after the header, as batches that each fit one
    import call (records and bytes bounded). Blank lines are skipped. Raises LineError for a
    line that is not a JSON object or is too large, before the batch holding it is yielded."""
    records: list[dict[str, Any]] = []
    size = 0
    start = first_line
    for number, line in enumerate(lines, start=first_line):
        if not line.strip():
            # A batch's records are consecutive lines (errors count lines from its first).
            if records:
                yield ImportBatch(version=EXPORT_FORMAT_VERSION, first_line=start, records=records)
                records, size = [], 0
            continue
        if len(line) > MAX_RECORD_BYTES:
            raise LineError(number, f"is larger than {MAX_RECORD_BYTES} bytes")
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            raise LineError(number, "is not JSON") from None
        if not isinstance(value, dict):
            raise LineError(number, "must be a JSON object")
        weight = record_bytes(value)
        if records and (len(records) >= IMPORT_BATCH_RECORDS or size + weight > IMPORT_BATCH_BYTES):
            yield ImportBatch(version=EXPORT_FORMAT_VERSION, first_line=start, records=records)
            records, size = [], 0
        if not records:
            start = number
        records.append(value)
        size += weight
    if records:
        yield ImportBatch(version=EXPORT_FORMAT_VERSION, first_line=start, records=records)

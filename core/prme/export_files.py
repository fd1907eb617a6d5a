"""Export files on disk: the loops that write an owner's pages as NDJSON and read one back in
batches, shared by every client and the CLI (each passes its own export and import call)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TextIO

from prme.model.portability import (
    ExportHeader,
    ExportPage,
    ImportBatch,
    ImportReport,
    LineError,
    RecordError,
    header_of,
    import_batches,
    json_line,
)

# Called after each page or batch with (records done, records in total as the header counts).
TransferProgress = Callable[[int, int], None]


@dataclass(frozen=True)
class ImportTotals:
    """What importing a whole file wrote, summed over its batches."""

    events: int = 0
    nodes: int = 0
    edges: int = 0
    skipped: int = 0
    pending: int = 0

    def plus(self, report: ImportReport) -> ImportTotals:
        return ImportTotals(
            events=self.events + report.events,
            nodes=self.nodes + report.nodes,
            edges=self.edges + report.edges,
            skipped=self.skipped + report.skipped,
            pending=self.pending + report.pending,
        )

    @property
    def records(self) -> int:
        return self.events + self.nodes + self.edges + self.skipped


def write_export(
    export_page: Callable[[str | None], ExportPage],
    out: TextIO,
    progress: TransferProgress | None = None,
) -> int:
    """Write every page `export_page(cursor)` returns as NDJSON lines (the header first);
    the number of records written."""
    cursor: str | None = None
    header: ExportHeader | None = None
    written = 0
    while True:
        page = export_page(cursor)
        if header is None:
            if page.header is None:
                raise ValueError("the first export page has no header")
            header = page.header
            out.write(json_line(header.model_dump(mode="json")) + "\n")
        for record in page.records:
            out.write(json_line(record) + "\n")
        written += len(page.records)
        if progress is not None:
            progress(written, max(written, header.counts.total))
        if page.next_cursor is None:
            return written
        cursor = page.next_cursor


def read_export(
    lines: Iterable[str],
    import_batch: Callable[[ImportBatch], ImportReport],
    progress: TransferProgress | None = None,
) -> ImportTotals:
    """Import an export file's lines batch by batch. Raises LineError for an unreadable line
    (the batches before it are written; importing the file again skips them)."""
    iterator = iter(lines)
    first = next(iterator, None)
    if first is None:
        raise LineError(1, "the file is empty; an export starts with its header")
    try:
        header = header_of(first)
    except RecordError as problem:
        raise LineError(1, str(problem)) from None
    totals = ImportTotals()
    for batch in import_batches(iterator, first_line=2):
        totals = totals.plus(import_batch(batch))
        if progress is not None:
            progress(totals.records, max(totals.records, header.counts.total))
    return totals

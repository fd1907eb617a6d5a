"""Splitting an uploaded NDJSON file (one fast-ingest item per line) into import chunks.

The file is read through a byte-range reader in bounded blocks, never whole. Each chunk is a
byte range of consecutive valid lines (blank lines may sit between them) that fits one
import chunk (`prme.model.imports`: at most `MAX_FAST_INGEST_ITEMS` items, `MAX_CHUNK_BYTES`
as JSON), with the SHA-256 of its bytes and the digest the import job records for its
items. Reading the range back (`chunk_items`) gives exactly the items split, or refuses a file
changed since. Every other line is a `LineProblem`: its number and a reason that never quotes
the line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from prme.errors import BadRequestError
from prme.model.imports import MAX_CHUNK_BYTES, chunk_digest, item_bytes
from prme.model.input_policy import MAX_BODY_DEPTH, InputPolicyError, check_json_value
from prme.model.inputs import MAX_FAST_INGEST_ITEMS, FastIngestItem

# Reads bytes [start, end) of the file: `UploadStore.read_range` bound to one upload.
RangeReader = Callable[[int, int], bytes]

ProblemReason = Literal[
    "not_utf8", "not_json", "json_limits", "invalid_item", "line_too_long", "item_too_large"
]

_BOM = b"\xef\xbb\xbf"
_BLANK = b" \t\r"
# A run of blank lines inside a chunk is remembered until the next item; past this, the chunk
# closes before them instead, so whitespace cannot grow what the splitter holds.
_MAX_HELD_BLANK_BYTES = 64 * 1024


@dataclass(frozen=True)
class SplitLimits:
    """How large a chunk and a line may be, and how many bad lines end a split."""

    # One chunk is committed as one fast-ingest transaction and travels as one message.
    max_items: int = MAX_FAST_INGEST_ITEMS
    # The chunk's items as the message carries them (`item_bytes` plus a comma each).
    max_item_bytes: int = MAX_CHUNK_BYTES
    # The chunk's range in the file, as read back in one request.
    max_bytes: int = 4 * 1024 * 1024
    # Any item the schema admits fits (100,000 characters of content, six bytes each at
    # worst as JSON escapes, and 16 KiB of metadata); a longer line is refused unread.
    max_line_bytes: int = 1024 * 1024
    # A file with more bad lines than this is not what its sender meant to import.
    max_problems: int = 100
    block_bytes: int = 1024 * 1024

    def __post_init__(self) -> None:
        if not 0 < self.max_line_bytes <= self.max_bytes:
            raise ValueError("a line must fit a chunk: 0 < max_line_bytes <= max_bytes")
        if self.max_items < 1 or self.block_bytes < 1 or self.max_problems < 0:
            raise ValueError("max_items and block_bytes must be positive")


@dataclass(frozen=True)
class LineProblem:
    """A line that is not an item; `detail` locates the fault by field names only. `item` is
    the line's item position (non-blank lines before it)."""

    line: int
    reason: ProblemReason
    detail: str
    item: int = 0


@dataclass(frozen=True)
class UploadChunk:
    """Bytes [start, end) of the file: lines first_line..last_line holding `items` items,
    the import's items `first_item` onwards (every non-blank line is an item position, a bad
    one included). `sha256` digests the bytes, `items_sha256` the items as the job records."""

    index: int
    start: int
    end: int
    first_line: int
    last_line: int
    first_item: int
    items: int
    sha256: str
    items_sha256: str


@dataclass
class ImportSplit:
    """What a split found: chunks in file order, bad lines, and the counts."""

    chunks: list[UploadChunk] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    # Non-blank lines: the import's item positions, bad lines included.
    lines: int = 0
    blank_lines: int = 0
    # True when the split stopped at `max_problems` bad lines; the chunks then stop there too.
    abandoned: bool = False

    @property
    def items(self) -> int:
        return sum(chunk.items for chunk in self.chunks)


@dataclass(frozen=True)
class _Line:
    number: int
    start: int
    end: int
    # The line's bytes with its line end; None when it ran past the limit (never kept).
    raw: bytes | None


def _lines(size: int, read: RangeReader, limits: SplitLimits) -> Iterator[_Line]:
    """Every line of the file, in order, reading one block at a time."""
    held = bytearray()
    too_long = False
    number, line_start, position = 1, 0, 0
    while position < size:
        block = read(position, min(position + limits.block_bytes, size))
        if not block:
            raise BadRequestError("The upload is shorter than its recorded size")
        if position == 0 and block.startswith(_BOM):
            # Windows tools write a byte order mark: not part of the first line.
            line_start = len(_BOM)
            block = block[len(_BOM) :]
            position = len(_BOM)
        offset = 0
        while offset < len(block):
            newline = block.find(b"\n", offset)
            piece_end = len(block) if newline < 0 else newline + 1
            if not too_long:
                held += block[offset:piece_end]
                if len(held) - (1 if newline >= 0 else 0) > limits.max_line_bytes:
                    too_long = True
                    held.clear()
            offset = piece_end
            if newline >= 0:
                end = position + piece_end
                yield _Line(number, line_start, end, None if too_long else bytes(held))
                held.clear()
                too_long = False
                number, line_start = number + 1, end
        position += len(block)
    if too_long or held:
        yield _Line(number, line_start, size, None if too_long else bytes(held))


def _reject_constant(_name: str) -> Any:
    raise InputPolicyError("numbers must be finite (no NaN or Infinity)")


def _field_names() -> frozenset[str]:
    schema = FastIngestItem.model_json_schema()
    models = [schema, *schema.get("$defs", {}).values()]
    return frozenset(name for model in models for name in model.get("properties", {}))


_FIELDS = _field_names()


def _location(parts: tuple[str | int, ...] | list[Any]) -> str:
    """A location as field names and positions; anything else is the sender's own key
    (metadata, an unknown field), which is content and shown as `*`."""
    return ".".join(
        str(part) if isinstance(part, int) or part in _FIELDS else "*" for part in parts
    )


def parse_line(text: bytes) -> FastIngestItem | LineProblem:
    """One non-blank line as an item, or why it is none (`line` 0: the caller numbers it)."""
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        return LineProblem(0, "not_utf8", "the line is not valid UTF-8")
    try:
        value = json.loads(decoded, parse_constant=_reject_constant)
        check_json_value(value, max_depth=MAX_BODY_DEPTH)
    except InputPolicyError as exc:
        where = _location(exc.path)
        return LineProblem(0, "invalid_item", f"{where + ': ' if where else ''}{exc.message}")
    except json.JSONDecodeError as exc:
        return LineProblem(0, "not_json", f"not JSON ({exc.msg} at column {exc.colno})")
    except RecursionError:
        return LineProblem(0, "json_limits", f"nests deeper than {MAX_BODY_DEPTH} levels")
    except ValueError:
        # Python refuses to convert integers of more than 4,300 digits.
        return LineProblem(0, "json_limits", "an integer is too long to read")
    if not isinstance(value, dict):
        return LineProblem(0, "invalid_item", "the line is not a JSON object")
    try:
        return FastIngestItem.model_validate(value)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = _location(first["loc"])
        return LineProblem(0, "invalid_item", f"{where + ': ' if where else ''}{first['type']}")


def _is_blank(raw: bytes) -> bool:
    return not raw.rstrip(b"\n").strip(_BLANK)


class _ChunkBuilder:
    """The chunk being filled: consecutive lines, with the blank lines since its last item
    held back until another item joins (or the chunk closes without them)."""

    def __init__(self, limits: SplitLimits, out: list[UploadChunk]) -> None:
        self._limits = limits
        self._out = out
        self._reset()

    def _reset(self) -> None:
        self._start = self._end = self._first = self._last = self._position = 0
        self._held: list[FastIngestItem] = []
        self._weight = 0
        self._digest = hashlib.sha256()
        self._blank: list[bytes] = []
        self._blank_bytes = 0

    def add_item(
        self, line: _Line, raw: bytes, item: FastIngestItem, weight: int, position: int
    ) -> None:
        if self._held:
            limits = self._limits
            if (
                len(self._held) >= limits.max_items
                or line.end - self._start > limits.max_bytes
                or self._weight + weight > limits.max_item_bytes
            ):
                self.close()
        if not self._held:
            self._start, self._first, self._position = line.start, line.number, position
        else:
            for blank in self._blank:
                self._digest.update(blank)
        self._blank, self._blank_bytes = [], 0
        self._digest.update(raw)
        self._end, self._last = line.end, line.number
        self._held.append(item)
        self._weight += weight

    def add_blank(self, raw: bytes) -> None:
        if not self._held:
            return
        self._blank_bytes += len(raw)
        if self._blank_bytes > _MAX_HELD_BLANK_BYTES:
            self.close()
            return
        self._blank.append(raw)

    def close(self) -> None:
        if self._held:
            self._out.append(
                UploadChunk(
                    index=len(self._out),
                    start=self._start,
                    end=self._end,
                    first_line=self._first,
                    last_line=self._last,
                    first_item=self._position,
                    items=len(self._held),
                    sha256=self._digest.hexdigest(),
                    items_sha256=chunk_digest(self._held),
                )
            )
        self._reset()


def split_upload(size: int, read: RangeReader, limits: SplitLimits | None = None) -> ImportSplit:
    """Chunks and bad lines of a file of `size` bytes; `read` may raise NotFoundError (the
    upload is gone) or StorageUnavailableError, which end the split."""
    limits = limits or SplitLimits()
    split = ImportSplit()
    builder = _ChunkBuilder(limits, split.chunks)
    for line in _lines(size, read, limits):
        if line.raw is not None and _is_blank(line.raw):
            split.blank_lines += 1
            builder.add_blank(line.raw)
            continue
        split.lines += 1
        if line.raw is None:
            parsed: FastIngestItem | LineProblem = LineProblem(
                0, "line_too_long", f"the line is longer than {limits.max_line_bytes} bytes"
            )
        else:
            parsed = parse_line(_line_text(line.raw))
        if isinstance(parsed, FastIngestItem):
            # As the import's own split weighs an item: its JSON and a comma.
            weight = item_bytes(parsed) + 1
            if weight <= limits.max_item_bytes:
                builder.add_item(line, line.raw or b"", parsed, weight, split.lines - 1)
                continue
            parsed = LineProblem(
                0,
                "item_too_large",
                f"the item is larger than {limits.max_item_bytes} bytes as JSON",
            )
        # A bad line ends the chunk: a chunk's range holds no byte of one.
        builder.close()
        if len(split.problems) >= limits.max_problems:
            split.abandoned = True
            return split
        split.problems.append(
            LineProblem(line.number, parsed.reason, parsed.detail, item=split.lines - 1)
        )
    builder.close()
    return split


def _line_text(raw: bytes) -> bytes:
    """A line without its end: `\\n`, and the `\\r` before it in a CRLF file."""
    text = raw[:-1] if raw.endswith(b"\n") else raw
    return text[:-1] if text.endswith(b"\r") else text


def chunk_items(data: bytes, chunk: UploadChunk) -> list[FastIngestItem]:
    """The items of a chunk from the bytes of its range, exactly as the split counted them.

    BadRequestError when the bytes are not the ones split (the upload was replaced since),
    so a chunk never commits items nobody validated."""
    if len(data) != chunk.end - chunk.start or hashlib.sha256(data).hexdigest() != chunk.sha256:
        raise BadRequestError("The upload changed after it was split; upload it to a new import")
    items: list[FastIngestItem] = []
    # Split on line feeds only: a lone carriage return is JSON whitespace inside a line.
    for raw in data.split(b"\n"):
        if _is_blank(raw):
            continue
        parsed = parse_line(_line_text(raw))
        if isinstance(parsed, LineProblem):
            raise BadRequestError("A chunk holds a line its split did not accept")
        items.append(parsed)
    if len(items) != chunk.items or chunk_digest(items) != chunk.items_sha256:
        raise BadRequestError("A chunk holds other items than its split counted")
    return items

"""The NDJSON splitter of uploaded imports: chunk bounds, per-line problems that never quote the
line, hostile files, and the consumer's read of a chunk back from its bytes."""

from __future__ import annotations

import json
import random
import tracemalloc
from dataclasses import replace

import pytest

from prme.engine.import_split import (
    ImportSplit,
    SplitLimits,
    chunk_items,
    split_upload,
)
from prme.errors import BadRequestError
from prme.model.imports import chunk_digest, item_bytes

SECRET = "s3cr3t-payload"


def item_line(i: int, *, end: bytes = b"\n", **extra: object) -> bytes:
    return json.dumps({"content": f"memory number {i}", **extra}).encode() + end


class Reads:
    """A byte-range reader over `data` that remembers the largest read it was asked for."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.largest = 0

    def __call__(self, start: int, end: int) -> bytes:
        self.largest = max(self.largest, end - start)
        return self.data[start:end]


def split(data: bytes, limits: SplitLimits | None = None) -> ImportSplit:
    return split_upload(len(data), Reads(data), limits)


def contents(data: bytes, result: ImportSplit) -> list[str]:
    """Every item's content, read back chunk by chunk as the consumer reads them."""
    return [
        item.content
        for chunk in result.chunks
        for item in chunk_items(data[chunk.start : chunk.end], chunk)
    ]


def test_chunks_hold_at_most_the_item_limit_and_cover_every_item_in_order() -> None:
    data = b"".join(item_line(i) for i in range(120))

    result = split(data, SplitLimits(max_items=49))

    assert [c.items for c in result.chunks] == [49, 49, 22]
    assert [(c.first_line, c.last_line) for c in result.chunks] == [(1, 49), (50, 98), (99, 120)]
    assert contents(data, result) == [f"memory number {i}" for i in range(120)]
    assert (result.lines, result.items, result.problems) == (120, 120, [])


def test_chunks_stay_within_the_byte_limit() -> None:
    data = b"".join(item_line(i, metadata={"pad": "x" * (i % 7) * 300}) for i in range(200))
    limits = SplitLimits(max_items=49, max_bytes=8_000, max_line_bytes=4_000)

    result = split(data, limits)

    assert all(c.end - c.start <= 8_000 for c in result.chunks)
    assert result.items == 200
    assert contents(data, result) == [f"memory number {i}" for i in range(200)]


def test_crlf_files_a_byte_order_mark_and_a_last_line_without_newline_read_as_items() -> None:
    data = (
        b"\xef\xbb\xbf"
        + item_line(0, end=b"\r\n")
        + item_line(1, end=b"\r\n")
        + item_line(2, end=b"")
    )

    result = split(data)

    assert result.problems == []
    assert result.chunks[0].start == 3
    assert contents(data, result) == ["memory number 0", "memory number 1", "memory number 2"]


def test_a_ten_megabyte_line_is_reported_and_skipped_without_being_held() -> None:
    huge = b'{"content": "' + b"y" * 10_000_000 + b'"}\n'
    data = item_line(0) + huge + item_line(2)
    reads = Reads(data)
    limits = SplitLimits(block_bytes=256 * 1024)

    tracemalloc.start()
    result = split_upload(len(data), reads, limits)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    assert [(p.line, p.reason) for p in result.problems] == [(2, "line_too_long")]
    assert contents(data, result) == ["memory number 0", "memory number 2"]
    # Bounded by one block and one line's limit, not by the line: the file is 10 MB.
    assert reads.largest <= 256 * 1024
    assert peak < 3 * 1024 * 1024


def test_blank_lines_are_skipped_and_kept_inside_a_chunk_only_between_items() -> None:
    data = b"\n  \n" + item_line(0) + b"\r\n\t\n" + item_line(1) + b"\n \n"

    result = split(data)

    assert (result.lines, result.blank_lines, result.items) == (2, 6, 2)
    (chunk,) = result.chunks
    assert data[chunk.start : chunk.end] == item_line(0) + b"\r\n\t\n" + item_line(1)
    assert contents(data, result) == ["memory number 0", "memory number 1"]


@pytest.mark.parametrize("data", [b"", b"\n\n \r\n", b"\xef\xbb\xbf"])
def test_an_empty_file_has_no_chunks_and_no_problems(data: bytes) -> None:
    result = split(data)
    assert (result.chunks, result.problems, result.lines, result.items) == ([], [], 0, 0)


def test_each_bad_line_is_reported_by_number_and_reason_never_by_its_content() -> None:
    bad_lines = [
        b"\xff\xfe" + SECRET.encode(),  # not UTF-8
        b'{"content": "' + SECRET.encode(),  # cut off
        json.dumps([SECRET]).encode(),  # JSON, not an object
        json.dumps({"content": SECRET, SECRET: 1}).encode(),  # a field the schema lacks
        json.dumps({"content": SECRET, "metadata": {SECRET: float("nan")}}).encode(),
        json.dumps({"content": SECRET, "role": SECRET}).encode(),
        json.dumps({"content": ""}).encode(),
        b'{"content": "' + SECRET.encode() + b'", "metadata": {"n": 1' + b"0" * 5000 + b"}}",
        b"[" * 5000 + b"]" * 5000,
    ]
    data = b"".join(item_line(i) + bad + b"\n" for i, bad in enumerate(bad_lines))

    result = split(data)

    assert [(p.line, p.reason) for p in result.problems] == [
        (2, "not_utf8"),
        (4, "not_json"),
        (6, "invalid_item"),
        (8, "invalid_item"),
        (10, "invalid_item"),
        (12, "invalid_item"),
        (14, "invalid_item"),
        (16, "json_limits"),
        (18, "json_limits"),
    ]
    details = [p.detail for p in result.problems]
    assert not [d for d in details if SECRET in d]
    assert details[3] == "*: extra_forbidden"
    assert details[5] == "role: enum"
    assert details[6] == "content: string_too_short"
    # The bad lines split the file into chunks whose ranges hold none of their bytes.
    assert [c.items for c in result.chunks] == [1] * len(bad_lines)
    assert contents(data, result) == [f"memory number {i}" for i in range(len(bad_lines))]


def test_a_file_of_mostly_bad_lines_is_abandoned_at_the_problem_limit() -> None:
    data = b"".join(b"not json\n" if i % 2 else item_line(i) for i in range(40))

    result = split(data, SplitLimits(max_problems=5))

    assert result.abandoned
    assert [p.line for p in result.problems] == [2, 4, 6, 8, 10]
    assert result.items == 6


def test_reading_a_chunk_of_changed_bytes_is_refused() -> None:
    data = b"".join(item_line(i) for i in range(3))
    (chunk,) = split(data).chunks
    changed = data.replace(b"number 1", b"number 7")

    with pytest.raises(BadRequestError):
        chunk_items(changed[chunk.start : chunk.end], chunk)
    with pytest.raises(BadRequestError):
        chunk_items(data[chunk.start : chunk.end], replace(chunk, items=4))


def test_the_split_is_the_same_whatever_the_block_size() -> None:
    rng = random.Random(19)
    pieces = [
        item_line(0, end=b"\r\n"),
        item_line(1, metadata={"k": "\u00e9\u4e2d" * 40}),
        b"\n",
        b"garbage\n",
        b'{"content": "' + b"z" * 900 + b'"}\n',
        b"\xc3\n",
    ]
    data = (
        b"\xef\xbb\xbf" + b"".join(rng.choice(pieces) for _ in range(300)) + item_line(9, end=b"")
    )
    limits = SplitLimits(max_items=7, max_bytes=3_000, max_line_bytes=800, max_problems=1_000)

    reference = split(data, limits)
    assert reference.problems and reference.items > 50

    for block in (1, 2, 3, 5, 64, 999, 4096):
        assert split(data, replace(limits, block_bytes=block)) == reference, block
    assert contents(data, reference)[-1] == "memory number 9"


def test_limits_that_cannot_hold_a_line_are_refused() -> None:
    with pytest.raises(ValueError, match="a line must fit a chunk"):
        SplitLimits(max_bytes=1_000, max_line_bytes=2_000)


def test_chunks_fit_an_import_message_and_say_which_items_they_hold() -> None:
    big = {"pad": "\u00e9" * 4_000}  # 8 KB as UTF-8 JSON, as the import's messages weigh it
    lines = [item_line(i, metadata=big) for i in range(40)]
    lines.insert(5, b"not json\n")
    lines.insert(9, b"\n")
    data = b"".join(lines)
    limits = SplitLimits(max_item_bytes=50_000)

    result = split(data, limits)

    for chunk in result.chunks:
        items = chunk_items(data[chunk.start : chunk.end], chunk)
        assert sum(item_bytes(item) + 1 for item in items) <= 50_000
        assert chunk.items_sha256 == chunk_digest(items)
    # Item positions count every non-blank line, the bad one too; the blank line none.
    firsts = [c.first_item for c in result.chunks]
    assert firsts[:3] == [0, 6, 12]  # 5 items, the bad line, then 6 a chunk (8 KB each)
    assert [p.line for p in result.problems] == [6]
    assert sum(c.items for c in result.chunks) == 40


def test_an_item_too_large_for_one_message_is_a_problem_of_its_line() -> None:
    data = item_line(0) + item_line(1, metadata={"pad": "x" * 10_000}) + item_line(2)

    result = split(data, SplitLimits(max_item_bytes=5_000))

    assert [(p.line, p.reason) for p in result.problems] == [(2, "item_too_large")]
    assert contents(data, result) == ["memory number 0", "memory number 2"]

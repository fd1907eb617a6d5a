"""Loading stored record bodies: one that fails to parse is quarantined, never let through.

A read of one record raises `CorruptRecordError`; a read of many leaves the unreadable ones
out and logs their ids, so one bad record cannot fail every read of its owner. The body and
the parser's message (which quotes the body) are never logged or raised.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from prme.errors import CorruptRecordError

logger = logging.getLogger("prme.ledger")

# The stored status of a work item whose body cannot be loaded: out of every pending list.
QUARANTINED_WORK_STATUS = "quarantined"

RecordT = TypeVar("RecordT", bound=BaseModel)


def load_record(model: type[RecordT], kind: str, record_id: str, body: str) -> RecordT:
    """The record a stored body holds; CorruptRecordError when it cannot be loaded."""
    try:
        return model.model_validate_json(body)
    except (ValidationError, ValueError, RecursionError):
        # `from None`: the validation error quotes the body, which is untrusted content.
        raise CorruptRecordError(kind, record_id) from None


def load_readable(
    model: type[RecordT], kind: str, stored: Iterable[tuple[str, ...]]
) -> list[RecordT]:
    """The records among `(record_id, body)` pairs that load, in order; the rest are logged."""
    return split_readable(model, kind, stored)[0]


def split_readable(
    model: type[RecordT], kind: str, stored: Iterable[tuple[str, ...]]
) -> tuple[list[RecordT], list[str]]:
    """`load_readable`, and the ids of the records that did not load. Rows may carry more
    columns after the id and body."""
    loaded: list[RecordT] = []
    unreadable: list[str] = []
    for record_id, body, *_ in stored:
        try:
            loaded.append(load_record(model, kind, record_id, body))
        except CorruptRecordError as exc:
            log_quarantined(exc)
            unreadable.append(record_id)
    return loaded, unreadable


def log_quarantined(error: CorruptRecordError) -> None:
    logger.warning("unreadable %s record %s skipped (quarantined)", error.kind, error.record_id)

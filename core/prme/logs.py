"""Structured JSON logs written by a background thread, for the processes PRME itself runs.

Only a composition root (`prme serve`) installs this, and only on PRME's own named loggers:
the root logger belongs to whoever runs the process."""

from __future__ import annotations

import copy
import json
import logging
import queue
import sys
import traceback
from contextvars import ContextVar
from datetime import UTC, datetime
from logging.handlers import QueueHandler, QueueListener
from types import TracebackType
from typing import Any, TextIO

# Set by the HTTP request middleware; log records made while serving a request carry it.
current_request_id: ContextVar[str | None] = ContextVar("prme_request_id", default=None)

# The only extra record attributes a line may carry: identifiers and measurements, so that
# memory content, bodies and secrets cannot reach a log through `extra=`.
LOGGED_FIELDS = (
    "request_id",
    "method",
    "route",
    "status",
    "duration_ms",
    "tenant_id",
    "key_id",
    "role",
)


class JsonFormatter(logging.Formatter):
    """One JSON object per line. Exceptions are logged by type and stack frames only: an
    exception's message can quote the input that caused it, which may be memory content."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in LOGGED_FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                line[field] = value
        if record.exc_info and record.exc_info[0] is not None:
            line["error"] = {
                "type": record.exc_info[0].__qualname__,
                "frames": exception_frames(record.exc_info),
            }
        return json.dumps(line, ensure_ascii=True, default=str)


ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]


def exception_frames(exc_info: ExcInfo) -> list[str]:
    return [
        f"{frame.filename}:{frame.lineno} in {frame.name}"
        for frame in traceback.extract_tb(exc_info[2])
    ]


def exception_text(exc_info: ExcInfo) -> str:
    """A traceback without the exception's message, for formatters that take text."""
    if exc_info[0] is None:
        return ""
    return "\n".join([*exception_frames(exc_info), exc_info[0].__qualname__])


class DeferredQueueHandler(QueueHandler):
    """Hands records to a queue without formatting them.

    The standard QueueHandler formats (tracebacks included) in the thread that logged, which
    for the API is the event loop; here the listener thread does all of it."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        handed_over = copy.copy(record)
        if getattr(handed_over, "request_id", None) is None:
            handed_over.request_id = current_request_id.get()
        return handed_over


def start_json_logging(
    logger_names: tuple[str, ...] = ("prme",),
    *,
    stream: TextIO | None = None,
    level: int = logging.INFO,
) -> QueueListener:
    """Send the named loggers' records, as JSON lines, to `stream` (stderr) from a background
    thread. The caller stops the returned listener at shutdown to flush what is queued."""
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    output = logging.StreamHandler(stream if stream is not None else sys.stderr)
    output.setFormatter(JsonFormatter())
    listener = QueueListener(records, output, respect_handler_level=True)
    handler = DeferredQueueHandler(records)
    for name in logger_names:
        named = logging.getLogger(name)
        named.handlers = [handler]
        named.setLevel(level)
        # Whatever a library put on the root logger must not format our records again.
        named.propagate = False
    listener.start()
    return listener

"""The one input policy of every surface: bounded JSON, finite numbers and valid Unicode.

HTTP bodies, MCP tool arguments and the inputs of `MemoryClient` all pass through these
functions before anything is read into the engine, so a value the storage or the read path
could not digest later is refused up front, with a location and never with the value.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable
from typing import Any

# A request body nests a few levels above its metadata (batch -> item -> metadata).
MAX_BODY_DEPTH = 48
MAX_METADATA_DEPTH = 32
# Integers beyond 2**53 lose digits in most JSON readers (and in DynamoDB past 38 digits).
MAX_SAFE_INTEGER = 2**53 - 1
# Embedded serving's limit on a request body.
DEFAULT_MAX_BODY_BYTES = 5 * 1024 * 1024
# AWS Lambda's limit on a synchronous invocation's payload, each way (6 MB): the API Gateway
# event that wraps a request body, and the handler's JSON-encoded return value.
LAMBDA_PAYLOAD_BYTES = 6_291_456
# The body limit the stack gives the api function: every body it accepts fits the invoke
# payload however API Gateway carries it. A body of a non-text type is base64-encoded (4/3); a
# JSON body is escaped inside the event's JSON, at most 3 times larger (an emoji's 4 bytes
# become a 12-byte escape if the event is ASCII-escaped); 64 KiB is left for the request line
# and headers (HTTP APIs cap them at 10 KiB) and the copies of them the event carries.
LAMBDA_MAX_BODY_BYTES = 2_000_000
# How much of a caller's text an error message may quote.
EXCERPT_CHARS = 64

# Categories a name must never contain: controls, format characters (zero-width, bidi),
# surrogates, private use, unassigned code points and line or paragraph separators.
_NAME_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


class InputPolicyError(ValueError):
    """A value breaks the input policy; `path` locates it inside the checked value."""

    def __init__(self, message: str, path: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


def text_problem(value: str) -> str | None:
    """Why a string cannot be kept as valid UTF-8 text, or None when it can."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (no lone surrogates)"
    return None


def check_text(value: str) -> str:
    """A pydantic validator: text that every store and encoder can keep byte for byte."""
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def check_name(value: str) -> str:
    """A pydantic validator for identifiers shown to people (speaker, session): no control,
    format or other invisible characters, so two names that look alike are alike."""
    check_text(value)
    for char in value:
        if unicodedata.category(char) in _NAME_FORBIDDEN_CATEGORIES:
            raise ValueError(
                f"must not contain control, format or invisible characters (U+{ord(char):04X})"
            )
    return value


def check_json_value(value: Any, *, max_depth: int) -> None:
    """Raise InputPolicyError unless `value` is plain JSON within `max_depth` levels, with
    finite numbers, safe integers and valid text in every key and string.

    Iterative, so a hostile depth costs a bounded loop rather than the interpreter's stack.
    Linear with few allocations per value: a 5 MiB body holds millions of values and is
    checked before authentication, so a location is built only for a container or a fault.
    """
    if not isinstance(value, dict | list | tuple):
        problem = _scalar_problem(value)
        if problem is not None:
            raise InputPolicyError(problem)
        return
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        container, path = stack.pop()
        if len(path) >= max_depth:
            raise InputPolicyError(f"nests deeper than {max_depth} levels", path)
        for step, child in _steps(container, path):
            if isinstance(child, dict | list | tuple):
                if child:
                    stack.append((child, (*path, _location(step))))
                elif len(path) + 1 >= max_depth:
                    raise InputPolicyError(
                        f"nests deeper than {max_depth} levels", (*path, _location(step))
                    )
                continue
            if type(child) is int and -MAX_SAFE_INTEGER <= child <= MAX_SAFE_INTEGER:
                continue  # the most common value of a hostile body, checked without a call
            problem = _scalar_problem(child)
            if problem is not None:
                raise InputPolicyError(problem, (*path, _location(step)))


def _steps(
    container: dict[Any, Any] | list[Any] | tuple[Any, ...], path: tuple[str | int, ...]
) -> Iterable[tuple[Any, Any]]:
    """A container's (key or index, child) pairs, once its keys are known to be valid text."""
    if not isinstance(container, dict):
        return enumerate(container)
    for key in container:
        if not isinstance(key, str):
            raise InputPolicyError("object keys must be strings", path)
        problem = text_problem(key)
        if problem is not None:
            raise InputPolicyError(f"object key {problem}", path)
    return container.items()


def _location(step: str | int) -> str | int:
    return excerpt(step) if isinstance(step, str) else step


def _scalar_problem(item: Any) -> str | None:
    if isinstance(item, str):
        return text_problem(item)
    if item is None or isinstance(item, bool):
        return None
    if isinstance(item, int):
        if abs(item) > MAX_SAFE_INTEGER:
            return f"integers must be within +/-{MAX_SAFE_INTEGER} (use a string)"
        return None
    if isinstance(item, float):
        return None if math.isfinite(item) else "numbers must be finite (no NaN or Infinity)"
    return f"{type(item).__name__} is not a JSON value"


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A short, always-encodable quotation of caller text for error messages and locations."""
    safe = text.encode("utf-8", "replace").decode("utf-8")
    safe = "".join(ch if ch.isprintable() else "\N{REPLACEMENT CHARACTER}" for ch in safe[:limit])
    return safe + ("..." if len(text) > limit else "")

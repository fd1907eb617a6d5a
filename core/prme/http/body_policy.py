"""The HTTP edge of the input policy: bodies bounded while they are read, then checked, and
query strings that are not UTF-8 refused.

A pure ASGI middleware, outermost in the app, so it runs before routing, parsing and
authentication: an oversized body is refused (413) from its Content-Length or as soon as
the bytes read pass the limit, and a JSON body that breaks `prme.model.input_policy`
(depth, NaN or Infinity, unsafe integers, invalid Unicode) is refused (422) before any
route sees it. A query parameter whose percent-decoded bytes are not UTF-8 (a lone surrogate
encoded as bytes, Latin-1 text) is refused (422) too, where the framework would otherwise
replace them with U+FFFD and search, filter or name by text nobody sent. Every surface behind it
(REST routes and /mcp) is covered at once.
"""

from __future__ import annotations

import email.message
import json
import re
from typing import Any
from urllib.parse import unquote_to_bytes

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from prme.model.input_policy import (
    DEFAULT_MAX_BODY_BYTES,
    MAX_BODY_DEPTH,
    InputPolicyError,
    check_json_value,
    excerpt,
)


def _reject_constant(_name: str) -> Any:
    raise InputPolicyError("numbers must be finite (no NaN or Infinity)")


def _is_json(scope: Scope) -> bool:
    """Whether the app behind will parse this body as JSON: the same reading of the
    Content-Type as FastAPI's (an email-style parse, `application/json` or `+json`), so no
    spelling of the header reaches the JSON parser without passing the policy first."""
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            message = email.message.Message()
            message["content-type"] = value.decode("latin-1")
            subtype = message.get_content_subtype()
            return message.get_content_maintype() == "application" and (
                subtype == "json" or subtype.endswith("+json")
            )
    return False


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def policy_problem(body: bytes) -> tuple[str, tuple[str | int, ...]] | None:
    """Why a JSON body breaks the input policy (message, location), or None.

    Plain syntax errors are left to the surface behind (FastAPI's 422, MCP's parse error):
    only what those would mishandle (NaN, lone surrogates, depth, huge integers) stops here.
    """
    try:
        value = json.loads(body, parse_constant=_reject_constant)
    except InputPolicyError as exc:
        return exc.message, exc.path
    except RecursionError:
        return f"nests deeper than {MAX_BODY_DEPTH} levels", ()
    except UnicodeDecodeError:
        return "must be UTF-8 encoded", ()
    except json.JSONDecodeError:
        return None
    except ValueError:
        # Python refuses to convert integers of more than 4,300 digits.
        return "integers must be within the safe range (use a string)", ()
    try:
        check_json_value(value, max_depth=MAX_BODY_DEPTH)
    except InputPolicyError as exc:
        return exc.message, exc.path
    return None


def query_problem(query_string: bytes) -> tuple[str, str] | None:
    """Why a raw query string cannot be read as UTF-8 text (message, parameter), or None."""
    for pair in query_string.split(b"&"):
        name, _, value = pair.partition(b"=")
        for part in (name, value):
            try:
                unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError:
                shown = unquote_to_bytes(name).decode("utf-8", "replace")
                return "must be UTF-8 encoded", excerpt(shown)
    return None


class BodyPolicyMiddleware:
    """Refuse bodies over `max_body_bytes` (413) and JSON that breaks the input policy (422)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        streamed_puts: re.Pattern[str] | None = None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        # PUT paths whose route reads and bounds its own body (an import's file upload).
        self.streamed_puts = streamed_puts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = scope.get("query_string", b"") if scope["type"] == "http" else b""
        if query and (fault := query_problem(query)) is not None:
            reason, name = fault
            detail = [{"loc": ["query", name], "msg": reason, "type": "value_error"}]
            await _send_json(send, 422, {"detail": detail})
            return
        if scope["type"] != "http" or scope["method"] in {"GET", "HEAD", "OPTIONS"}:
            await self.app(scope, receive, send)
            return
        if (
            self.streamed_puts is not None
            and scope["method"] == "PUT"
            and self.streamed_puts.fullmatch(scope["path"])
        ):
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await self._too_large(send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await self._too_large(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body and _is_json(scope):
            # Checking a few MiB of small values takes CPU seconds, and it happens before
            # authentication: off the event loop, so one caller cannot stall every other.
            problem = await anyio.to_thread.run_sync(policy_problem, body)
            if problem is not None:
                message_text, path = problem
                await _send_json(
                    send,
                    422,
                    {
                        "detail": [
                            {"loc": ["body", *path], "msg": message_text, "type": "value_error"}
                        ]
                    },
                )
                return
        await self.app(scope, _replay(body, receive), send)

    async def _too_large(self, send: Send) -> None:
        await _send_json(
            send,
            413,
            {
                "detail": f"Request body larger than {self.max_body_bytes} bytes; nothing was written"
            },
        )


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive channel that hands the app the body already read, then the real channel."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _send_json(send: Send, status: int, content: dict[str, Any]) -> None:
    payload = json.dumps(content, ensure_ascii=True).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})

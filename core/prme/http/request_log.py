"""One structured log line per HTTP request (id, route, status, duration, tenant, key), and the
request id returned to the caller in `X-Request-Id`. Bodies, query strings and headers other
than a well-formed inbound request id are never read into the log."""

from __future__ import annotations

import logging
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from prme.engine.identity import Principal
from prme.logs import current_request_id

access_logger = logging.getLogger("prme.http.access")

REQUEST_ID_HEADER = "X-Request-Id"
# An inbound id is echoed into logs and headers, so only a short plain token is taken.
_INBOUND_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_STATE_KEY = "prme_request"


@dataclass
class RequestRecord:
    """What the log line of one request says about who called; the auth step fills it in."""

    request_id: str
    tenant_id: str | None = None
    key_id: str | None = None
    role: str | None = None


def _record_of(scope: Scope) -> RequestRecord | None:
    state = scope.get("state")
    record = state.get(_STATE_KEY) if isinstance(state, dict) else None
    return record if isinstance(record, RequestRecord) else None


def note_caller(scope: Scope, principal: Principal) -> None:
    """Called by authentication, which may run on a worker thread: the record is shared through
    the request's scope, not a context variable, so the middleware sees what was noted."""
    record = _record_of(scope)
    if record is not None:
        record.tenant_id = principal.tenant_id
        record.key_id = principal.key_id
        record.role = principal.role.value


def request_id_of(scope: Scope) -> str | None:
    record = _record_of(scope)
    return record.request_id if record is not None else None


class RequestLogMiddleware:
    """Pure ASGI, so streamed responses pass through unbuffered."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        inbound = Headers(scope=scope).get(REQUEST_ID_HEADER)
        request_id = (
            inbound
            if inbound is not None and _INBOUND_REQUEST_ID.fullmatch(inbound)
            else uuid.uuid4().hex
        )
        record = RequestRecord(request_id)
        scope.setdefault("state", {})[_STATE_KEY] = record
        # An unhandled error is answered outside this middleware: 500 unless a response started.
        status = 500
        header = (REQUEST_ID_HEADER.lower().encode("latin-1"), request_id.encode("latin-1"))

        async def send_with_request_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        started = time.perf_counter()
        token = current_request_id.set(request_id)
        try:
            await self.app(scope, receive, send_with_request_id)
        finally:
            current_request_id.reset(token)
            access_logger.info("request", extra=_line(scope, record, status, started))


def _line(scope: Scope, record: RequestRecord, status: int, started: float) -> dict[str, Any]:
    route = scope.get("route")
    return {
        "request_id": record.request_id,
        "method": scope.get("method"),
        # The route's template, not the path: no query string, nothing the caller typed.
        "route": getattr(route, "path", None),
        "status": status,
        "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        "tenant_id": record.tenant_id,
        "key_id": record.key_id,
        "role": record.role,
    }

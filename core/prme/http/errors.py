"""HTTP error handlers: PRME errors become their status and sanitized body (`prme.errors`).

The handlers that log are plain functions, so Starlette runs them on a worker thread: logging
an error (formatting a traceback, or whatever handler a library put on the root logger) never
holds up the event loop that serves every other request."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from prme.errors import (
    PrmeError,
    RateLimitedError,
    public_body,
    status_for,
    validation_details,
)
from prme.http.request_log import REQUEST_ID_HEADER, request_id_of

logger = logging.getLogger("prme.http")


def _prme_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, PrmeError)  # noqa: S101 - registered for PrmeError only
    status = status_for(exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if isinstance(exc, RateLimitedError) and exc.retry_after_s is not None:
        headers = {"Retry-After": str(exc.retry_after_s)}
    body = public_body(exc)
    if status >= 500:
        # The cause may hold provider text; it goes to the log, never to the response.
        logger.warning("request failed: %s", type(exc).__name__, exc_info=exc.__cause__)
    return JSONResponse(status_code=status, content=body, headers=headers)


async def _invalid_request(_request: Request, exc: Exception) -> JSONResponse:
    # FastAPI's own handler echoes each rejected input: a 100 MB field came back twice, and
    # an input JSON cannot encode (a lone surrogate) turned the 422 into a 500.
    assert isinstance(exc, RequestValidationError)  # noqa: S101 - registered for it only
    return JSONResponse(status_code=422, content={"detail": validation_details(list(exc.errors()))})


def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    request_id = request_id_of(request.scope)
    logger.error("unhandled error", exc_info=exc, extra={"request_id": request_id})
    # Answered outside the request-log middleware, so the request id is added here.
    headers = {REQUEST_ID_HEADER: request_id} if request_id is not None else None
    return JSONResponse(
        status_code=500, content={"detail": "Internal server error"}, headers=headers
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(PrmeError, _prme_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(Exception, _unexpected_error)

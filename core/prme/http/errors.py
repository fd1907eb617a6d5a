"""The one place that maps PRME errors to HTTP statuses and sanitized bodies."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from prme.errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    EmbeddingUnavailableError,
    IndexUnavailableError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PrmeError,
    ProcessingIncompleteError,
    StorageUnavailableError,
    ValueBindingResolutionError,
)

logger = logging.getLogger("prme.http")

STATUS_BY_ERROR: list[tuple[type[PrmeError], int]] = [
    (InvalidRequestError, 422),
    (BadRequestError, 400),
    (ValueBindingResolutionError, 400),
    (AuthenticationError, 401),
    (PermissionDeniedError, 403),
    (NotFoundError, 404),
    (ConflictError, 409),
    (PayloadTooLargeError, 413),
    (StorageUnavailableError, 503),
    (IndexUnavailableError, 503),
    (EmbeddingUnavailableError, 503),
    (ProcessingIncompleteError, 503),
]


def status_for(error: PrmeError) -> int:
    for cls, status in STATUS_BY_ERROR:
        if isinstance(error, cls):
            return status
    return 500


async def _prme_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, PrmeError)  # noqa: S101 - registered for PrmeError only
    status = status_for(exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if isinstance(exc, ProcessingIncompleteError):
        body: dict[str, object] = {
            "detail": exc.detail,
            "event_id": exc.event_id,
            "reason_code": exc.reason_code,
            "accepted": True,
        }
    elif isinstance(exc, InvalidRequestError):
        body = {"detail": exc.errors()}
    else:
        body = {"detail": exc.detail}
    if status >= 500:
        # The cause may hold provider text; it goes to the log, never to the response.
        logger.warning("request failed: %s", type(exc).__name__, exc_info=exc.__cause__)
    return JSONResponse(status_code=status, content=body, headers=headers)


async def _unexpected_error(_request: Request, exc: Exception) -> JSONResponse:
    logger.error("unhandled error", exc_info=exc)
    return JSONResponse(status_code=500, content={"detail": "Internal server error"})


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(PrmeError, _prme_error)
    app.add_exception_handler(Exception, _unexpected_error)

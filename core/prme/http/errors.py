"""HTTP error handlers: PRME errors become their status and sanitized body (`prme.errors`)."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from prme.errors import PrmeError, public_body, status_for, validation_details

logger = logging.getLogger("prme.http")


async def _prme_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, PrmeError)  # noqa: S101 - registered for PrmeError only
    status = status_for(exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
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


async def _unexpected_error(_request: Request, exc: Exception) -> JSONResponse:
    logger.error("unhandled error", exc_info=exc)
    return JSONResponse(status_code=500, content={"detail": "Internal server error"})


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(PrmeError, _prme_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(Exception, _unexpected_error)

"""The HTTP transports of the clients: a call becomes its route's request (method and path
from the operations table), the answer its response model, an error status the `prme.errors`
class the server raised; retries reuse the call's Idempotency-Key."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import cache
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from prme.client_calls import Call
from prme.errors import (
    OperationNotServedError,
    PrmeError,
    ServerUnreachableError,
    error_from_response,
)
from prme.operations import BY_NAME, HttpRoute, Operation

Result = TypeVar("Result")

# Statuses that say "not now": a gateway or the server shedding load before doing the work.
RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Of those, the ones a server answers before it starts the work, so repeating is safe for
# any call; a 502/504 may come after the work was done.
REFUSED_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    """How a remote client retries: at most `attempts` tries in all; the wait before retry n
    is min(max_delay, base_delay * 2**(n-1)) with jitter, or the server's Retry-After when it
    gives one (capped by max_delay)."""

    attempts: int = 4
    base_delay: float = 0.25
    max_delay: float = 8.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("attempts must be at least 1 and delays not negative")

    def delay(self, retry: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(self.max_delay, max(0.0, retry_after))
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        # Jitter spreads the retries of many clients that failed at the same moment.
        jitter: float = random.uniform(0.5, 1.0)  # noqa: S311 - not for security
        return backoff * jitter


NO_RETRIES = RetryPolicy(attempts=1)


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """A Retry-After header's wait: delta-seconds or an HTTP date; None when absent or unreadable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class HttpRequest:
    """One call as bytes on the wire go: method, path, query, JSON body and headers."""

    method: str
    path: str
    params: dict[str, Any]
    json: Any
    headers: dict[str, str]
    # Whether sending it twice does what sending it once does (so a lost answer may be retried).
    repeatable: bool


def _route_of(operation: Operation) -> HttpRoute:
    if operation.http is None:
        raise OperationNotServedError(
            f"{operation.name} is served in-process only; call it with an embedded client"
        )
    return operation.http


def http_request(call: Call[Any]) -> HttpRequest:
    """The request that carries `call`; a write that takes an Idempotency-Key gets one here,
    once per call, so every retry of it sends the same key."""
    operation = BY_NAME[call.operation]
    route = _route_of(operation)
    path = route.path.format(**{name: quote(value, safe="") for name, value in call.path.items()})
    params = _wire(call.query) if call.query is not None else {}
    body = call.body.model_dump(mode="json", exclude_unset=True) if call.body is not None else None
    if call.user_id is not None and "user_id" not in (body or {}) and "user_id" not in params:
        params["user_id"] = call.user_id
    headers: dict[str, str] = {}
    key = call.idempotency_key
    if route.idempotency_key:
        key = key or str(uuid.uuid4())
        headers["Idempotency-Key"] = key
    read_only = operation.mcp is not None and operation.mcp.read_only
    repeatable = route.method != "POST" or key is not None or read_only
    return HttpRequest(route.method, path, params, body, headers, repeatable)


def _wire(query: BaseModel | Any) -> dict[str, Any]:
    if isinstance(query, BaseModel):
        fields: dict[str, Any] = query.model_dump(mode="json", exclude_none=True)
    else:
        fields = {name: value for name, value in dict(query).items() if value is not None}
    return {name: _query_text(value) for name, value in fields.items()}


def _query_text(value: Any) -> Any:
    # Query strings spell booleans as the server's parser reads them.
    return ("true" if value else "false") if isinstance(value, bool) else value


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(BY_NAME[name].response)


def parsed(call: Call[Result], response: httpx.Response) -> Result:
    """The call's result from a 2xx answer, or the error an error answer stands for."""
    if response.status_code >= 400:
        raise error_from_response(response.status_code, _json_or_none(response))
    try:
        result: Result = _adapter(call.operation).validate_json(response.content)
    except ValidationError:
        # The answer is not what this client's version of the operation returns.
        raise PrmeError(
            f"The server's answer to {call.operation} has an unexpected shape"
        ) from None
    return result


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _retry_wait(
    policy: RetryPolicy, request: HttpRequest, attempt: int, response: httpx.Response
) -> float | None:
    """How long to wait before trying `request` again after `response`, or None: no retry."""
    status = response.status_code
    if attempt >= policy.attempts or status not in RETRY_STATUSES:
        return None
    if status not in REFUSED_STATUSES and not request.repeatable:
        return None
    body = _json_or_none(response)
    # A 503 that says the source was kept is an answer, not a refusal.
    if isinstance(body, dict) and body.get("accepted") is True:
        return None
    retry_after = retry_after_seconds(response.headers.get("Retry-After"))
    if status == 429 and retry_after is not None and retry_after > policy.max_delay:
        # A tenant's limit that resets later than the policy would wait (the day's
        # retrievals): retrying sooner is refused again, so the caller hears it now.
        return None
    return policy.delay(attempt, retry_after)


def _transport_wait(
    policy: RetryPolicy, request: HttpRequest, attempt: int, error: httpx.TransportError
) -> float:
    """The wait before retrying after a transport failure; raises when none is allowed."""
    # A refused connection sent nothing; any other failure may have reached the server.
    sent_nothing = isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)
    if attempt >= policy.attempts or not (sent_nothing or request.repeatable):
        raise ServerUnreachableError(
            f"{ServerUnreachableError.default_detail} ({type(error).__name__})"
        ) from None
    return policy.delay(attempt, None)


def _base_headers(api_key: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": "prme-client"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


class HttpTransport:
    """Calls over HTTP with a blocking httpx client."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        timeout: float,
        retries: RetryPolicy,
        wire: httpx.BaseTransport | None = None,
    ) -> None:
        self._retries = retries
        # `wire` replaces the network (tests answer from memory); None is httpx's default.
        self._http = httpx.Client(
            base_url=base_url, headers=_base_headers(api_key), timeout=timeout, transport=wire
        )

    def run(self, call: Call[Result]) -> Result:
        request = http_request(call)
        attempt = 1
        while True:
            try:
                response = self._http.request(
                    request.method,
                    request.path,
                    params=request.params,
                    json=request.json,
                    headers=request.headers,
                )
            except httpx.TransportError as error:
                time.sleep(_transport_wait(self._retries, request, attempt, error))
            else:
                wait = _retry_wait(self._retries, request, attempt, response)
                if wait is None:
                    return parsed(call, response)
                time.sleep(wait)
            attempt += 1

    def close(self) -> None:
        self._http.close()


class AsyncHttpTransport:
    """Calls over HTTP with httpx's asynchronous client."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        timeout: float,
        retries: RetryPolicy,
        wire: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._retries = retries
        # `wire` replaces the network (tests answer from memory); None is httpx's default.
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=_base_headers(api_key), timeout=timeout, transport=wire
        )

    async def run(self, call: Call[Result]) -> Result:
        request = http_request(call)
        attempt = 1
        while True:
            try:
                response = await self._http.request(
                    request.method,
                    request.path,
                    params=request.params,
                    json=request.json,
                    headers=request.headers,
                )
            except httpx.TransportError as error:
                await asyncio.sleep(_transport_wait(self._retries, request, attempt, error))
            else:
                wait = _retry_wait(self._retries, request, attempt, response)
                if wait is None:
                    return parsed(call, response)
                await asyncio.sleep(wait)
            attempt += 1

    async def close(self) -> None:
        await self._http.aclose()

"""What one client method asks for, in a form both client transports serve: the operation's
name, its path ids, query and body as the HTTP route takes them, and (for an operation the
table cannot build) the engine call that serves it in-process."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from uuid import UUID

from pydantic import BaseModel

from prme.engine.identity import Principal
from prme.engine.service import MemoryEngine
from prme.errors import InvalidRequestError
from prme.model.records import OwnerKey

Result = TypeVar("Result")


@dataclass(frozen=True)
class InProcess:
    """What an in-process call runs with: the engine, the client's principal and the owner."""

    engine: MemoryEngine
    principal: Principal
    owner: OwnerKey


@dataclass(frozen=True)
class Call(Generic[Result]):
    """One call of operation `operation`, as its HTTP route takes it.

    `query` and `body` are the route's own models (their field names are the wire names);
    `user_id` goes in the body when the body has that field, in the query otherwise. `local`
    serves the call in-process for an operation of the ADAPTER shape; the table's shapes
    need none. The result is the operation's response model on either transport."""

    operation: str
    user_id: str | None = None
    path: Mapping[str, str] = field(default_factory=dict)
    query: BaseModel | Mapping[str, Any] | None = None
    body: BaseModel | None = None
    idempotency_key: str | None = None
    local: Callable[[InProcess], Any] | None = None

    def __post_init__(self) -> None:
        # The routes take these as UUIDs; checked here, a malformed one is the same 422 on
        # both transports instead of a 422 over HTTP and a 404 in-process.
        for name, value in (*self.path.items(), ("idempotency_key", self.idempotency_key)):
            if value is not None and not _is_uuid(value):
                raise InvalidRequestError(f"{name}: Input should be a valid UUID", field=(name,))


def _is_uuid(value: str) -> bool:
    try:
        UUID(value)
    except (TypeError, ValueError):
        return False
    return True

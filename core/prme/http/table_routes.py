"""HTTP routes built from the operations table alone, for the shapes that need no adapter.

A `READ_ONE` operation takes the path id and `user_id`; a `MOVE_ONE` operation adds an
`Idempotency-Key`; a `WRITE_BODY` operation takes its request body (and the key, when its route
says so); a `LIST_PAGE` operation takes `limit`, `after_id` and the `request_id` of the
retrieval its records are about. Each resolves the owner, calls
the engine method of the operation's name and returns its result through the response model
(`prme.operations.presented`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any
from uuid import UUID

from fastapi import FastAPI, Query
from pydantic import BaseModel

from prme.engine.feedback import DEFAULT_PAGE, MAX_PAGE
from prme.engine.identity import Principal, resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import (
    Caller,
    IdempotencyKey,
    UserIdQuery,
    key_text,
    path_id,
    served,
)
from prme.operations import OPERATIONS, Operation, Shape, presented


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add a route for every operation of a table-built shape."""
    for operation in OPERATIONS:
        if operation.shape is Shape.READ_ONE:
            _read_one(app, engine, operation)
        elif operation.shape is Shape.MOVE_ONE:
            _move_one(app, engine, operation)
        elif operation.shape is Shape.WRITE_BODY:
            _write_body(app, engine, operation)
        elif operation.shape is Shape.LIST_PAGE:
            _list_page(app, engine, operation)


PageLimit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Records per page")]
AfterId = Annotated[
    UUID | None, Query(description="The last id of the previous page; pages sort by UUID")
]
OfRetrieval = Annotated[
    UUID | None,
    Query(description="Only the records about this retrieval (its metrics.request_id)"),
]


def _the_id(operation: Operation) -> str:
    (name,) = operation.path_ids
    return name


def _with_signature(endpoint: Callable[..., Any], *parameters: inspect.Parameter) -> None:
    # FastAPI reads a route's parameters from its signature; the id's name comes from the path.
    endpoint.__signature__ = inspect.Signature(list(parameters))  # type: ignore[attr-defined]


def _parameter(name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> Any:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


def _read_one(app: FastAPI, engine: MemoryEngine, operation: Operation) -> None:
    id_name = _the_id(operation)
    call = getattr(engine, operation.engine_method)

    def endpoint(caller: Principal, user_id: str | None = None, **ids: UUID) -> Any:
        return presented(
            operation.response, call(resolve_owner(caller, user_id), str(ids[id_name]))
        )

    _with_signature(
        endpoint,
        _parameter(id_name, path_id(id_name)),
        _parameter("caller", Caller),
        _parameter("user_id", UserIdQuery, None),
    )
    served(app, operation.name)(endpoint)


def _move_one(app: FastAPI, engine: MemoryEngine, operation: Operation) -> None:
    id_name = _the_id(operation)
    call = getattr(engine, operation.engine_method)

    def endpoint(
        caller: Principal,
        idempotency_key: UUID | None = None,
        user_id: str | None = None,
        **ids: UUID,
    ) -> Any:
        owner = resolve_owner(caller, user_id)
        result = call(owner, str(ids[id_name]), idempotency_key=key_text(idempotency_key))
        return presented(operation.response, result)

    _with_signature(
        endpoint,
        _parameter(id_name, path_id(id_name)),
        _parameter("caller", Caller),
        _parameter("idempotency_key", IdempotencyKey, None),
        _parameter("user_id", UserIdQuery, None),
    )
    served(app, operation.name)(endpoint)


def _write_body(app: FastAPI, engine: MemoryEngine, operation: Operation) -> None:
    if operation.http is None or operation.engine_input is None:
        raise ValueError(f"{operation.name}: a written body needs a route and an engine input")
    engine_input = operation.engine_input
    call = getattr(engine, operation.engine_method)
    takes_key = operation.http.idempotency_key

    def endpoint(body: BaseModel, caller: Principal, idempotency_key: UUID | None = None) -> Any:
        owner = resolve_owner(caller, getattr(body, "user_id", None))
        request = engine_input.model_validate(
            body.model_dump(exclude={"user_id"}, exclude_unset=True)
        )
        keys = {"idempotency_key": key_text(idempotency_key)} if takes_key else {}
        return presented(operation.response, call(owner, request, **keys))

    parameters = [_parameter("body", operation.request), _parameter("caller", Caller)]
    if takes_key:
        parameters.append(_parameter("idempotency_key", IdempotencyKey, None))
    _with_signature(endpoint, *parameters)
    served(app, operation.name)(endpoint)


def _list_page(app: FastAPI, engine: MemoryEngine, operation: Operation) -> None:
    call = getattr(engine, operation.engine_method)

    def endpoint(
        caller: Principal,
        limit: int,
        after_id: UUID | None = None,
        request_id: UUID | None = None,
        user_id: str | None = None,
    ) -> Any:
        result = call(
            resolve_owner(caller, user_id),
            limit=limit,
            after_id=str(after_id) if after_id is not None else None,
            request_id=str(request_id) if request_id is not None else None,
        )
        return presented(operation.response, result)

    _with_signature(
        endpoint,
        _parameter("caller", Caller),
        _parameter("limit", PageLimit, DEFAULT_PAGE),
        _parameter("after_id", AfterId, None),
        _parameter("request_id", OfRetrieval, None),
        _parameter("user_id", UserIdQuery, None),
    )
    served(app, operation.name)(endpoint)

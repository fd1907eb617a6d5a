"""What every route module shares: `served` (a route from its table entry), caller, parameters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar
from uuid import UUID

from fastapi import Depends, FastAPI, Header, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from prme.engine.credentials import CredentialService
from prme.engine.identity import Principal
from prme.engine.service import MemoryEngine
from prme.http.auth import AuthPolicy, authenticate
from prme.http.schemas import USER_ID, AcceptedErrorResponse, ErrorResponse
from prme.model.input_policy import DEFAULT_MAX_BODY_BYTES
from prme.operations import BY_NAME as OPERATIONS
from prme.operations import ID_DESCRIPTIONS, IDEMPOTENCY_KEY_DESCRIPTION, Errors, McpToolSet
from prme.retrieval.response_size import DEFAULT_MAX_RESPONSE_BYTES


@dataclass(frozen=True)
class ApiRuntime:
    """What the routes need, built once by the composition root."""

    engine: MemoryEngine
    credentials: CredentialService
    auth: AuthPolicy
    # Bodies past this are refused (413) while being read, before parsing or authentication.
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # A retrieval response keeps ranked records up to this many bytes as sent (see
    # prme.http.response_budget); the rest are left out and counted in its size_limit.
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    # Each request's time budget (PRME_REQUEST_BUDGET_MS); None leaves requests unbounded.
    request_budget_ms: int | None = None
    # The MCP tools /mcp lists (PRME_MCP_TOOLS).
    mcp_tools: McpToolSet = "default"


ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "Missing or invalid API key"},
    403: {"model": ErrorResponse, "description": "The key may not act for that user_id"},
    422: {"model": ErrorResponse, "description": "Invalid input; nothing was written"},
    503: {"model": ErrorResponse, "description": "A dependency is unavailable"},
}
READ_ERRORS = {
    **ERRORS,
    404: {"model": ErrorResponse, "description": "Unknown or foreign id"},
    500: {
        "model": ErrorResponse,
        "description": "The record is stored but cannot be read; it is quarantined",
    },
}
WRITE_ERRORS = {
    **ERRORS,
    409: {"model": ErrorResponse, "description": "Idempotency-Key reused with a different body"},
    503: {
        "model": AcceptedErrorResponse,
        "description": "Source saved but processing did not complete (accepted: true), "
        "or a dependency was down before anything was written (no accepted field)",
    },
}


def runtime_of(request: Request) -> ApiRuntime:
    runtime: ApiRuntime = request.app.state.runtime
    return runtime


# Declares the bearer scheme in the OpenAPI document; `authenticate` reads and checks the header
# itself (a missing or bad key is our own 401, whatever this parser thinks of it).
_BEARER = HTTPBearer(
    auto_error=False,
    scheme_name="bearerAuth",
    description="An API key: `Authorization: Bearer <key>`. A local server started with no "
    "active key accepts keyless requests on loopback until the first key exists.",
)


def principal_of(
    request: Request, _declared: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]
) -> Principal:
    runtime = runtime_of(request)
    return authenticate(request, runtime.credentials, runtime.auth)


Caller = Annotated[Principal, Depends(principal_of)]
UserIdQuery = Annotated[
    str | None, Query(min_length=1, max_length=256, description=USER_ID.description)
]


def path_id(name: str) -> Any:
    """The annotation of a path id: a UUID, described once in the operations table."""
    return Annotated[UUID, Path(description=ID_DESCRIPTIONS[name])]


EventIdPath = path_id("event_id")
NodeIdPath = path_id("node_id")
RequestIdPath = path_id("request_id")
ProposalIdPath = path_id("proposal_operation_id")
ProfileIdPath = path_id("profile_id")
IdempotencyKey = Annotated[
    UUID | None, Header(alias="Idempotency-Key", description=IDEMPOTENCY_KEY_DESCRIPTION)
]


def key_text(idempotency_key: UUID | None) -> str | None:
    return str(idempotency_key) if idempotency_key is not None else None


_ERROR_SETS: dict[Errors, dict[int | str, dict[str, Any]]] = {
    Errors.BASE: ERRORS,
    Errors.READ: READ_ERRORS,
    Errors.WRITE: WRITE_ERRORS,
}

_Endpoint = TypeVar("_Endpoint", bound=Callable[..., Any])


def served(app: FastAPI, name: str) -> Callable[[_Endpoint], _Endpoint]:
    """Register the decorated function as the HTTP route of operation `name`: its method, path,
    models, error responses, tag and texts all come from the operations table."""
    operation = OPERATIONS[name]
    route = operation.http
    if route is None:
        raise ValueError(f"operation {name} has no HTTP route in the operations table")
    responses = dict(_ERROR_SETS[route.errors])
    for status, meaning in route.extra_errors.items():
        responses[status] = {"model": ErrorResponse, "description": meaning}

    def register(endpoint: _Endpoint) -> _Endpoint:
        app.add_api_route(
            route.path,
            endpoint,
            methods=[route.method],
            response_model=operation.response,
            responses=responses,
            summary=operation.summary,
            description=operation.description,
            tags=[operation.capability.value],
            operation_id=operation.name,
            name=operation.name,
            status_code=route.status,
        )
        return endpoint

    return register

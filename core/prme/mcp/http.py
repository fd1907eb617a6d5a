"""Streamable HTTP for the MCP tools at /mcp, authenticated with the API's bearer keys.

Each HTTP request is served statelessly with a JSON response: a fresh session manager runs
for the length of the request, so the endpoint needs no lifespan and works the same under
uvicorn and inside a Lambda (Mangum), where nothing survives between invocations.
The caller's principal is kept in a context variable for the tools of that request.
"""

from __future__ import annotations

from contextvars import ContextVar

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from prme.engine.credentials import CredentialService
from prme.engine.identity import Principal
from prme.engine.service import MemoryEngine
from prme.errors import CATEGORY_BY_STATUS, PrmeError, public_body, status_for
from prme.http.auth import AuthPolicy, authenticate
from prme.mcp.server import build_mcp_server
from prme.operations import McpToolSet

_caller: ContextVar[Principal | None] = ContextVar("prme_mcp_caller", default=None)


def _current_caller() -> Principal:
    principal = _caller.get()
    if principal is None:  # pragma: no cover - the endpoint always sets it first
        raise RuntimeError("MCP tool called outside an authenticated request")
    return principal


class McpHttpEndpoint:
    """An ASGI app: authenticate the bearer key, then serve one MCP request for that caller."""

    def __init__(
        self,
        engine: MemoryEngine,
        credentials: CredentialService,
        auth: AuthPolicy,
        *,
        max_response_bytes: int,
        tools: McpToolSet,
    ) -> None:
        self._server: MCPServer = build_mcp_server(
            engine, _current_caller, max_response_bytes=max_response_bytes, tools=tools
        )
        self._credentials = credentials
        self._auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            # The same function as every REST route: keyless mode's loopback Host and Origin
            # rule included, so /mcp and the REST routes cannot drift apart.
            principal = await anyio.to_thread.run_sync(
                authenticate, request, self._credentials, self._auth
            )
        except PrmeError as exc:
            status = status_for(exc)
            body = {"category": CATEGORY_BY_STATUS.get(status, "internal"), **public_body(exc)}
            headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
            await JSONResponse(body, status_code=status, headers=headers)(scope, receive, send)
            return
        token = _caller.set(principal)
        try:
            manager = StreamableHTTPSessionManager(
                app=self._server._lowlevel_server,
                stateless=True,
                json_response=True,
            )
            async with manager.run():
                await manager.handle_request(scope, receive, send)
        finally:
            _caller.reset(token)

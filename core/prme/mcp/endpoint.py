"""The /mcp route of the API, built on first use: importing the MCP SDK costs about a second,
which REST callers (and Lambda cold starts that only serve REST) should not pay."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.types import Receive, Scope, Send

from prme.engine.credentials import CredentialService
from prme.engine.service import MemoryEngine
from prme.http.auth import AuthPolicy
from prme.operations import McpToolSet

if TYPE_CHECKING:
    from prme.mcp.http import McpHttpEndpoint


class LazyMcpEndpoint:
    def __init__(
        self,
        engine: MemoryEngine,
        credentials: CredentialService,
        auth: AuthPolicy,
        *,
        max_response_bytes: int,
        tools: McpToolSet,
    ) -> None:
        self._args = (engine, credentials, auth)
        self._max_response_bytes = max_response_bytes
        self._tools: McpToolSet = tools
        self._endpoint: McpHttpEndpoint | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._endpoint is None:
            from prme.mcp.http import McpHttpEndpoint

            self._endpoint = McpHttpEndpoint(
                *self._args, max_response_bytes=self._max_response_bytes, tools=self._tools
            )
        await self._endpoint(scope, receive, send)

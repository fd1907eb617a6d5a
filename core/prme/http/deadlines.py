"""ASGI middleware that runs each HTTP request under the configured time budget.

The budget only ever shortens a deadline already set around the app (on Lambda, the
function's remaining time), so the earlier of the two bounds every dependency call.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from prme.engine.deadlines import deadline_scope


class RequestDeadlineMiddleware:
    """Opens a deadline scope per HTTP request; lifespan and other scopes pass through."""

    def __init__(self, app: ASGIApp, *, budget_ms: int | None) -> None:
        self._app = app
        self._budget_s = None if budget_ms is None else budget_ms / 1000

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        # Set in this task's context: the route's thread-pool call copies it from here.
        with deadline_scope(self._budget_s):
            await self._app(scope, receive, send)

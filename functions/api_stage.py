"""API Gateway's named stages as the app's root path: on a stage other than `$default` an
HTTP API event's path starts with `/<stage>`, which the app must route past and put back
into the URLs it sends the browser (the inspector's redirect, the docs pages' assets)."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

DEFAULT_STAGE = "$default"


def stage_prefix(scope: Scope) -> str:
    """`/<stage>` when the request's path starts with its named stage, else empty."""
    event: dict[str, Any] = scope.get("aws.event") or {}
    stage = (event.get("requestContext") or {}).get("stage")
    if not isinstance(stage, str) or not stage or stage == DEFAULT_STAGE:
        return ""
    prefix = f"/{stage}"
    path: str = scope.get("path", "")
    return prefix if path == prefix or path.startswith(f"{prefix}/") else ""


class StagePrefix:
    """Sets the ASGI `root_path` to the stage prefix and leaves `path` whole (ASGI's rule:
    the path includes the root path), so routing matches the path after the prefix and
    `request.scope["root_path"]` gives the prefix back. A path without the prefix passes
    as it came."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            prefix = stage_prefix(scope)
            if prefix:
                scope = {**scope, "root_path": prefix}
        await self.app(scope, receive, send)

"""The memory inspector's pages under `/ui`: static files from the `prme.inspector` package,
served with a strict Content-Security-Policy. The files hold no data; every page reads the
API with the bearer key the person signs in with, so the API's 401/403/404 rules are the
pages' rules too."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UI_PREFIX = "/ui"
ASSET_PACKAGE = "prme.inspector"
INDEX = "index.html"
_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# Scripts and styles only from this server, no inline code, no plugins, no framing, and API
# calls only back to this origin: memory content that slipped past the pages' text-only
# rendering still could not run, load, or send anything anywhere.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    # The pages change with the package; a stale script against a newer API is worse than
    # a reload.
    "Cache-Control": "no-cache",
}


def asset_directory() -> Path:
    return Path(str(files(ASSET_PACKAGE).joinpath("static")))


def inspector_assets() -> dict[str, Path]:
    """Every file the inspector serves, by its path under `/ui/`: what the package holds
    with a known type, fixed at startup, so no request path ever reaches the file system."""
    root = asset_directory()
    return {
        path.relative_to(root).as_posix(): path
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.suffix in _CONTENT_TYPES
    }


_SECURITY_HEADER_LIST = [
    (name.lower().encode("latin-1"), value.encode("latin-1"))
    for name, value in SECURITY_HEADERS.items()
]
_SECURITY_HEADER_NAMES = frozenset(name for name, _ in _SECURITY_HEADER_LIST)


def _under_ui(scope: Scope) -> bool:
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path == UI_PREFIX or path.startswith(f"{UI_PREFIX}/")


class InspectorHeaders:
    """Puts the security headers on every answer under `/ui`, the ones the router and the
    error handlers make (the redirect, a 405 for another method) as well as the files: a
    browser may render or frame any of them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _under_ui(scope):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [
                    (name, value)
                    for name, value in message.get("headers", ())
                    if name.lower() not in _SECURITY_HEADER_NAMES
                ]
                message = {**message, "headers": [*kept, *_SECURITY_HEADER_LIST]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install_inspector(app: FastAPI) -> None:
    """Add `/ui` (a redirect to `/ui/`), the inspector's page and its assets, and the headers
    every answer under `/ui` carries. Plain routes:
    not API operations, so neither in the OpenAPI document nor in the operations table."""
    assets = inspector_assets()

    def asset_response(name: str) -> Response:
        path = assets.get(name)
        if path is None:
            return Response(status_code=404)
        return FileResponse(path, media_type=_CONTENT_TYPES[path.suffix])

    def redirect(request: Request) -> Response:
        # Relative to the prefix API Gateway's stage adds, like the pages' own links.
        prefix = request.scope.get("root_path", "")
        return RedirectResponse(f"{prefix}{UI_PREFIX}/", status_code=307)

    def index(_request: Request) -> Response:
        return asset_response(INDEX)

    def asset(request: Request) -> Response:
        return asset_response(str(request.path_params["name"]))

    app.add_middleware(InspectorHeaders)
    app.add_route(UI_PREFIX, redirect, methods=["GET"], include_in_schema=False)
    app.add_route(f"{UI_PREFIX}/", index, methods=["GET"], include_in_schema=False)
    app.add_route(f"{UI_PREFIX}/{{name:path}}", asset, methods=["GET"], include_in_schema=False)

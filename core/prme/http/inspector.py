"""The memory inspector's pages under `/ui`: static files from the `prme.inspector` package,
served with a strict Content-Security-Policy. The files hold no data; every page reads the
API with the bearer key the person signs in with, so the API's 401/403/404 rules are the
pages' rules too."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Request
from starlette.responses import FileResponse, RedirectResponse, Response

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


def install_inspector(app: FastAPI) -> None:
    """Add `/ui` (a redirect to `/ui/`), the inspector's page and its assets. Plain routes:
    not API operations, so neither in the OpenAPI document nor in the operations table."""
    assets = inspector_assets()

    def asset_response(name: str) -> Response:
        path = assets.get(name)
        if path is None:
            return Response(status_code=404, headers=SECURITY_HEADERS)
        return FileResponse(path, media_type=_CONTENT_TYPES[path.suffix], headers=SECURITY_HEADERS)

    def redirect(request: Request) -> Response:
        # Relative to the prefix API Gateway's stage adds, like the pages' own links.
        prefix = request.scope.get("root_path", "")
        return RedirectResponse(f"{prefix}{UI_PREFIX}/", status_code=307)

    def index(_request: Request) -> Response:
        return asset_response(INDEX)

    def asset(request: Request) -> Response:
        return asset_response(str(request.path_params["name"]))

    app.add_route(UI_PREFIX, redirect, methods=["GET"], include_in_schema=False)
    app.add_route(f"{UI_PREFIX}/", index, methods=["GET"], include_in_schema=False)
    app.add_route(f"{UI_PREFIX}/{{name:path}}", asset, methods=["GET"], include_in_schema=False)

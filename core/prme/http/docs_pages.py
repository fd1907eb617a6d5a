"""`/docs` (Swagger UI) and `/redoc` served with their scripts and styles from this server, so
both pages work on a machine without internet access."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse

# FastAPI's own pages load their assets from a CDN; the fastapi-offline package ships the same
# Swagger UI and ReDoc builds as files, which are all we take from it.
ASSET_PACKAGE = "fastapi_offline"
ASSETS_URL = "/docs-assets"
SWAGGER_JS = "swagger-ui-bundle.js"
SWAGGER_CSS = "swagger-ui.css"
REDOC_JS = "redoc.standalone.js"
FAVICON = "favicon.png"


def asset_directory() -> Path:
    return Path(str(files(ASSET_PACKAGE).joinpath("static")))


# Both pages run their builds' inline start-up scripts, so scripts cannot be limited to files
# here as the inspector's are. They share the inspector's origin, though, and with it the key
# a signed-in tab keeps: no framing (clickjacking), no plugins, no <base> rewrite, and no
# requests to anywhere but this server, so a flaw in either build cannot send the key away.
DOCS_PAGE_POLICY = "; ".join(
    (
        "frame-ancestors 'none'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
    )
)


def _guarded(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = DOCS_PAGE_POLICY
    page.headers["X-Frame-Options"] = "DENY"
    page.headers["X-Content-Type-Options"] = "nosniff"
    page.headers["Referrer-Policy"] = "no-referrer"
    return page


def install_docs_pages(app: FastAPI) -> None:
    """Mount the assets and add both pages. The app must be built with `docs_url=None` and
    `redoc_url=None`, so FastAPI's CDN pages are not registered first."""
    app.mount(ASSETS_URL, StaticFiles(directory=asset_directory()), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    def asset(request: Request, name: str) -> str:
        # root_path: behind API Gateway's stage prefix the pages must ask for prefixed URLs.
        return f"{request.scope.get('root_path', '')}{ASSETS_URL}/{name}"

    # Plain routes, as FastAPI adds its own pages: not API operations, so not in the schema
    # and outside the table of operations.
    def swagger_ui(request: Request) -> HTMLResponse:
        return _guarded(
            get_swagger_ui_html(
                **_page(request, "Swagger UI"),
                swagger_js_url=asset(request, SWAGGER_JS),
                swagger_css_url=asset(request, SWAGGER_CSS),
                swagger_favicon_url=asset(request, FAVICON),
            )
        )

    def redoc(request: Request) -> HTMLResponse:
        return _guarded(
            get_redoc_html(
                **_page(request, "ReDoc"),
                redoc_js_url=asset(request, REDOC_JS),
                redoc_favicon_url=asset(request, FAVICON),
                with_google_fonts=False,
            )
        )

    def _page(request: Request, viewer: str) -> dict[str, Any]:
        prefix = request.scope.get("root_path", "")
        return {"openapi_url": f"{prefix}{openapi_url}", "title": f"{app.title} - {viewer}"}

    app.add_route("/docs", swagger_ui, include_in_schema=False)
    app.add_route("/redoc", redoc, include_in_schema=False)

"""`/docs` and `/redoc` still render in a real browser under the policy that keeps them from
being framed or sending anything elsewhere (they share the inspector's origin and key)."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from tests.harness.browser import VIEWPORT, Inspector, PageWatch


def test_swagger_ui_renders_the_api_under_its_policy(page: Page, inspector: Inspector) -> None:
    page.goto(f"{inspector.server.url}/docs")
    expect(page.locator(".swagger-ui .title").first).to_contain_text("PRME Cloud")
    expect(page.locator(".opblock-summary-path", has_text="/v1/retrievals").first).to_be_visible()


def test_redoc_renders_the_api_under_its_policy(browser: Browser, inspector: Inspector) -> None:
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    page = context.new_page()
    watch = PageWatch(inspector.server.url)
    page.on("console", watch.on_console)
    page.on("pageerror", watch.on_page_error)
    page.on("requestfinished", watch.on_request)
    try:
        page.goto(f"{inspector.server.url}/redoc")
        expect(page.get_by_role("heading", name="PRME Cloud").first).to_be_visible()
        page.wait_for_load_state("networkidle")
    finally:
        context.close()
    # ReDoc's build asks for its makers' logo from their CDN; the policy blocks it (the
    # browser may say so on the console): no request to another origin ever completes, and
    # nothing else is refused.
    blocked_logo = [p for p in watch.problems if "cdn.redoc.ly" in p and "img-src" in p]
    assert [p for p in watch.problems if p not in blocked_logo] == []

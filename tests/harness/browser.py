"""A real browser on the inspector: Debian's chromium driven by Playwright (never
`playwright install`, which downloads a browser), a page that fails its test on any console
error, uncaught exception, Content-Security-Policy violation or request to another origin,
and the keyboard and label checks every page must pass."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Dialog,
    Page,
    Request,
    Response,
    sync_playwright,
)

from tests.harness.live_server import LiveServer

# `make browser` installs it (apt-get install chromium); PRME_CHROMIUM names another build.
CHROMIUM = Path(os.environ.get("PRME_CHROMIUM", "/usr/bin/chromium"))
# Where each page's screenshot goes: docs/inspector when `make screenshots` runs the tests.
SCREENSHOT_DIR_ENV = "PRME_SCREENSHOT_DIR"
VIEWPORT = {"width": 1280, "height": 860}


def chromium_executable() -> Path:
    if not CHROMIUM.exists():
        # Not a skip: the browser tests are part of `make test`, which installs chromium first.
        pytest.fail(
            f"no chromium at {CHROMIUM}: run `make browser` (apt-get install -y chromium, as "
            "root) or set PRME_CHROMIUM to a chromium binary"
        )
    return CHROMIUM


@contextmanager
def launched_browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(chromium_executable()),
            # Root in a container has no user namespaces for chromium's sandbox.
            args=["--no-sandbox"] if os.geteuid() == 0 else [],
        )
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class PageWatch:
    """What went wrong in the page while a test drove it."""

    origin: str
    problems: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def on_console(self, message: ConsoleMessage) -> None:
        # The browser logs every 4xx answer as a failed load; an API refusal is a page state
        # the tests check on screen, and an asset's failure is caught by on_response.
        if message.type in ("error", "warning") and not message.text.startswith(
            "Failed to load resource"
        ):
            self.problems.append(f"console {message.type}: {message.text[:300]}")

    def on_response(self, response: Response) -> None:
        path = urlsplit(response.url).path
        if response.status >= 400 and "/v1/" not in path:
            self.problems.append(f"{response.status} for {path}")

    def on_page_error(self, error: Exception) -> None:
        self.problems.append(f"uncaught: {str(error)[:300]}")

    def on_dialog(self, dialog: Dialog) -> None:
        # alert(), confirm() and prompt() never come from the pages: one is a script that ran.
        self.dialogs.append(dialog.message[:300])
        dialog.dismiss()

    def on_request(self, request: Request) -> None:
        parts = urlsplit(request.url)
        if f"{parts.scheme}://{parts.netloc}" != self.origin and parts.scheme not in (
            "data",
            "blob",
        ):
            self.problems.append(f"request to another origin: {parts.scheme}://{parts.netloc}")


@dataclass(frozen=True)
class Inspector:
    """The live server the pages run on, and keys to sign in and to seed data with."""

    server: LiveServer
    owner: str
    owner_key: str

    @property
    def url(self) -> str:
        return f"{self.server.url}/ui/"

    def api(self, key: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.server.url,
            headers={"Authorization": f"Bearer {key or self.server.operator_key}"},
            timeout=30,
        )


def owner_key(server: LiveServer, owner: str) -> str:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        created = client.post(
            "/v1/keys",
            json={"user_id": owner, "label": "inspector test"},
            headers={"Authorization": f"Bearer {server.operator_key}"},
        )
    created.raise_for_status()
    secret: str = created.json()["secret"]
    return secret


@contextmanager
def watched_page(browser: Browser, origin: str) -> Iterator[Page]:
    """A page in a fresh context (its own sessionStorage) that fails the test on any
    console error or warning, uncaught exception, or request to another origin."""
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    page = context.new_page()
    watch = PageWatch(origin)
    page.on("console", watch.on_console)
    page.on("pageerror", watch.on_page_error)
    page.on("request", watch.on_request)
    page.on("response", watch.on_response)
    page.on("dialog", watch.on_dialog)
    try:
        yield page
    finally:
        context.close()
    assert not watch.dialogs, f"a dialog opened (script ran?): {watch.dialogs}"
    assert not watch.problems, "\n".join(watch.problems)


def sign_in(page: Page, inspector: Inspector, *, key: str, owner: str | None = None) -> None:
    page.goto(inspector.url)
    page.get_by_label("API key").fill(key)
    if owner is not None:
        page.get_by_label("Owner (user_id)").fill(owner)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("navigation", name="Sections").wait_for()


def screenshot(page: Page, name: str, tmp_dir: Path) -> Path:
    """Save the whole page as `<name>.png`: into $PRME_SCREENSHOT_DIR (docs/inspector from
    `make screenshots`) when set, else beside the test's temporary files."""
    target = Path(os.environ.get(SCREENSHOT_DIR_ENV) or tmp_dir)
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# Names every control a screen reader would announce, as the browser computes them.
_UNNAMED_CONTROLS = """() => {
  const unnamed = [];
  const named = (el) => {
    if (el.getAttribute("aria-label") || el.getAttribute("aria-labelledby")) return true;
    if (el.labels && el.labels.length && [...el.labels].some((l) => l.textContent.trim())) return true;
    if (["BUTTON", "A", "SUMMARY"].includes(el.tagName)) return el.textContent.trim().length > 0;
    return false;
  };
  for (const el of document.querySelectorAll("input, select, textarea, button, a[href], summary")) {
    if (el.type === "hidden" || el.closest("[hidden]")) continue;
    if (!named(el)) unnamed.push(el.outerHTML.slice(0, 120));
  }
  return unnamed;
}"""


def assert_accessible(page: Page) -> None:
    """Each page: one h1, every control and link named, every table captioned with column
    headers, and the skip link the first thing Tab reaches."""
    assert page.locator("main h1").count() == 1
    unnamed = page.evaluate(_UNNAMED_CONTROLS)
    assert unnamed == [], f"controls without an accessible name: {unnamed}"
    for table in page.locator("main table").all():
        assert table.locator("caption").count() == 1
        assert table.locator("thead th[scope=col]").count() >= 1
    first = page.evaluate(
        """() => document.querySelector(
          'a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])').id"""
    )
    assert first == "skip-link", "the skip link must be the first thing Tab reaches"
    hash_before = page.evaluate("() => window.location.hash")
    page.locator("#skip-link").focus()
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.id") == "main"
    assert page.evaluate("() => window.location.hash") == hash_before


def tab_to(page: Page, name: str, *, limit: int = 80) -> None:
    """Press Tab until the control or link called `name` has focus: proof a keyboard user
    reaches it (fails after `limit` presses)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            """() => { const el = document.activeElement; if (!el) return "";
            const label = el.labels && el.labels.length ? el.labels[0].textContent : "";
            return (el.getAttribute("aria-label") || label || el.textContent || "").trim(); }"""
        )
        if focused == name:
            return
    raise AssertionError(f"Tab never reached {name!r}")

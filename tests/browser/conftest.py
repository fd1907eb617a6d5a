"""The browser suite's fixtures: one `prme serve` and one chromium per test worker, and a
fresh, watched page per test."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page

from tests.harness.browser import Inspector, launched_browser, owner_key, watched_page
from tests.harness.live_server import live_server


@pytest.fixture(scope="session")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Inspector]:
    with live_server(tmp_path_factory.mktemp("inspector")) as server:
        yield Inspector(server=server, owner="alice", owner_key=owner_key(server, "alice"))


@pytest.fixture
def browser() -> Iterator[Browser]:
    # Per test, not per session: Playwright's sync API keeps an asyncio loop running in this
    # thread while it is started, and the handlers other tests on the same worker run through
    # Mangum need to run their own loop.
    with launched_browser() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser, inspector: Inspector) -> Iterator[Page]:
    with watched_page(browser, inspector.server.url) as opened:
        yield opened


@pytest.fixture
def api(inspector: Inspector) -> Iterator[httpx.Client]:
    """The API as the shared owner the `inspector` signs in as, to seed memories and read
    what a page shows."""
    with inspector.api(inspector.owner_key) as client:
        yield client

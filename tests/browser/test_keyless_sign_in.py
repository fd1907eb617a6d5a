"""A local server's keyless mode in a real browser: the pages open without a key, and once a
key is created (which ends keyless access) the open tab asks for a key instead of failing
on every page from then on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.harness.browser import watched_page
from tests.harness.live_server import LiveServer, live_server


@pytest.fixture
def keyless(tmp_path: Path) -> Iterator[LiveServer]:
    with live_server(tmp_path / "keyless", keyless=True) as server:
        yield server


def test_a_keyless_tab_asks_for_a_key_once_a_key_exists(
    browser: Browser, keyless: LiveServer
) -> None:
    page: Page
    with watched_page(browser, keyless.url) as page:
        page.goto(f"{keyless.url}/ui/")
        expect(page.get_by_role("heading", level=1)).to_have_text("Choose an owner")
        page.get_by_label("Owner (user_id)").fill("alice")
        page.get_by_role("button", name="Open").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Memory of alice")
        expect(page.locator("#who")).to_contain_text("local, no key")

        # Someone on the machine makes the first key: keyless access ends for every caller.
        with httpx.Client(base_url=keyless.url, timeout=30) as local:
            created = local.post("/v1/keys", json={"user_id": "alice", "label": "first key"})
        created.raise_for_status()
        page.get_by_role("link", name="Memories").click()

        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        expect(page.get_by_role("alert")).to_contain_text("missing, wrong or revoked")
        page.get_by_label("API key").fill(created.json()["secret"])
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Memories")
        expect(page.locator("#who")).to_contain_text("Owner alice · owner key")

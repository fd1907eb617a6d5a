"""Markup in the fields the other browser tests do not fill, in a real browser: an owner id an
operator types (shown in the header and the overview), metadata keys, and a query shown in a
memory's retrievals. Each must show as its characters; nothing may run or load. And after
signing out, nothing the page showed and not the key stays in the page."""

from __future__ import annotations

import uuid

from playwright.sync_api import Page, expect

from tests.harness.browser import Inspector, sign_in

HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'


def test_an_owner_id_metadata_keys_and_a_query_with_markup_show_as_text(
    page: Page, inspector: Inspector
) -> None:
    owner = f"{HOSTILE}{uuid.uuid4().hex[:6]}"
    with inspector.api() as operator:
        stored = operator.post(
            "/v1/store",
            json={"user_id": owner, "content": "The kite is red.", "metadata": {HOSTILE: 1}},
        )
        stored.raise_for_status()
        operator.post(
            "/v1/retrieve", json={"user_id": owner, "query": f"{HOSTILE} kite"}
        ).raise_for_status()
    node_id = stored.json()["node_id"]

    page.goto(inspector.url)
    page.get_by_label("API key").fill(inspector.server.operator_key)
    page.get_by_label("Owner (user_id)").fill(owner)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Memory of {owner}")
    expect(page.locator("#who")).to_contain_text(f"Owner {owner}")

    page.goto(f"{inspector.url}#/memory/{node_id}")
    expect(page.locator("main pre.metadata")).to_contain_text(HOSTILE.replace('"', '\\"'))
    expect(page.locator("main #retrievals-scanned")).to_contain_text("1 of the 1")
    expect(page.get_by_role("link", name=f"{HOSTILE} kite")).to_be_visible()

    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("img, script:not([src])").count() == 0


def test_signing_out_leaves_neither_memory_nor_key_in_the_page(
    page: Page, inspector: Inspector
) -> None:
    secret = f"The safe code is {uuid.uuid4().hex[:8]}"
    with inspector.api(inspector.owner_key) as api:
        stored = api.post("/v1/store", json={"content": secret})
        stored.raise_for_status()
        api.post("/v1/retrieve", json={"query": secret}).raise_for_status()
    sign_in(page, inspector, key=inspector.owner_key)
    page.goto(f"{inspector.url}#/memory/{stored.json()['node_id']}")
    expect(page.locator("#memory-content")).to_have_text(secret)
    page.get_by_role("link", name=secret).first.click()
    expect(page.get_by_test_id("query")).to_have_text(secret)

    page.get_by_role("button", name="Sign out").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    html = page.content()
    assert secret not in html and secret not in page.title()
    assert inspector.owner_key not in html
    assert page.get_by_label("API key").input_value() == ""
    page.go_back()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    assert secret not in page.content()

"""Signing in to the inspector in a real browser: a key is checked against the API, an
owner key sees its owner, an operator key picks one, and the key never reaches a URL."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.harness.browser import Inspector, assert_accessible, screenshot, sign_in, tab_to


def test_an_owner_key_opens_its_owners_memory_and_never_reaches_a_url(
    page: Page, inspector: Inspector, tmp_path: Path
) -> None:
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(inspector.url)
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    assert_accessible(page)
    screenshot(page, "sign-in", tmp_path)

    sign_in(page, inspector, key=inspector.owner_key)

    expect(page.get_by_role("heading", level=1)).to_have_text("Memory of alice")
    expect(page.locator("#who")).to_contain_text("Owner alice · owner key")
    assert_accessible(page)
    assert all(inspector.owner_key not in url for url in [*requested, page.url])


def test_a_wrong_key_is_refused_on_the_form(page: Page, inspector: Inspector) -> None:
    page.goto(inspector.url)
    page.get_by_label("API key").fill("prme_0000000000000000_not-a-real-key")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("missing, wrong or revoked")
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    assert page.get_by_role("navigation", name="Sections").count() == 0


def test_an_operator_key_must_pick_an_owner(page: Page, inspector: Inspector) -> None:
    page.goto(inspector.url)
    page.get_by_label("API key").fill(inspector.server.operator_key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("enter the owner's user_id")

    page.get_by_label("Owner (user_id)").fill("alice")
    page.get_by_role("button", name="Open").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Memory of alice")
    expect(page.locator("#who")).to_contain_text("operator key")


def test_the_form_works_from_the_keyboard_alone(page: Page, inspector: Inspector) -> None:
    page.goto(inspector.url)
    tab_to(page, "API key")
    page.keyboard.type(inspector.owner_key)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Memory of alice")
    # Focus moves to the new page's heading, so a screen reader announces it.
    assert page.evaluate("() => document.activeElement.tagName") == "H1"


def test_signing_out_forgets_the_key(page: Page, inspector: Inspector) -> None:
    sign_in(page, inspector, key=inspector.owner_key)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    stored = page.evaluate("() => JSON.stringify(window.sessionStorage)")
    assert inspector.owner_key not in stored
    page.reload()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")

"""Addresses a person could be sent by someone else, in a real browser: an id of "." or ".."
in a page's address must not make the page call another API route (the browser resolves
/v1/nodes/.. to /v1/), an encoded slash stays encoded, and a page name that is a property of
every JavaScript object is no page."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Request, expect

from tests.harness.browser import Inspector, sign_in

# (page, id as written in the address, the heading the page shows): each id is a dot segment
# once decoded, which the URL parser would drop or climb out of.
DOT_IDS = [
    ("memory", "..", "Memory not found"),
    ("memory", ".", "Memory not found"),
    ("memory", "%2e%2E", "Memory not found"),
    ("event", "..", "Source event not found"),
    ("event", "%2e", "Source event not found"),
    ("retrieval", "..", "Receipt not found"),
    ("retrieval", ".", "Receipt not found"),
]


def api_paths(requests: list[Request]) -> list[str]:
    """The paths of the API calls, as the browser sent them (after it resolved the URL)."""
    return [urlsplit(r.url).path for r in requests if "/v1/" in urlsplit(r.url).path]


@pytest.fixture
def signed_in(page: Page, inspector: Inspector) -> list[Request]:
    sign_in(page, inspector, key=inspector.owner_key)
    expect(page.get_by_role("heading", level=1)).to_have_text("Memory of alice")
    requests: list[Request] = []

    def record(request: Request) -> None:  # Playwright calls Python functions, not builtins
        requests.append(request)

    page.on("request", record)
    return requests


def test_a_dot_segment_id_is_not_a_record_and_calls_no_api_route(
    page: Page, inspector: Inspector, signed_in: list[Request]
) -> None:
    for name, crafted, heading in DOT_IDS:
        signed_in.clear()
        page.goto(f"{inspector.url}#/{name}/{crafted}")

        expect(page.get_by_role("heading", level=1)).to_have_text(heading)
        expect(page.get_by_role("alert")).to_contain_text("not")
        assert api_paths(signed_in) == [], (name, crafted, api_paths(signed_in))
        page.goto(f"{inspector.url}#/overview")
        expect(page.get_by_role("heading", level=1)).to_have_text("Memory of alice")


def test_an_encoded_slash_in_an_id_stays_inside_its_path_part(
    page: Page, inspector: Inspector, signed_in: list[Request]
) -> None:
    page.goto(f"{inspector.url}#/memory/..%2Fkeys")

    expect(page.get_by_role("heading", level=1)).to_have_text("Memory not found")
    assert api_paths(signed_in) == ["/v1/nodes/..%2Fkeys"]


def test_an_object_property_is_no_page(page: Page, inspector: Inspector) -> None:
    sign_in(page, inspector, key=inspector.owner_key)
    for name in ("constructor", "__proto__", "toString", "hasOwnProperty"):
        page.goto(f"{inspector.url}#/{name}")

        expect(page.get_by_role("heading", level=1)).to_have_text("No such page")
        page.goto(f"{inspector.url}#/overview")
        expect(page.get_by_role("heading", level=1)).to_have_text("Memory of alice")

"""The inspector end to end, as a person uses it, in one scripted browser run over a fresh
owner: an operator signs in and picks the owner, asks a question, reads why each memory was
returned or left out, follows a context reference to the memory and back to the retrieval
from there, records a relevance judgment, and reviews an alias proposal; every page passes
the keyboard and label checks on the way."""

from __future__ import annotations

import re
import uuid

from playwright.sync_api import Page, expect

from tests.harness.alias_proposals import scan_for_aliases, store_entities
from tests.harness.browser import Inspector, assert_accessible, tab_to


def test_why_did_the_agent_see_this_and_why_not_that(page: Page, inspector: Inspector) -> None:
    owner = f"journey-{uuid.uuid4().hex[:8]}"
    with inspector.api() as operator:
        created = operator.post("/v1/keys", json={"user_id": owner, "label": "journey"})
    created.raise_for_status()
    with inspector.api(created.json()["secret"]) as api:
        for text in (
            "I adopted a cat named Miso in March",
            "Miso the cat likes tuna",
            "I work in Oslo as a designer",
            "I moved to Lisbon in May",
        ):
            api.post(
                "/v1/store", json={"content": text, "session_id": "journey"}
            ).raise_for_status()
        store_entities(api, ["IBM", "International Business Machines"])
    assert scan_for_aliases(inspector.server, owner) == 1

    # An operator key signs in and must pick the owner.
    page.goto(inspector.url)
    page.get_by_label("API key").fill(inspector.server.operator_key)
    page.get_by_label("Owner (user_id)").fill(owner)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Memory of {owner}")
    assert_accessible(page)

    # Ask, by keyboard: a question with a limit of one leaves the other candidates out.
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Ask").click()
    expect(page.get_by_role("heading", level=1, name="Ask")).to_be_focused()
    assert_accessible(page)
    tab_to(page, "Question")
    page.keyboard.type("What is the name of my cat?")
    tab_to(page, "Limit (optional)")
    page.keyboard.type("1")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1, name="Retrieval receipt")).to_be_focused()
    request_id = re.search(r"#/retrieval/([0-9a-f-]{36})", page.url)
    assert request_id is not None
    assert_accessible(page)

    # Why not that: a left-out candidate says it lost to the result limit, in words.
    expect(page.locator("div.outcome", has_text="Left out").first).to_contain_text("result limit")
    expect(page.get_by_test_id("context-badge")).to_contain_text("Exactly what the model saw")

    # A relevance judgment on the returned memory is recorded and listed.
    page.get_by_role("combobox").filter(has_text="Not judged").first.select_option(label="Relevant")
    page.get_by_role("button", name="Record relevance").click()
    expect(page.get_by_role("table", name=re.compile("Relevance judgments"))).to_contain_text(
        ": relevant"
    )

    # Why this: the context's [m1] opens the memory it names, whose page lists this retrieval.
    page.locator("pre.context").get_by_role("link", name="[m1]").click()
    expect(page.get_by_role("heading", level=2, name="Retrievals that returned it")).to_be_visible()
    assert_accessible(page)
    back = page.get_by_role("link", name="What is the name of my cat?")
    expect(back).to_have_attribute("href", re.compile(rf"#/retrieval/{request_id.group(1)}"))
    back.click()
    expect(page.get_by_test_id("focus-summary")).to_contain_text("returned as [m1]")

    # Review: the alias proposal is accepted with a reason, recorded under the operator key.
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Review").click()
    expect(page.get_by_role("heading", level=1, name="Review queues")).to_be_focused()
    assert_accessible(page)
    page.get_by_label("Reason for the decision (required)").fill("The same company.")
    page.get_by_role("button", name="Accept").click()
    expect(page.locator("#pending-count")).to_have_text(
        "No alias proposals are waiting for review."
    )
    with inspector.api() as operator:
        [accepted] = operator.get(
            "/v1/alias-proposals", params={"user_id": owner, "status": "accepted"}
        ).json()["items"]
    assert accepted["review"]["reviewed_by_role"] == "operator"

"""The review queue page in a real browser: alias proposals listed with both entity memories
and their evidence, accepted and rejected with a reason (recorded under the signed-in key),
refused without one, reachable by keyboard, and hostile memory content shown as text."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Locator, Page, expect

from tests.harness.alias_proposals import scan_for_aliases, store_entities
from tests.harness.browser import Inspector, assert_accessible, screenshot, sign_in, tab_to

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'
REASON_LABEL = "Reason for the decision (required)"


class Reviewer:
    """A fresh owner with its own key (the server is shared by the whole session), the
    entity memories stored for it, and its alias proposals scanned."""

    def __init__(self, inspector: Inspector, names: list[str]) -> None:
        self.owner = f"review-{uuid.uuid4().hex[:10]}"
        with inspector.api() as operator:
            created = operator.post("/v1/keys", json={"user_id": self.owner, "label": "review"})
        created.raise_for_status()
        self.key: str = created.json()["secret"]
        self.key_id: str = created.json()["key_id"]
        self.inspector = inspector
        with self.api() as api:
            self.stored = store_entities(api, names)
        self.proposals = scan_for_aliases(inspector.server, self.owner)

    def api(self) -> httpx.Client:
        return self.inspector.api(self.key)

    def listed(self, status: str) -> list[dict[str, Any]]:
        with self.api() as api:
            answer = api.get("/v1/alias-proposals", params={"status": status})
        answer.raise_for_status()
        items: list[dict[str, Any]] = answer.json()["items"]
        return items

    def open_queue(self, page: Page) -> None:
        sign_in(page, self.inspector, key=self.key)
        page.get_by_role("navigation", name="Sections").get_by_role("link", name="Review").click()
        expect(page.get_by_role("heading", level=1, name="Review queues")).to_be_focused()


def proposal(page: Page, first: str, second: str) -> Locator:
    """The pending proposal pairing two names (either order)."""
    return (
        page.locator("article.proposal")
        .filter(has=page.get_by_role("link", name=first, exact=True))
        .filter(has=page.get_by_role("link", name=second, exact=True))
    )


def test_accepting_and_rejecting_with_reasons_records_the_keys_decisions(
    page: Page, inspector: Inspector, tmp_path: Path
) -> None:
    # Given an owner with two likely alias pairs
    reviewer = Reviewer(
        inspector, ["IBM", "International Business Machines", "Dr. Smith", "John Smith"]
    )
    assert reviewer.proposals == 2
    reviewer.open_queue(page)

    # Then both are listed with their memories (linked) and their evidence
    ibm = proposal(page, "IBM", "International Business Machines")
    smith = proposal(page, "Dr. Smith", "John Smith")
    expect(ibm).to_have_count(1)
    expect(smith).to_have_count(1)
    ibm_stored = reviewer.stored["IBM"]
    expect(ibm.get_by_role("link", name="IBM", exact=True)).to_have_attribute(
        "href", f"#/memory/{ibm_stored['node_id']}"
    )
    expect(ibm.get_by_role("link", name=ibm_stored["event_id"])).to_have_attribute(
        "href", f"#/event/{ibm_stored['event_id']}"
    )
    expect(ibm.get_by_role("table", name="Signals that paired these names")).to_contain_text(
        "acronym"
    )
    expect(ibm).to_contain_text("Similarity")
    expect(page.locator("#reviewer-identity")).to_contain_text(f"key id {reviewer.key_id}")
    expect(page.get_by_text("Proposed supersedences: not available yet")).to_be_visible()
    screenshot(page, "review", tmp_path)
    assert_accessible(page)

    # When one is accepted and the other rejected, each with a reason
    ibm.get_by_label(REASON_LABEL).fill("Both notes mean the company.")
    ibm.get_by_role("button", name="Accept").click()
    expect(ibm).to_have_count(0)
    smith.get_by_label(REASON_LABEL).fill("Different people: a dentist and a neighbour.")
    smith.get_by_role("button", name="Reject").click()
    expect(smith).to_have_count(0)

    # Then the page shows both decisions and nothing is left pending
    decided = page.get_by_role("list", name="Decisions made on this page")
    expect(decided.get_by_role("listitem").filter(has_text="Accepted:")).to_contain_text(
        "Reason: Both notes mean the company."
    )
    expect(decided.get_by_role("listitem").filter(has_text="Rejected:")).to_contain_text(
        "Dr. Smith"
    )
    expect(decided).to_contain_text(f"key id {reviewer.key_id}")
    expect(page.locator("#pending-count")).to_have_text(
        "No alias proposals are waiting for review."
    )

    # And the API recorded each under the signing key, with its reason
    assert reviewer.listed("pending") == []
    [accepted] = reviewer.listed("accepted")
    [rejected] = reviewer.listed("rejected")
    assert accepted["review"]["reviewed_by_key_id"] == reviewer.key_id
    assert accepted["review"]["reviewed_by_role"] == "owner"
    assert accepted["review"]["reason"] == "Both notes mean the company."
    assert rejected["review"]["reviewed_by_key_id"] == reviewer.key_id
    assert rejected["review"]["reason"] == "Different people: a dentist and a neighbour."
    assert {n["name"] for n in rejected["proposal"]["nodes"]} == {"Dr. Smith", "John Smith"}

    # And the Decided view lists both with the recorded key and the reasons
    page.get_by_role("link", name="Decided", exact=True).click()
    table = page.get_by_role("table", name="Decided alias proposals, newest first")
    expect(table.locator("tbody tr")).to_have_count(2)
    expect(table).to_contain_text("Both notes mean the company.")
    expect(table).to_contain_text("Different people: a dentist and a neighbour.")
    expect(table).to_contain_text(f"key id {reviewer.key_id}, role owner")
    assert_accessible(page)


def test_a_decision_without_a_reason_is_refused_and_nothing_is_recorded(
    page: Page, inspector: Inspector
) -> None:
    reviewer = Reviewer(inspector, ["Acme Inc.", "ACME"])
    reviewer.open_queue(page)
    pair = proposal(page, "Acme Inc.", "ACME")

    for button, reason in (("Accept", ""), ("Reject", "   ")):
        pair.get_by_label(REASON_LABEL).fill(reason)
        pair.get_by_role("button", name=button).click()
        expect(pair.get_by_role("alert")).to_contain_text("Write a reason before you")
        expect(pair.get_by_label(REASON_LABEL)).to_be_focused()
        expect(pair.get_by_label(REASON_LABEL)).to_have_attribute("aria-invalid", "true")

    expect(pair).to_have_count(1)
    assert len(reviewer.listed("pending")) == 1
    assert reviewer.listed("accepted") == reviewer.listed("rejected") == []


def test_a_keyboard_user_accepts_a_proposal(page: Page, inspector: Inspector) -> None:
    reviewer = Reviewer(inspector, ["OpenAI", "Open AI"])
    reviewer.open_queue(page)

    tab_to(page, REASON_LABEL)
    page.keyboard.type("Same company, spelled two ways.")
    tab_to(page, "Accept")
    page.keyboard.press("Enter")

    expect(page.get_by_role("list", name="Decisions made on this page")).to_contain_text(
        "Accepted: "
    )
    expect(page.locator("article.proposal")).to_have_count(0)
    [accepted] = reviewer.listed("accepted")
    assert accepted["review"]["reason"] == "Same company, spelled two ways."
    assert accepted["review"]["reviewed_by_key_id"] == reviewer.key_id


def test_hostile_entity_content_is_shown_as_text_and_never_runs(
    page: Page, inspector: Inspector
) -> None:
    # Two spellings of one hostile name: the scan pairs them (same name after case folding).
    reviewer = Reviewer(inspector, [HOSTILE, HOSTILE.upper()])
    assert reviewer.proposals == 1
    reviewer.open_queue(page)

    pair = proposal(page, HOSTILE, HOSTILE.upper())
    expect(pair).to_have_count(1)
    heading = pair.get_by_role("heading", level=3)
    expect(heading).to_contain_text(HOSTILE)
    expect(heading).to_contain_text(HOSTILE.upper())
    pair.get_by_label(REASON_LABEL).fill("Test payload, not an entity.")
    pair.get_by_role("button", name="Reject").click()
    expect(page.get_by_role("list", name="Decisions made on this page")).to_contain_text(HOSTILE)
    page.get_by_role("link", name="Decided", exact=True).click()
    expect(page.get_by_role("table", name="Decided alias proposals, newest first")).to_contain_text(
        HOSTILE
    )

    assert page.evaluate("() => typeof window.__pwned") == "undefined"
    assert page.locator("main script, main img").count() == 0


def test_an_operator_reviews_for_the_owner_it_chose_and_its_own_key_is_recorded(
    page: Page, inspector: Inspector
) -> None:
    reviewer = Reviewer(inspector, ["Lisbon", "LISBON."])
    operator_key_id = inspector.server.operator_key.split("_")[1]  # prme_<key_id>_<secret>
    sign_in(page, inspector, key=inspector.server.operator_key, owner=reviewer.owner)
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Review").click()
    expect(page.locator("#reviewer-identity")).to_contain_text(
        f"key id {operator_key_id} (role operator)"
    )

    # The scope filter narrows the queue, and the choice is kept in the address.
    page.get_by_label("Scope").select_option("project")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#pending-count")).to_have_text(
        "No alias proposals are waiting for review."
    )
    expect(page).to_have_url(re.compile(r"#/review\?scope=project$"))
    page.get_by_label("Scope").select_option("personal")
    page.get_by_role("button", name="Show").click()

    pair = proposal(page, "Lisbon", "LISBON.")
    pair.get_by_label(REASON_LABEL).fill("The same city.")
    pair.get_by_role("button", name="Accept").click()
    expect(pair).to_have_count(0)

    [accepted] = reviewer.listed("accepted")
    assert accepted["review"]["reviewed_by_key_id"] == operator_key_id
    assert accepted["review"]["reviewed_by_role"] == "operator"

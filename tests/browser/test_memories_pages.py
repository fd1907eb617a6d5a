"""The Memories pages in a real browser: the owner's memory list with its filters and paging,
a memory's page (verbatim source, derived nodes, history, edges, retrievals), a source
event's page, owner isolation, keyboard use, and memory content shown only as text."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.harness.browser import (
    Inspector,
    assert_accessible,
    owner_key,
    screenshot,
    sign_in,
    tab_to,
)

# Markup in every field a caller controls; the pages must show it as these exact characters.
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'


def store(client: httpx.Client, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/store", json=body)
    response.raise_for_status()
    stored: dict[str, Any] = response.json()
    return stored


@dataclass(frozen=True)
class Seeded:
    """One owner's memories in a session of their own, so the shared server's other data never
    shows in a filtered list."""

    session: str
    other_session: str
    bees: dict[str, Any]  # fact, 2021
    tea: dict[str, Any]  # preference, 2022
    garden: dict[str, Any]  # note, 2023-01
    porto: dict[str, Any]  # fact, superseded by lisbon
    lisbon: dict[str, Any]  # fact, promoted to stable, supersedes porto
    elsewhere: dict[str, Any]  # in other_session

    @property
    def active(self) -> list[dict[str, Any]]:
        return [self.bees, self.tea, self.garden, self.lisbon]

    @property
    def every(self) -> list[dict[str, Any]]:
        return [*self.active, self.porto]


@pytest.fixture(scope="module")
def seeded(inspector: Inspector) -> Seeded:
    tag = uuid.uuid4().hex[:8]
    session, other_session = f"mem-{tag}", f"mem-other-{tag}"
    with inspector.api(inspector.owner_key) as api:

        def put(
            content: str, node_type: str, when: str, in_session: str = session
        ) -> dict[str, Any]:
            return store(
                api,
                content=f"{content} ({tag})",
                node_type=node_type,
                session_id=in_session,
                event_time=when,
            )

        bees = put("Mira keeps bees on the roof", "fact", "2021-05-03T10:00:00+00:00")
        tea = put(
            "Mira prefers green tea in the morning", "preference", "2022-07-01T08:00:00+00:00"
        )
        garden = put("Mira's note about the garden beds", "note", "2023-01-15T12:00:00+00:00")
        porto = put("Mira lives in Porto", "fact", "2023-02-01T12:00:00+00:00")
        lisbon = put("Mira moved to Lisbon", "fact", "2023-03-01T12:00:00+00:00")
        elsewhere = put(
            "Mira's bicycle is blue", "fact", "2023-04-01T12:00:00+00:00", other_session
        )
        api.put(f"/v1/nodes/{lisbon['node_id']}/promote").raise_for_status()
        api.post(
            "/v1/supersedences",
            json={"old_node_id": porto["node_id"], "new_node_id": lisbon["node_id"]},
        ).raise_for_status()
    return Seeded(session, other_session, bees, tea, garden, porto, lisbon, elsewhere)


def memory_rows(page: Page) -> list[str]:
    """The memory ids the list shows, in order (from each row's link)."""
    hrefs = page.locator("main tbody td:first-child a").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))"
    )
    return [href.removeprefix("#/memory/") for href in hrefs]


def expect_memories(page: Page, expected: set[str]) -> None:
    """Wait until the list shows exactly these memories (the list renders after the address
    changes, so an assertion that does not wait could read the previous list)."""
    links = page.locator("main tbody td:first-child a")
    expect(links).to_have_count(len(expected))
    for node_id in expected:
        expect(page.locator(f'main tbody a[href="#/memory/{node_id}"]')).to_have_count(1)
    expect(links).to_have_count(len(expected))


def ids(*stored: dict[str, Any]) -> set[str]:
    return {item["node_id"] for item in stored}


def apply_filters(page: Page) -> None:
    page.get_by_role("button", name="Apply filters").click()


def test_the_list_shows_the_owners_memories_and_each_filter_narrows_it(
    page: Page, inspector: Inspector, seeded: Seeded, tmp_path: Path
) -> None:
    sign_in(page, inspector, key=inspector.owner_key)
    page.get_by_role("link", name="Memories", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Memories")
    page.get_by_label("Session").fill(seeded.session)
    apply_filters(page)
    expect(page).to_have_url(re.compile(f"session_id={seeded.session}"))
    expect_memories(page, ids(*seeded.active))
    row = page.locator("main tbody tr", has_text="green tea")
    expect(row).to_contain_text("preference")
    expect(row).to_contain_text("tentative")
    expect(row).to_contain_text("personal")
    expect(row).to_contain_text("2022-07-01 08:00:00Z")
    screenshot(page, "memories", tmp_path)
    assert_accessible(page)

    # Each filter keeps the session filter and narrows the list; Back undoes it.
    page.get_by_label("Type").select_option("preference")
    apply_filters(page)
    expect(page).to_have_url(re.compile("node_type=preference"))
    expect_memories(page, ids(seeded.tea))
    page.go_back()
    expect(page.get_by_label("Type")).to_have_value("")
    expect_memories(page, ids(*seeded.active))

    page.get_by_label("Lifecycle").select_option("stable")
    apply_filters(page)
    expect_memories(page, ids(seeded.lisbon))
    page.get_by_label("Lifecycle").select_option("superseded")
    apply_filters(page)
    expect_memories(page, ids(seeded.porto))
    page.get_by_label("Lifecycle").select_option("")
    page.get_by_label("Include inactive").check()
    apply_filters(page)
    expect_memories(page, ids(*seeded.every))
    page.get_by_label("Include inactive").uncheck()

    page.get_by_label("Search text").fill("GREEN tea")
    apply_filters(page)
    expect_memories(page, ids(seeded.tea))
    page.get_by_label("Search text").fill("")

    page.get_by_label("From date").fill("2022-01-01")
    page.get_by_label("Until date").fill("2023-01-15")  # that day included
    apply_filters(page)
    expect_memories(page, ids(seeded.tea, seeded.garden))
    page.get_by_label("From date").fill("")
    page.get_by_label("Until date").fill("")

    page.get_by_label("Session").fill(seeded.other_session)
    apply_filters(page)
    expect_memories(page, ids(seeded.elsewhere))


def test_paging_with_a_small_limit_visits_every_memory_once(
    page: Page, inspector: Inspector, seeded: Seeded
) -> None:
    sign_in(page, inspector, key=inspector.owner_key)
    page.goto(
        f"{inspector.url}#/memories?session_id={seeded.session}&include_inactive=true&limit=2"
    )
    seen: list[str] = []
    for number in range(1, 10):
        expect(page.locator("#memories-count")).to_contain_text(f"Page {number}:")
        rows = memory_rows(page)
        assert len(rows) <= 2
        seen += rows
        following = page.get_by_role("link", name="Next page")
        if following.count() == 0:
            break
        following.click()
        expect(page.get_by_role("link", name="First page")).to_be_visible()
    assert sorted(seen) == sorted(ids(*seeded.every))
    page.get_by_role("link", name="First page").click()
    expect(page.locator("#memories-count")).to_contain_text("Page 1:")
    assert memory_rows(page) == seen[:2]


def test_a_memory_page_shows_source_history_edges_and_links_to_the_other_memory(
    page: Page, inspector: Inspector, seeded: Seeded, tmp_path: Path
) -> None:
    lisbon, porto = seeded.lisbon, seeded.porto
    with inspector.api(inspector.owner_key) as api:
        found = api.post("/v1/retrieve", json={"query": "Where did Mira move? Lisbon"})
        found.raise_for_status()
    returned = lisbon["node_id"] in {item["node_id"] for item in found.json()["results"]}
    sign_in(page, inspector, key=inspector.owner_key)
    page.goto(f"{inspector.url}#/memory/{lisbon['node_id']}")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Fact memory")
    content = page.locator("#memory-content")
    expect(content).to_have_text(re.compile(r"^Mira moved to Lisbon \(\w+\)$"))
    expect(page.locator(".source-text")).to_have_text(content.inner_text())
    facts = page.locator("main dl.facts").first
    expect(facts).to_contain_text("stable")
    expect(facts).to_contain_text(seeded.session)
    expect(facts).to_contain_text("2023-03-01 12:00:00Z")

    history = page.get_by_role("table", name="Journal records about this memory, oldest first")
    expect(history).to_contain_text("Lifecycle tentative → stable (promote)")
    expect(history).to_contain_text("Replaced an older memory")
    edges = page.get_by_role("table", name="Edges between this memory and others")
    expect(edges.locator("tbody tr")).to_have_count(1)
    expect(edges).to_contain_text("Supersedes")
    request_id = found.json()["metrics"]["request_id"]
    # Each retrieval opens its receipt focused on this memory.
    focused = f"#/retrieval/{request_id}?focus={lisbon['node_id']}"
    retrieval = page.locator(f'main tbody tr:has(a[href="{focused}"])')
    expect(retrieval.locator("td").nth(1)).to_have_text("Where did Mira move? Lisbon")
    if returned:
        expect(retrieval.locator("td").nth(2)).to_have_text("returned")
    screenshot(page, "memory", tmp_path)
    assert_accessible(page)

    # The edge leads to the superseded memory, whose page leads back.
    edges.get_by_role("link", name=re.compile("Mira lives in Porto")).click()
    expect(page).to_have_url(re.compile(f"#/memory/{porto['node_id']}$"))
    expect(page.locator("#memory-content")).to_contain_text("Mira lives in Porto")
    expect(page.locator("main dl.facts").first).to_contain_text("superseded")
    page_history = page.get_by_role("table", name="Journal records about this memory, oldest first")
    expect(page_history).to_contain_text("Superseded by the memory that replaced it")
    back_edges = page.get_by_role("table", name="Edges between this memory and others")
    expect(back_edges).to_contain_text("Superseded by")
    back_edges.get_by_role("link", name=re.compile("Mira moved to Lisbon")).click()
    expect(page).to_have_url(re.compile(f"#/memory/{lisbon['node_id']}$"))


def test_a_memory_page_lists_other_nodes_of_its_source_and_the_retrievals_that_ranked_it(
    page: Page, inspector: Inspector, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    with inspector.api(inspector.owner_key) as api:
        ingested = api.post(
            "/v1/ingest",
            json={
                "content": f"Nadia adopted a cat named Pixel{tag}. Nadia works at the Tern Clinic.",
                "session_id": f"mem-ingest-{tag}",
                "wait_for_extraction": True,
            },
        )
        ingested.raise_for_status()
        event_id = ingested.json()["event_id"]
        derived = api.get(f"/v1/events/{event_id}/nodes").json()
        assert len(derived) >= 2
        found = api.post("/v1/retrieve", json={"query": f"Pixel{tag} cat Nadia"})
        found.raise_for_status()
        request_id = found.json()["metrics"]["request_id"]
        returned = {item["node_id"] for item in found.json()["results"]}
        raw = next(node for node in derived if node["id"] in returned)
        others = [node for node in derived if node["id"] != raw["id"]]
        strict = api.post(
            "/v1/retrieve", json={"query": f"Pixel{tag} cat Nadia", "min_score": 0.99}
        )
        strict.raise_for_status()
        assert raw["id"] not in {item["node_id"] for item in strict.json()["results"]}
        strict_id = strict.json()["metrics"]["request_id"]

    sign_in(page, inspector, key=inspector.owner_key)
    page.goto(f"{inspector.url}#/memory/{raw['id']}")
    derived_table = page.get_by_role("table", name="Other memories derived from source event")
    for other in others:
        expect(derived_table.locator(f'a[href="#/memory/{other["id"]}"]')).to_have_count(1)
    retrievals = page.get_by_role("table", name=re.compile("Saved retrievals that ranked"))
    row = retrievals.locator(
        "tbody tr", has=page.locator(f'a[href="#/retrieval/{request_id}?focus={raw["id"]}"]')
    )
    expect(row).to_have_count(1)
    expect(row).to_contain_text(f"Pixel{tag} cat Nadia")
    expect(row.locator("td").nth(2)).to_have_text("returned")
    left_out = retrievals.locator(
        "tbody tr", has=page.locator(f'a[href="#/retrieval/{strict_id}?focus={raw["id"]}"]')
    )
    expect(left_out.locator("td").nth(2)).to_have_text("left out: below min_score")
    expect(page.locator("#retrievals-scanned")).to_contain_text("ranked this memory")
    assert_accessible(page)

    # The source event's page: verbatim, with every memory derived from it and its extraction.
    page.get_by_role("link", name="Open source event").click()
    expect(page).to_have_url(re.compile(f"#/event/{event_id}$"))
    expect(page.locator("#event-content")).to_have_text(
        f"Nadia adopted a cat named Pixel{tag}. Nadia works at the Tern Clinic."
    )
    event_derived = page.get_by_role(
        "table", name="Memory nodes derived from or reinforced by this event"
    )
    expect(event_derived.locator("tbody tr")).to_have_count(len(derived))
    expect(page.locator("main")).to_contain_text("by rules/1")
    screenshot(page, "event", tmp_path)


def test_the_source_events_view_and_an_event_page(
    page: Page, inspector: Inspector, seeded: Seeded
) -> None:
    sign_in(page, inspector, key=inspector.owner_key)
    page.goto(f"{inspector.url}#/memories?view=events&session_id={seeded.session}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Source events")
    expect(page.locator("main tbody tr")).to_have_count(5)
    page.get_by_label("Search text").fill("green TEA")
    apply_filters(page)
    expect(page.locator("main tbody tr")).to_have_count(1)
    page.get_by_label("Role").select_option("assistant")
    apply_filters(page)
    expect(page.get_by_text("No source events match these filters.")).to_be_visible()
    page.get_by_label("Role").select_option("user")
    apply_filters(page)
    expect(page.locator("main tbody tr")).to_have_count(1)
    assert_accessible(page)
    page.locator("main tbody a").click()

    tea = seeded.tea
    expect(page).to_have_url(re.compile(f"#/event/{tea['event_id']}$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Source event")
    expect(page.locator("#event-content")).to_have_text(
        re.compile(r"^Mira prefers green tea in the morning \(\w+\)$")
    )
    expect(page.locator("main dl.facts").first).to_contain_text("2022-07-01 08:00:00Z")
    derived = page.get_by_role(
        "table", name="Memory nodes derived from or reinforced by this event"
    )
    expect(derived.locator(f'a[href="#/memory/{tea["node_id"]}"]')).to_have_count(1)
    expect(page.locator("main")).to_contain_text("Indexing")
    assert_accessible(page)


def test_a_contradiction_shows_in_both_memories_history_and_links(
    page: Page, inspector: Inspector
) -> None:
    tag = uuid.uuid4().hex[:8]
    with inspector.api(inspector.owner_key) as api:
        early = store(api, content=f"The Orla meeting is on Monday ({tag})", node_type="fact")
        late = store(api, content=f"The Orla meeting is on Friday ({tag})", node_type="fact")
        api.post(
            "/v1/contradictions",
            json={"node_a_id": early["node_id"], "node_b_id": late["node_id"]},
        ).raise_for_status()
    sign_in(page, inspector, key=inspector.owner_key)
    page.goto(f"{inspector.url}#/memory/{early['node_id']}")
    expect(page.locator("main dl.facts").first).to_contain_text("contested")
    history = page.get_by_role("table", name="Journal records about this memory, oldest first")
    expect(history).to_contain_text("Marked as contradicting another memory")
    edges = page.get_by_role("table", name="Edges between this memory and others")
    expect(edges.locator("tbody tr")).to_contain_text("Contradicts")
    edges.get_by_role("link", name=re.compile("on Friday")).click()
    expect(page).to_have_url(re.compile(f"#/memory/{late['node_id']}$"))
    expect(page.get_by_role("table", name="Edges between this memory and others")).to_contain_text(
        "Contradicts"
    )


def test_a_section_whose_route_fails_says_so_and_the_rest_of_the_page_shows(
    page: Page, inspector: Inspector, seeded: Seeded
) -> None:
    # As a server without the retrievals route answers (FastAPI's 404 has no error code),
    # and a provenance read that fails on the server's side.
    page.route(
        "**/v1/nodes/*/retrievals*",
        lambda route: route.fulfill(status=404, json={"detail": "Not Found"}),
    )
    page.route(
        "**/v1/nodes/*/provenance*",
        lambda route: route.fulfill(
            status=503, json={"detail": "Storage unavailable", "error": "unavailable"}
        ),
    )
    sign_in(page, inspector, key=inspector.owner_key)
    page.goto(f"{inspector.url}#/memory/{seeded.lisbon['node_id']}")
    expect(page.locator("main")).to_contain_text(
        "This server cannot show the retrievals of this memory yet"
    )
    expect(page.get_by_role("alert")).to_contain_text("Could not show the journal history.")
    expect(page.locator("#memory-content")).to_contain_text("Mira moved to Lisbon")
    expect(page.get_by_role("table", name="Edges between this memory and others")).to_contain_text(
        "Supersedes"
    )


def test_an_operator_sees_the_memories_of_the_owner_it_chose(
    page: Page, inspector: Inspector, seeded: Seeded
) -> None:
    sign_in(page, inspector, key=inspector.server.operator_key, owner=inspector.owner)
    page.goto(f"{inspector.url}#/memories?session_id={seeded.session}")
    expect_memories(page, ids(*seeded.active))
    page.get_by_role("link", name=re.compile("Mira moved to Lisbon")).click()
    expect(page.locator("#memory-content")).to_contain_text("Mira moved to Lisbon")
    expect(page.get_by_role("table", name="Edges between this memory and others")).to_contain_text(
        "Supersedes"
    )
    expect(page.locator("#retrievals-scanned")).to_be_visible()


def test_another_owners_memory_and_event_are_not_found(page: Page, inspector: Inspector) -> None:
    secret = f"Bob's locker code is {uuid.uuid4().hex[:8]}"
    with inspector.api(owner_key(inspector.server, f"bob-{uuid.uuid4().hex[:6]}")) as bob:
        theirs = store(bob, content=secret)
    sign_in(page, inspector, key=inspector.owner_key)
    page.goto(f"{inspector.url}#/memory/{theirs['node_id']}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Memory not found")
    expect(page.get_by_role("alert")).to_contain_text("Not found")
    page.goto(f"{inspector.url}#/event/{theirs['event_id']}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Source event not found")
    assert secret not in page.locator("body").inner_text()
    assert_accessible(page)
    page.goto(f"{inspector.url}#/memory/not-a-memory-id")
    expect(page.get_by_role("alert")).to_contain_text("does not name a memory")


def test_keyboard_reaches_the_filters_and_opens_a_memory(
    page: Page, inspector: Inspector, seeded: Seeded
) -> None:
    sign_in(page, inspector, key=inspector.owner_key)
    page.goto(f"{inspector.url}#/memories?session_id={seeded.session}")
    expect(page.locator("#memories-count")).to_be_visible()
    tab_to(page, "Search text")
    page.keyboard.type("bees")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile("text=bees"))
    expect_memories(page, ids(seeded.bees))
    name = page.locator("main tbody a").inner_text()
    tab_to(page, name)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(f"#/memory/{seeded.bees['node_id']}$"))
    expect(page.get_by_role("heading", level=1)).to_be_focused()


def test_hostile_content_shows_as_text_on_every_memories_page(
    page: Page, inspector: Inspector
) -> None:
    session = f"{HOSTILE} {uuid.uuid4().hex[:6]}"
    with inspector.api(inspector.owner_key) as api:
        stored = store(
            api, content=HOSTILE, speaker=HOSTILE, session_id=session, metadata={"note": HOSTILE}
        )
    sign_in(page, inspector, key=inspector.owner_key)

    page.goto(inspector.url + "#/memories?" + str(httpx.QueryParams({"session_id": session})))
    expect(page.locator("main tbody a")).to_have_text(HOSTILE)
    expect(page.locator("main tbody")).to_contain_text(session)
    page.goto(
        inspector.url
        + "#/memories?"
        + str(httpx.QueryParams({"view": "events", "session_id": session}))
    )
    cells = page.locator("main tbody tr td")
    expect(cells.nth(0)).to_have_text(HOSTILE)
    expect(cells.nth(2)).to_have_text(HOSTILE)  # speaker
    expect(cells.nth(3)).to_have_text(session)

    page.goto(f"{inspector.url}#/memory/{stored['node_id']}")
    expect(page.locator("#memory-content")).to_have_text(HOSTILE)
    expect(page.locator(".source-text")).to_have_text(HOSTILE)
    expect(page.locator("main dl.facts").first).to_contain_text(session)
    expect(page.locator("main pre.metadata")).to_contain_text(HOSTILE.replace('"', '\\"'))

    page.goto(f"{inspector.url}#/event/{stored['event_id']}")
    expect(page.locator("#event-content")).to_have_text(HOSTILE)
    expect(page.locator("main dl.facts").first).to_contain_text(HOSTILE)
    expect(page.locator("main dl.facts").first).to_contain_text(session)
    expect(page.locator("main pre.metadata")).to_contain_text(HOSTILE.replace('"', '\\"'))

    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("main img, main script").count() == 0

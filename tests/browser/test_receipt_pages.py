"""The Retrievals, receipt and Ask pages in a real browser: a question asked on the page opens
its receipt, which shows the context exactly as the API rebuilds it with each reference linked
to its memory, every candidate with its reason in words, the score steps in order, a replay
that matches, and judgments and citations recorded from the page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
from playwright.sync_api import Page, expect

from tests.harness.browser import (
    Inspector,
    assert_accessible,
    owner_key,
    screenshot,
    sign_in,
    tab_to,
)

PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'


def _seed(api: httpx.Client, marker: str, lines: list[tuple[str, str]]) -> list[str]:
    """Store each (speaker, text) in one new session; returns the node ids in order."""
    session = f"receipt-pages-{uuid4().hex[:8]}"
    ids = []
    for speaker, text in lines:
        stored = api.post(
            "/v1/store",
            json={
                "content": f"{text} ({marker})",
                "speaker": speaker,
                "session_id": session,
                "role": "participant",
            },
        )
        stored.raise_for_status()
        ids.append(stored.json()["node_id"])
    return ids


def _retrieve(api: httpx.Client, **body: Any) -> str:
    response = api.post("/v1/retrieve", json=body)
    response.raise_for_status()
    request_id: str = response.json()["metrics"]["request_id"]
    return request_id


def _receipt(api: httpx.Client, request_id: str) -> dict[str, Any]:
    response = api.get(f"/v1/retrievals/{request_id}")
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


def _open_receipt(page: Page, inspector: Inspector, request_id: str) -> None:
    page.goto(f"{inspector.url}#/retrieval/{request_id}")
    expect(page.get_by_role("heading", name="Retrieval receipt", level=1)).to_be_visible()


def _outcome_of(page: Page, node_id: str) -> Any:
    row = page.locator("tr", has=page.locator(f'span.candidate[data-node-id="{node_id}"]'))
    return row.locator("div.outcome")


def test_a_question_asked_on_the_page_opens_a_receipt_that_explains_it(
    page: Page, inspector: Inspector, api: httpx.Client, tmp_path: Path
) -> None:
    marker = f"otter{uuid4().hex[:6]}"
    _seed(
        api,
        marker,
        [
            ("Caroline", "I adopted a cat named Miso in March"),
            ("Mel", "Caroline's cat Miso likes tuna"),
            ("Caroline", "I work in Oslo as a designer"),
            ("Mel", "The cat sleeps all day"),
            ("Caroline", "I moved to Lisbon in May"),
        ],
    )
    sign_in(page, inspector, key=inspector.owner_key)

    # Ask by keyboard alone: type the question and a small limit, then Enter.
    page.get_by_role("link", name="Ask").click()
    expect(page.get_by_role("heading", name="Ask", level=1)).to_be_visible()
    assert_accessible(page)
    screenshot(page, "ask", tmp_path)
    tab_to(page, "Question")
    page.keyboard.type(f"What did Caroline say about the cat {marker}?")
    tab_to(page, "Limit (optional)")
    page.keyboard.type("2")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Retrieval receipt", level=1)).to_be_visible()
    match = re.search(r"#/retrieval/([0-9a-f-]{36})$", page.url)
    assert match, page.url
    request_id = match.group(1)
    receipt = _receipt(api, request_id)
    rebuilt = api.get(f"/v1/retrievals/{request_id}/context").json()
    assert receipt["query"] == f"What did Caroline say about the cat {marker}?"
    assert receipt["config"]["limit"] == 2

    # The context is the API's text, each reference a link to its memory, with the badge.
    context = page.locator("pre.context")
    expect(context).to_be_visible()
    assert context.text_content() == rebuilt["context"]
    expect(page.get_by_test_id("context-badge")).to_contain_text(
        "Exactly what the model saw (SHA-256 matches)"
    )
    full = [e for e in receipt["context"]["entries"] if e["representation"] == "full"]
    assert full
    for entry in full:
        ref_link = context.get_by_role("link", name=f"[{entry['ref']}]", exact=True)
        expect(ref_link).to_have_attribute("href", f"#/memory/{entry['node_id']}")
    assert context.get_by_role("link").count() == len(full)

    # Every candidate is listed; one past the limit says so in words.
    assert page.locator("span.candidate").count() == len(receipt["candidates"])
    limited = [c for c in receipt["candidates"] if c["outcome"] == "limit"]
    assert limited, "a limit of 2 leaves candidates out"
    expect(_outcome_of(page, limited[0]["node_id"])).to_contain_text(
        "Left out result limit: the 2 results allowed went to higher-ranked candidates"
    )
    returned = receipt["returned_node_ids"]
    first_ref = next(e["ref"] for e in full if e["node_id"] == returned[0])
    expect(_outcome_of(page, returned[0])).to_contain_text(f"Returned as [{first_ref}]")

    # A candidate's adjustments are listed in the order they applied.
    adjusted = next(
        (i, c)
        for i, c in enumerate(receipt["candidates"], start=1)
        if len(c["score_provenance"].get("adjustments", [])) >= 2
    )
    rank, candidate = adjusted
    page.get_by_text(f"Score of #{rank}", exact=True).click()
    steps = page.locator(
        "tr", has=page.locator(f'span.candidate[data-node-id="{candidate["node_id"]}"]')
    )
    shown = steps.locator("li.adjustment")
    expect(shown).to_have_count(len(candidate["score_provenance"]["adjustments"]))
    assert [shown.nth(i).get_attribute("data-op") for i in range(shown.count())] == [
        a["op"] for a in candidate["score_provenance"]["adjustments"]
    ]
    expect(shown.first).to_contain_text("Adjustment 1")

    # Replay by keyboard, from the top of the receipt.
    page.get_by_role("heading", name="Retrieval receipt", level=1).focus()
    tab_to(page, "Replay")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("replay-verdict")).to_contain_text("Replay matches")

    # A relevance judgment shows in the recorded list and through the API.
    page.get_by_label(re.compile(r"^Result 1: ")).select_option("true")
    page.get_by_role("button", name="Record relevance").click()
    expect(page.get_by_role("status").filter(has_text="Recorded judgment")).to_be_visible()
    recorded = page.get_by_role("table", name="Relevance judgments recorded for this retrieval")
    expect(recorded).to_contain_text("Result 1")
    expect(recorded).to_contain_text("relevant")
    judgments = [
        r
        for r in api.get("/v1/relevance", params={"limit": 1000}).json()["items"]
        if r["request_id"] == request_id
    ]
    assert [j["labels"] for j in judgments] == [{returned[0]: True}]

    # So does an answer citation.
    answer_id = f"answer-{uuid4().hex[:8]}"
    page.get_by_label("Answer id").fill(answer_id)
    page.get_by_label(re.compile(rf"^\[{full[0]['ref']}\] ")).check()
    page.get_by_role("button", name="Record answer citations").click()
    expect(page.get_by_role("status").filter(has_text=f"answer {answer_id} cited")).to_be_visible()
    citations = page.get_by_role("table", name="Answer citations recorded for this retrieval")
    expect(citations).to_contain_text(answer_id)
    saved = [
        r
        for r in api.get("/v1/answer-citations", params={"limit": 1000}).json()["items"]
        if r["request_id"] == request_id
    ]
    assert [r["cited_node_ids"] for r in saved] == [[full[0]["node_id"]]]
    assert_accessible(page)
    screenshot(page, "receipt", tmp_path)

    # The list has it, newest first, linking to the receipt.
    page.get_by_role("link", name="Retrievals").first.click()
    expect(page.get_by_role("heading", name="Retrievals", level=1)).to_be_visible()
    listed = page.get_by_role("link", name=receipt["query"])
    expect(listed).to_have_attribute("href", f"#/retrieval/{request_id}")
    assert_accessible(page)
    screenshot(page, "retrievals", tmp_path)


def test_each_rule_that_leaves_a_candidate_out_is_named_in_words(
    page: Page, inspector: Inspector, api: httpx.Client
) -> None:
    marker = f"heron{uuid4().hex[:6]}"
    _seed(
        api,
        marker,
        [
            ("Ana", "The heron stood in the river for an hour this morning"),
            ("Ana", "We saw a heron catch a fish near the old bridge in the rain"),
            ("Ben", "Herons nest in tall trees by the lake every spring, I read"),
            ("Ben", "The heron flew away when the dog barked at it loudly"),
        ],
    )
    query = f"heron {marker}"
    # min_score between the best and the worst semantic relevance: some pass, some do not.
    probe = api.post("/v1/retrieve", json={"query": query, "limit": 20}).json()
    scores = sorted(
        r["semantic_relevance"] for r in probe["results"] if r["semantic_relevance"] is not None
    )
    floor = round((scores[0] + scores[-1]) / 2, 4)
    by_min_score = _retrieve(api, query=query, limit=20, min_score=floor)
    # No limit and a tiny budget: the results are what fitted, the rest "token_budget".
    by_budget = _retrieve(api, query=query, token_budget=40)
    # An explicit limit and a tiny budget: returned, but not in the context.
    returned_unpacked = _retrieve(api, query=query, limit=4, token_budget=40)
    sign_in(page, inspector, key=inspector.owner_key)

    cases = [
        (by_min_score, "min_score", "below the minimum relevance"),
        (by_budget, "token_budget", "token budget: no limit was asked"),
    ]
    for request_id, outcome, words in cases:
        receipt = _receipt(api, request_id)
        left_out = [c for c in receipt["candidates"] if c["outcome"] == outcome]
        assert left_out, f"no candidate left out by {outcome}"
        _open_receipt(page, inspector, request_id)
        shown = _outcome_of(page, left_out[0]["node_id"])
        expect(shown).to_have_attribute("data-outcome", outcome)
        expect(shown).to_contain_text(f"Left out {words}")

    receipt = _receipt(api, returned_unpacked)
    packed = {e["node_id"] for e in receipt["context"]["entries"]}
    unpacked = [n for n in receipt["returned_node_ids"] if n not in packed]
    assert unpacked, "a 40-token budget packs fewer than four results"
    _open_receipt(page, inspector, returned_unpacked)
    expect(_outcome_of(page, unpacked[0])).to_contain_text(
        "in the results, but not in the context: it did not fit the token budget"
    )


def test_another_owners_receipt_is_not_found(page: Page, inspector: Inspector) -> None:
    with inspector.api() as operator:
        created = operator.post(
            "/v1/keys", json={"user_id": f"bob-{uuid4().hex[:6]}", "label": "another owner"}
        )
    created.raise_for_status()
    with inspector.api(created.json()["secret"]) as bob:
        _seed(bob, "bobs", [("Bob", "My locker code is kept here")])
        foreign = _retrieve(bob, query="locker code", limit=1)
    sign_in(page, inspector, key=inspector.owner_key)

    page.goto(f"{inspector.url}#/retrieval/{foreign}")
    expect(page.get_by_role("heading", name="Receipt not found", level=1)).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text("belongs to another owner")
    expect(page.get_by_text("locker code")).to_have_count(0)
    assert_accessible(page)


def test_an_operator_records_a_judgment_for_the_owner_it_chose(
    page: Page, inspector: Inspector, api: httpx.Client
) -> None:
    marker = f"lark{uuid4().hex[:6]}"
    _seed(api, marker, [("Ana", "The lark sang at dawn"), ("Ben", "A lark nested here")])
    request_id = _retrieve(api, query=f"lark {marker}", limit=1)
    sign_in(page, inspector, key=inspector.server.operator_key, owner=inspector.owner)

    _open_receipt(page, inspector, request_id)
    expect(page.get_by_test_id("context-badge")).to_contain_text("Exactly what the model saw")
    page.get_by_label(re.compile(r"^Result 1: ")).select_option("false")
    page.get_by_role("button", name="Record relevance").click()
    expect(page.get_by_role("status").filter(has_text="Recorded judgment")).to_be_visible()
    expect(
        page.get_by_role("table", name="Relevance judgments recorded for this retrieval")
    ).to_contain_text("not relevant")
    judged = [
        r
        for r in api.get("/v1/relevance", params={"limit": 1000}).json()["items"]
        if r["request_id"] == request_id
    ]
    assert [(r["user_id"], list(r["labels"].values())) for r in judged] == [
        (inspector.owner, [False])
    ]

    page.goto(f"{inspector.url}#/retrieval/not-a-request-id")
    expect(page.get_by_role("alert")).to_contain_text("is not a request id")


def test_a_context_that_lost_a_memory_since_says_so(
    page: Page, inspector: Inspector, api: httpx.Client
) -> None:
    marker = f"finch{uuid4().hex[:6]}"
    session = f"receipt-pages-{uuid4().hex[:8]}"
    event_of: dict[str, str] = {}
    for text in ("The finch ate seeds", "A finch sang on the fence", "Finches came back"):
        stored = api.post(
            "/v1/store", json={"content": f"{text} ({marker})", "session_id": session}
        ).json()
        event_of[stored["node_id"]] = stored["event_id"]
    request_id = _retrieve(api, query=f"finch {marker}", limit=2)
    gone = next(n for n in _receipt(api, request_id)["returned_node_ids"] if n in event_of)
    api.delete(f"/v1/events/{event_of[gone]}").raise_for_status()
    sign_in(page, inspector, key=inspector.owner_key)

    _open_receipt(page, inspector, request_id)
    badge = page.get_by_test_id("context-badge")
    expect(badge).to_contain_text("Not exactly what the model saw")
    expect(badge).to_contain_text(f"Deleted since (their lines are missing): {gone}")
    expect(page.locator(f'span.candidate[data-node-id="{gone}"]')).to_have_text(
        f"deleted memory {gone}"
    )


def test_the_list_pages_back_to_older_retrievals(
    page: Page, inspector: Inspector, api: httpx.Client
) -> None:
    marker = f"pager{uuid4().hex[:6]}"
    # One more than a page (25), newest first: the oldest is alone on the next page.
    for i in range(26):
        _retrieve(api, query=f"{marker} question {i}", limit=1)
    sign_in(page, inspector, key=inspector.owner_key)

    page.goto(f"{inspector.url}#/retrievals")
    expect(page.get_by_role("link", name=f"{marker} question 25")).to_be_visible()
    expect(page.get_by_role("link", name=f"{marker} question 0")).to_have_count(0)
    page.get_by_role("link", name="Next page").click()
    expect(page.get_by_role("link", name=f"{marker} question 0")).to_be_visible()
    page.go_back()
    expect(page.get_by_role("link", name=f"{marker} question 25")).to_be_visible()


def test_markup_in_memories_and_queries_shows_as_text(
    page: Page, inspector: Inspector, api: httpx.Client
) -> None:
    marker = f"xss{uuid4().hex[:6]}"
    (node_id,) = _seed(api, marker, [("Eve", f"{PAYLOAD} remember this")])
    query = f"{PAYLOAD} {marker}"
    request_id = _retrieve(api, query=query, limit=3)
    sign_in(page, inspector, key=inspector.owner_key)

    _open_receipt(page, inspector, request_id)
    expect(page.get_by_test_id("query")).to_have_text(query)
    expect(page.locator("pre.context")).to_contain_text(PAYLOAD)
    candidate = page.locator(f'span.candidate[data-node-id="{node_id}"]')
    expect(candidate).to_contain_text(PAYLOAD)
    page.get_by_role("button", name="Replay").click()
    expect(page.get_by_test_id("replay-verdict")).to_contain_text("Replay matches")

    page.goto(f"{inspector.url}#/retrievals")
    expect(page.get_by_role("link", name=query)).to_have_attribute(
        "href", f"#/retrieval/{request_id}"
    )
    assert page.locator("main script, main img").count() == 0
    assert page.evaluate("() => typeof window.__pwned") == "undefined"


def test_a_receipt_of_many_candidates_reads_their_memories_in_one_request(
    page: Page, inspector: Inspector
) -> None:
    # An owner of its own: thirty more memories would be candidates of the other tests'
    # retrievals on the shared server, and lengthen their pages.
    key = owner_key(inspector.server, f"many-candidates-{uuid4().hex[:8]}")
    with inspector.api(key) as api:
        node_ids = _seed(api, "wader", [("Ann", f"Wader sighting number {i}") for i in range(30)])
        request_id = _retrieve(api, query="wader sighting", limit=3)
        candidates = [c["node_id"] for c in _receipt(api, request_id)["candidates"]]
    assert len(candidates) >= 25, "the receipt needs many candidates"
    sign_in(page, inspector, key=key)
    api_requests: list[str] = []
    page.on(
        "request",
        lambda request: (
            api_requests.append(f"{request.method} {request.url}")
            if "/v1/" in request.url
            else None
        ),
    )

    _open_receipt(page, inspector, request_id)
    expect(page.get_by_test_id("recorded")).to_contain_text("No relevance judgment")
    last = next(n for n in reversed(candidates) if n in node_ids)
    expect(page.locator(f'span.candidate[data-node-id="{last}"]')).to_contain_text(
        "Wader sighting number"
    )

    batch_reads = [r for r in api_requests if r.startswith("POST ") and "/v1/nodes/batch-get" in r]
    one_node_reads = [r for r in api_requests if re.search(r"GET \S*/v1/nodes/[0-9a-f-]{36}", r)]
    assert len(batch_reads) == 1, api_requests
    assert one_node_reads == []
    # The receipt, its context, the memories, and this retrieval's judgments and citations.
    assert len(api_requests) <= 6, api_requests
    assert all("request_id=" in r for r in api_requests if "/v1/relevance" in r), api_requests

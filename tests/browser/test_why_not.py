""" "Why not that memory?" in a real browser: a receipt opened with ?focus=<node id> says at the
top why that memory was returned, left out, or never a candidate (superseded, stored after the
retrieval, not among any channel's best matches), highlights and focuses its row; a search box
narrows the candidates; a memory's page runs a question and lands on the focused receipt."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote
from uuid import uuid4

import httpx
from playwright.sync_api import Locator, Page, expect

from tests.harness.browser import (
    Inspector,
    assert_accessible,
    owner_key,
    screenshot,
    sign_in,
    tab_to,
)

PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'


def _store(api: httpx.Client, content: str, session: str, **extra: Any) -> str:
    stored = api.post(
        "/v1/store", json={"content": content, "session_id": session, "speaker": "Rosa", **extra}
    )
    stored.raise_for_status()
    node_id: str = stored.json()["node_id"]
    return node_id


def _retrieve(api: httpx.Client, **body: Any) -> dict[str, Any]:
    """The receipt of a new retrieval."""
    response = api.post("/v1/retrieve", json=body)
    response.raise_for_status()
    request_id = response.json()["metrics"]["request_id"]
    receipt = api.get(
        f"/v1/retrievals/{request_id}", params=body.get("user_id") and {"user_id": body["user_id"]}
    )
    receipt.raise_for_status()
    saved: dict[str, Any] = receipt.json()
    return saved


def _open_focused(page: Page, inspector: Inspector, request_id: str, focus: str) -> Locator:
    page.goto(f"{inspector.url}#/retrieval/{request_id}?focus={quote(focus, safe='')}")
    expect(page.get_by_role("heading", name="Retrieval receipt", level=1)).to_be_visible()
    summary = page.get_by_test_id("focus-summary")
    expect(summary).to_be_visible()
    return summary


def _candidate_ids(receipt: dict[str, Any]) -> list[str]:
    return [candidate["node_id"] for candidate in receipt["candidates"]]


def test_a_memory_left_out_by_the_limit_is_explained_and_its_row_has_focus(
    page: Page, inspector: Inspector, tmp_path: Path
) -> None:
    # An owner of its own: other tests' memories would add candidates, and the keyboard walk
    # below passes every row after the focused one.
    key = owner_key(inspector.server, f"why-not-{uuid4().hex[:8]}")
    api = inspector.api(key)
    marker = f"heron{uuid4().hex[:6]}"
    session = f"why-not-{marker}"
    for text in [
        "Rosa keeps bees on the roof",
        "Rosa's bees made honey in June",
        "Rosa sold the honey at the market",
    ]:
        _store(api, f"{text} ({marker})", session)
    receipt = _retrieve(api, query=f"What about Rosa's bees and honey {marker}?", limit=1)
    fused = [c for c in receipt["candidates"] if not c["context_of"]]
    left_out_rank, left_out = next(
        (rank, c) for rank, c in enumerate(fused, start=1) if c["outcome"] == "limit"
    )
    returned = receipt["returned_node_ids"][0]

    sign_in(page, inspector, key=key)
    summary = _open_focused(page, inspector, receipt["request_id"], left_out["node_id"])
    expect(summary).to_contain_text(
        f"This memory was ranked #{left_out_rank} of {len(fused)} candidates: left out: result "
        "limit: the one result allowed went to a higher-ranked candidate"
    )
    # Keyboard focus is on the highlighted row, with a visible ring, and its score is open.
    row = page.locator("tr.focused-candidate")
    expect(row).to_have_count(1)
    expect(row.locator(f'span.candidate[data-node-id="{left_out["node_id"]}"]')).to_have_count(1)
    expect(row).to_be_focused()
    assert row.evaluate("el => getComputedStyle(el).outlineStyle") != "none"
    expect(row.locator("details.score-steps")).to_have_attribute("open", "")
    expect(row.locator("div.outcome")).to_contain_text("result limit")
    screenshot(page, "why-not", tmp_path)
    # The button in the summary takes a keyboard user back to the row.
    tab_to(page, "Go to its row")
    page.keyboard.press("Enter")
    expect(row).to_be_focused()
    assert_accessible(page)

    # The returned one says where the model saw it.
    summary = _open_focused(page, inspector, receipt["request_id"], returned)
    expect(summary).to_contain_text("This memory was ranked #1")
    expect(summary).to_contain_text("returned as [m1] in the context")
    api.close()


def test_the_search_box_narrows_the_candidates_by_text_or_id(
    page: Page, inspector: Inspector, api: httpx.Client
) -> None:
    marker = f"lark{uuid4().hex[:6]}"
    session = f"why-not-{marker}"
    tulip = _store(api, f"Rosa planted tulips by the gate ({marker})", session)
    _store(api, f"Rosa planted roses by the wall ({marker})", session)
    receipt = _retrieve(api, query=f"What did Rosa plant {marker}?", limit=1)
    total = len(receipt["candidates"])
    assert tulip in _candidate_ids(receipt)

    sign_in(page, inspector, key=inspector.owner_key)
    page.goto(f"{inspector.url}#/retrieval/{receipt['request_id']}")
    rows = page.get_by_role("table", name=re.compile("^Candidates in fused order")).locator(
        "tbody tr"
    )
    search = page.get_by_label("Find a memory among the candidates")
    search.fill("TULIPS by the gate")
    expect(rows.locator("visible=true")).to_have_count(1)
    expect(rows.locator("visible=true").locator("span.candidate")).to_have_attribute(
        "data-node-id", tulip
    )
    expect(page.get_by_test_id("candidate-search-count")).to_have_text(
        f"1 of {total} candidates match."
    )
    search.fill(tulip)
    expect(rows.locator("visible=true")).to_have_count(1)
    search.fill("")
    expect(rows.locator("visible=true")).to_have_count(total)


def test_a_superseded_memory_is_explained_with_the_memory_that_replaced_it(
    page: Page, inspector: Inspector, api: httpx.Client
) -> None:
    marker = f"wren{uuid4().hex[:6]}"
    session = f"why-not-{marker}"
    porto = _store(api, f"Rosa lives in Porto ({marker})", session)
    lisbon = _store(api, f"Rosa moved to Lisbon ({marker})", session)
    api.post(
        "/v1/supersedences", json={"old_node_id": porto, "new_node_id": lisbon}
    ).raise_for_status()
    receipt = _retrieve(api, query=f"Where does Rosa live {marker}?", limit=3)
    assert porto not in _candidate_ids(receipt)

    sign_in(page, inspector, key=inspector.owner_key)
    summary = _open_focused(page, inspector, receipt["request_id"], porto)
    expect(summary).to_contain_text("is not among the")
    expect(summary).to_contain_text(
        "It is not current: it is superseded: a newer memory replaced it"
    )
    expect(summary).to_contain_text("default mode, which searches only current memories")
    replaced_by = summary.get_by_role("link", name=re.compile("Rosa moved to Lisbon"))
    expect(replaced_by).to_have_attribute("href", f"#/memory/{lisbon}")
    expect(page.locator("tr.focused-candidate")).to_have_count(0)
    expect(summary).to_be_focused()


def test_a_memory_stored_after_the_retrieval_is_explained_so(
    page: Page, inspector: Inspector, api: httpx.Client
) -> None:
    marker = f"finch{uuid4().hex[:6]}"
    session = f"why-not-{marker}"
    _store(api, f"Rosa bakes rye bread ({marker})", session)
    receipt = _retrieve(api, query=f"What bread does Rosa bake {marker}?", limit=2)
    later = _store(api, f"Rosa now bakes spelt bread ({marker})", session)

    sign_in(page, inspector, key=inspector.owner_key)
    summary = _open_focused(page, inspector, receipt["request_id"], later)
    expect(summary).to_contain_text("It was stored after this retrieval ran")
    expect(summary.get_by_role("link", name="Ask the same question again")).to_have_attribute(
        "href", re.compile(r"^#/ask\?q=")
    )


def test_an_unrelated_memory_is_not_among_the_best_matches_of_any_channel(
    page: Page, inspector: Inspector
) -> None:
    # Its own owner: every channel's best matches are then these memories, not other tests'.
    owner = f"why-not-{uuid4().hex[:8]}"
    with inspector.api() as operator:
        for i in range(52):
            operator.post(
                "/v1/store",
                json={"user_id": owner, "content": f"Rosa walked the dog by the canal, walk {i}"},
            ).raise_for_status()
        unrelated = operator.post(
            "/v1/store",
            json={"user_id": owner, "content": "Quarterly tax invoices filed with accountant"},
        )
        unrelated.raise_for_status()
        unrelated_id = unrelated.json()["node_id"]
        receipt = _retrieve(
            operator, user_id=owner, query="Where did Rosa walk the dog by the canal?", limit=2
        )
    depth = receipt["config"]["candidate_depth"]
    assert depth is not None and depth < 53
    assert unrelated_id not in _candidate_ids(receipt)

    sign_in(page, inspector, key=inspector.server.operator_key, owner=owner)
    summary = _open_focused(page, inspector, receipt["request_id"], unrelated_id)
    expect(summary).to_contain_text(
        "It was searched but not among the best matches of any search channel: each search "
        f"channel (vector: meaning; lexical: words) returns only its best {depth} matches"
    )


def test_the_memory_page_question_form_opens_the_receipt_focused_on_it(
    page: Page, inspector: Inspector, api: httpx.Client
) -> None:
    marker = f"plover{uuid4().hex[:6]}"
    node_id = _store(api, f"Rosa's kayak is bright orange ({marker})", f"why-not-{marker}")
    sign_in(page, inspector, key=inspector.owner_key)
    page.goto(f"{inspector.url}#/memory/{node_id}")
    expect(page.get_by_role("heading", name="Why (not) for a question?")).to_be_visible()
    assert_accessible(page)
    tab_to(page, "Question")
    page.keyboard.type(f"What colour is Rosa's kayak {marker}?")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"#/retrieval/[0-9a-f-]{{36}}\?focus={node_id}$"))
    summary = page.get_by_test_id("focus-summary")
    expect(summary).to_contain_text("This memory was ranked #")
    expect(
        summary.get_by_role("link", name=re.compile("kayak is bright orange"))
    ).to_have_attribute("href", f"#/memory/{node_id}")
    expect(page.locator("tr.focused-candidate")).to_be_focused()


def test_untrusted_text_in_the_search_and_the_focus_stays_text(
    page: Page, inspector: Inspector, api: httpx.Client
) -> None:
    marker = f"tern{uuid4().hex[:6]}"
    hostile = _store(api, f"{PAYLOAD} ({marker})", f"why-not-{marker}")
    receipt = _retrieve(api, query=f"script img {marker}", limit=2)
    assert hostile in _candidate_ids(receipt)

    sign_in(page, inspector, key=inspector.owner_key)
    summary = _open_focused(page, inspector, receipt["request_id"], PAYLOAD)
    expect(summary).to_contain_text("is not a memory id")
    expect(summary.locator("code")).to_have_text(PAYLOAD)
    search = page.get_by_label("Find a memory among the candidates")
    # Other tests store the same payload for this owner; the marker picks this test's.
    search.fill(f"{PAYLOAD} ({marker})")
    search.press("Enter")
    rows = page.get_by_role("table", name=re.compile("^Candidates in fused order")).locator(
        "tbody tr"
    )
    expect(rows.locator("visible=true")).to_have_count(1)
    expect(rows.locator("visible=true").locator("span.candidate")).to_have_attribute(
        "data-node-id", hostile
    )
    # An id of no memory: said so, and nothing ran.
    missing = str(uuid4())
    summary = _open_focused(page, inspector, receipt["request_id"], missing)
    expect(summary).to_contain_text("no memory of this owner has the id")
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("main img, main script").count() == 0

"""The owner's saved retrievals listed newest first, and the retrievals that ranked one memory,
on every backend: paging covers each receipt once, other owners' receipts never show, expired
and erased receipts are gone, and a left-out candidate says why."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from prme.errors import InvalidRequestError, NotFoundError
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.receipt_listing import RetrievalSummary
from prme.model.records import OwnerKey
from prme.retrieval.receipt_summary import summarize_receipt
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness


def store(h: Harness, content: str, owner: OwnerKey = ALICE) -> Any:
    h.clock.advance(seconds=1)
    return h.engine.store(owner, StoreInput(content=content))


def retrieve(h: Harness, query: str, owner: OwnerKey = ALICE, **options: Any) -> str:
    response = h.engine.retrieve(owner, RetrieveInput(query=query, **options))
    assert response.metrics.receipt_persisted
    return response.metrics.request_id


def every_page(h: Harness, owner: OwnerKey = ALICE, **options: Any) -> list[RetrievalSummary]:
    listed: list[RetrievalSummary] = []
    cursor = None
    for _ in range(50):
        page = h.engine.list_retrievals(owner, cursor=cursor, **options)
        listed += page.retrievals
        cursor = page.next_cursor
        if cursor is None:
            return listed
    raise AssertionError("the listing never ended")


def test_pages_list_every_receipt_once_newest_first_with_its_summary(
    any_backend: Harness,
) -> None:
    h = any_backend
    store(h, "Dana likes oolong tea")
    store(h, "Dana walks to work on Mondays")
    saved: list[str] = []
    for n in range(5):
        h.clock.advance(seconds=1)
        saved.append(retrieve(h, f"what does Dana like {n}"))
    # Two retrievals of one instant keep one order (by request id) across pages.
    h.clock.advance(seconds=1)
    saved += sorted([retrieve(h, "Dana at the same instant"), retrieve(h, "Dana twice")])
    store(h, "Bob's secret garden", owner=BOB)
    retrieve(h, "Bob's garden", owner=BOB)
    retrieve(h, "Dana", owner=OTHER_TENANT_ALICE)

    listed = every_page(h, limit=3)

    assert [s.request_id for s in listed] == saved[::-1]
    newest = listed[0]
    receipt = h.engine.get_retrieval_receipt(ALICE, newest.request_id)
    assert newest.query == receipt.query
    assert {s.query for s in listed[:2]} == {"Dana twice", "Dana at the same instant"}
    assert newest.created_at == receipt.created_at
    assert newest.returned_count == len(receipt.returned_node_ids) > 0
    assert newest.candidate_count == len(receipt.candidates)
    assert newest.tokens_used == receipt.context.tokens_used
    assert newest.context_format == receipt.config.context_format
    assert newest.retrieval_profile == receipt.config.retrieval_profile
    # Bob and the other tenant's alice see only their own.
    assert [s.query for s in every_page(h, BOB)] == ["Bob's garden"]
    assert [s.query for s in every_page(h, OTHER_TENANT_ALICE)] == ["Dana"]


def test_since_and_until_bound_the_listing(any_backend: Harness) -> None:
    h = any_backend
    store(h, "Dana likes oolong tea")
    times = []
    ids = []
    for n in range(4):
        h.clock.advance(seconds=10)
        times.append(h.clock.now())
        ids.append(retrieve(h, f"tea {n}"))

    window = every_page(h, since=times[1], until=times[3], limit=1)

    assert [s.request_id for s in window] == [ids[2], ids[1]]
    assert [s.request_id for s in every_page(h, since=times[3])] == [ids[3]]
    assert every_page(h, until=times[0]) == []


def test_expired_and_erased_receipts_are_not_listed(any_backend: Harness) -> None:
    h = any_backend
    store(h, "Dana likes oolong tea")
    old = retrieve(h, "tea long ago")
    h.clock.advance(days=h.engine.deps.config.receipt_retention_days - 1)
    recent = retrieve(h, "tea lately")
    h.clock.advance(days=1)

    # Past its retention and not yet swept (DynamoDB's TTL is late): refused all the same.
    assert [s.request_id for s in every_page(h)] == [recent]
    h.engine.erase_owner(ALICE, confirm=ALICE.owner_id)
    assert every_page(h) == []
    assert old != recent


def test_an_erasure_counts_each_receipt_once(any_backend: Harness) -> None:
    h = any_backend
    store(h, "Dana likes oolong tea")
    retrieve(h, "tea")
    retrieve(h, "Dana")

    erasure = h.engine.erase_owner(ALICE, confirm=ALICE.owner_id)

    assert erasure.removed.retrieval_receipts == 2


def test_a_long_query_is_listed_as_a_preview(any_backend: Harness) -> None:
    h = any_backend
    store(h, "Dana likes oolong tea")
    query = "tea " + "\u00fc" * 9_000
    request_id = retrieve(h, query)

    (listed,) = every_page(h)

    assert listed.request_id == request_id and listed.query_truncated
    assert query.startswith(listed.query) and len(listed.query.encode()) == 400
    assert h.engine.get_retrieval_receipt(ALICE, request_id).query == query


def test_a_bad_cursor_or_limit_is_refused(any_backend: Harness) -> None:
    h = any_backend
    with pytest.raises(InvalidRequestError):
        h.engine.list_retrievals(ALICE, cursor="not-a-cursor")
    with pytest.raises(InvalidRequestError):
        h.engine.list_retrievals(ALICE, limit=0)
    with pytest.raises(InvalidRequestError):
        h.engine.list_node_retrievals(ALICE, "x", scan_limit=201)
    with pytest.raises(InvalidRequestError):
        h.engine.list_retrievals(ALICE, since=datetime(2025, 1, 1))


def test_a_node_lists_the_retrievals_that_returned_it_or_left_it_out(
    any_backend: Harness,
) -> None:
    h = any_backend
    tea = store(h, "Dana likes oolong tea")
    store(h, "Dana drinks green tea at the office")
    store(h, "Dana plays chess on Sundays")
    h.clock.advance(seconds=1)
    returned = retrieve(h, "Dana oolong tea")
    h.clock.advance(seconds=1)
    # Ranked second at best behind the chess record with room for one: left out by the limit.
    left_out = retrieve(h, "Dana plays chess on Sundays", limit=1)
    h.clock.advance(seconds=1)
    retrieve(h, "Dana", owner=BOB)

    page = h.engine.list_node_retrievals(ALICE, tea.node_id)

    by_id = {r.request_id: r for r in page.retrievals}
    assert page.node_id == tea.node_id and page.scanned == 2 and page.next_cursor is None
    assert [r.request_id for r in page.retrievals] == [
        i for i in (left_out, returned) if i in by_id
    ]
    shown = by_id[returned]
    assert shown.outcome == "returned" and shown.query == "Dana oolong tea"
    receipt = h.engine.get_retrieval_receipt(ALICE, returned)
    fused = [c.node_id for c in receipt.candidates if c.context_of is None]
    assert shown.rank == fused.index(tea.node_id) + 1
    refs = {e["node_id"]: e["ref"] for e in receipt.context.entries}
    assert shown.context_ref == refs[tea.node_id]
    # Left out: the receipt's reason, and no reference in the context.
    assert by_id[left_out].outcome not in {"returned", "filtered"}
    assert by_id[left_out].context_ref is None
    assert (by_id[left_out].rank or 0) > 1


def test_a_node_scan_is_bounded_and_goes_further_back_from_its_cursor(
    any_backend: Harness,
) -> None:
    h = any_backend
    tea = store(h, "Dana likes oolong tea")
    store(h, "Dana plays chess on Sundays")
    saved = []
    for n in range(3):
        h.clock.advance(seconds=1)
        saved.append(retrieve(h, f"oolong tea {n}"))
        h.clock.advance(seconds=1)
        saved.append(retrieve(h, f"chess on Sundays {n}", limit=1))
    ranked_tea = [
        i
        for i in saved[::-1]
        if tea.node_id in {c.node_id for c in h.engine.get_retrieval_receipt(ALICE, i).candidates}
    ]

    found: list[str] = []
    scanned = 0
    cursor = None
    for _ in range(10):
        page = h.engine.list_node_retrievals(ALICE, tea.node_id, cursor=cursor, scan_limit=2)
        assert page.scanned <= 2
        scanned += page.scanned
        found += [r.request_id for r in page.retrievals]
        cursor = page.next_cursor
        if cursor is None:
            break

    assert scanned == 6
    assert found == ranked_tea and len(found) >= 3


def test_a_node_of_another_owner_or_none_is_not_found(any_backend: Harness) -> None:
    h = any_backend
    bobs = store(h, "Bob's secret garden", owner=BOB)
    retrieve(h, "garden", owner=BOB)

    with pytest.raises(NotFoundError):
        h.engine.list_node_retrievals(ALICE, bobs.node_id)
    with pytest.raises(NotFoundError):
        h.engine.list_node_retrievals(ALICE, "7d3f4a52-0d4e-4a55-9f0e-3f6c1b2a9e11")


def test_the_summary_of_a_stored_receipt_matches_its_expansion(any_backend: Harness) -> None:
    h = any_backend
    store(h, "Dana likes oolong tea")
    store(h, "Dana drinks green tea at the office")
    request_id = retrieve(h, "Dana tea", limit=1)

    record = h.ledger.get_journal(ALICE, request_id, receipt=True)
    assert record is not None
    summary = summarize_receipt(record)
    receipt = h.engine.get_retrieval_receipt(ALICE, request_id)

    assert summary.returned_count == len(receipt.returned_node_ids) == 1
    assert summary.candidate_count == len(receipt.candidates) >= 2
    assert summary.tokens_used == receipt.context.tokens_used


def test_the_ledger_reads_no_more_than_the_page_asks(any_backend: Harness) -> None:
    h = any_backend
    store(h, "Dana likes oolong tea")
    for n in range(5):
        h.clock.advance(seconds=1)
        retrieve(h, f"tea {n}")

    page = h.ledger.list_receipt_summaries(ALICE, before=None, since=None, until=None, limit=2)

    assert len(page.summaries) == 2 and page.next_position == page.summaries[-1].position
    assert h.clock.now() - page.summaries[0].created_at < timedelta(seconds=1)

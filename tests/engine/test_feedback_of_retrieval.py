"""Listing one retrieval's relevance judgments and answer citations (`request_id`) on every
backend: only that retrieval's records, in id order, and paging that reaches every one of
them even when a call may read only a few records (DynamoDB's bounded scan)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from prme.engine import feedback
from prme.errors import InvalidRequestError
from prme.model.feedback import AnswerCitationInput, RelevanceInput
from prme.model.inputs import RetrieveInput, StoreInput
from tests.harness.engines import ALICE, BOB, Harness


def retrieval(h: Harness, query: str) -> tuple[str, str]:
    """(request id, the first returned node) of a retrieval of alice's."""
    response = h.engine.retrieve(ALICE, RetrieveInput(query=query, limit=2))
    assert response.metrics.receipt_persisted
    return response.metrics.request_id, response.results[0].node_id


def judge(h: Harness, request_id: str, node_id: str, feedback_id: str) -> None:
    h.engine.record_relevance(
        ALICE,
        RelevanceInput.model_validate(
            {"request_id": request_id, "labels": {node_id: True}, "feedback_id": feedback_id}
        ),
    )


def cite(h: Harness, request_id: str, citation_id: str) -> None:
    h.engine.record_answer_citations(
        ALICE,
        AnswerCitationInput.model_validate(
            {
                "request_id": request_id,
                "answer_id": f"answer-{citation_id}",
                "cited_node_ids": [],
                "method": "human_verified",
                "citation_id": citation_id,
            }
        ),
    )


def every_page(list_page: Callable[..., Any], request_id: str, limit: int) -> list[list[str]]:
    """The ids of each page of one retrieval's records, walked until the cursor is null."""
    pages: list[list[str]] = []
    after = None
    while True:
        page = list_page(ALICE, limit=limit, after_id=after, request_id=request_id)
        pages.append(
            [getattr(item, "feedback_id", None) or item.citation_id for item in page.items]
        )
        after = page.next_after_id
        if after is None:
            return pages
        assert len(pages) < 50, "paging never ends"


@pytest.fixture
def two_retrievals(any_backend: Harness) -> tuple[Harness, str, str, list[str], list[str]]:
    """Alice's judgments of two retrievals, interleaved in id order: (harness, tea request id,
    oslo request id, tea's feedback ids, oslo's feedback ids)."""
    h = any_backend
    h.engine.store(ALICE, StoreInput(content="I drink green tea every morning"))
    h.engine.store(ALICE, StoreInput(content="I moved to Oslo in May"))
    tea, tea_node = retrieval(h, "green tea")
    oslo, oslo_node = retrieval(h, "Oslo")
    ids = sorted(str(uuid.uuid4()) for _ in range(7))
    tea_ids, oslo_ids = ids[0::2], ids[1::2]
    for feedback_id in tea_ids:
        judge(h, tea, tea_node, feedback_id)
    for feedback_id in oslo_ids:
        judge(h, oslo, oslo_node, feedback_id)
    return h, tea, oslo, tea_ids, oslo_ids


def test_a_retrievals_judgments_are_listed_alone_in_id_order(
    two_retrievals: tuple[Harness, str, str, list[str], list[str]],
) -> None:
    h, tea, oslo, tea_ids, oslo_ids = two_retrievals

    tea_page = h.engine.list_relevance(ALICE, request_id=tea)
    oslo_page = h.engine.list_relevance(ALICE, request_id=oslo)

    assert [r.feedback_id for r in tea_page.items] == tea_ids
    assert {r.request_id for r in tea_page.items} == {tea}
    assert tea_page.next_after_id is None
    assert [r.feedback_id for r in oslo_page.items] == oslo_ids
    # The unfiltered listing still holds both.
    assert len(h.engine.list_relevance(ALICE).items) == len(tea_ids) + len(oslo_ids)
    # Another owner naming alice's retrieval, or an unknown retrieval: nothing.
    assert h.engine.list_relevance(BOB, request_id=tea).items == []
    unknown = h.engine.list_relevance(ALICE, request_id=str(uuid.uuid4()))
    assert (unknown.items, unknown.next_after_id) == ([], None)
    with pytest.raises(InvalidRequestError):
        h.engine.list_relevance(ALICE, request_id="not-a-uuid")


@pytest.mark.parametrize("scan_limit", [1, 3, feedback.SUBJECT_SCAN_LIMIT])
def test_paging_one_retrieval_reaches_every_record_whatever_a_call_reads(
    two_retrievals: tuple[Harness, str, str, list[str], list[str]],
    monkeypatch: pytest.MonkeyPatch,
    scan_limit: int,
) -> None:
    h, tea, oslo, tea_ids, oslo_ids = two_retrievals
    monkeypatch.setattr(feedback, "SUBJECT_SCAN_LIMIT", scan_limit)

    tea_pages = every_page(h.engine.list_relevance, tea, limit=2)
    oslo_pages = every_page(h.engine.list_relevance, oslo, limit=2)

    assert [i for page in tea_pages for i in page] == tea_ids
    assert [i for page in oslo_pages for i in page] == oslo_ids
    assert all(len(page) <= 2 for page in tea_pages + oslo_pages)


def test_a_retrievals_citations_are_listed_alone(any_backend: Harness) -> None:
    h = any_backend
    h.engine.store(ALICE, StoreInput(content="I drink green tea every morning"))
    first, _ = retrieval(h, "green tea")
    second, _ = retrieval(h, "tea")
    ids = sorted(str(uuid.uuid4()) for _ in range(5))
    for citation_id in ids[:2]:
        cite(h, second, citation_id)
    for citation_id in ids[2:]:
        cite(h, first, citation_id)

    page = h.engine.list_answer_citations(ALICE, limit=2, request_id=first)
    rest = h.engine.list_answer_citations(
        ALICE, limit=2, after_id=page.next_after_id, request_id=first
    )

    assert [c.citation_id for c in page.items + rest.items] == ids[2:]
    assert rest.next_after_id is None
    assert [
        c.citation_id for c in h.engine.list_answer_citations(ALICE, request_id=second).items
    ] == ids[:2]

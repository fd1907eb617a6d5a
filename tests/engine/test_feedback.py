"""Relevance judgments, answer citations and receipt replay on every backend."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from prme.errors import BadRequestError, ConflictError, InvalidRequestError, NotFoundError
from prme.model.canonical import sha256_text
from prme.model.feedback import AnswerCitationInput, RelevanceInput
from prme.model.inputs import RetrieveInput, StoreInput
from prme.retrieval.results import RetrievalResponse
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness


@dataclass
class Exposure:
    """One saved retrieval and how each of its nodes was exposed."""

    response: RetrievalResponse
    full: list[str]  # context entries with their content
    folded: list[str]  # context entries that only point at an identical entry
    returned_not_packed: list[str]  # results the token budget kept out of the context

    @property
    def request_id(self) -> str:
        return self.response.metrics.request_id


def expose(h: Harness) -> Exposure:
    for text in (
        "I drink green tea every morning.",
        "I drink green tea every morning.",  # the same words from another event: folded
        "Green tea with jasmine is my favourite tea of all the teas I have tried so far.",
        "My sister sent me a green tea sampler from Kyoto with twelve different tea leaves.",
    ):
        h.engine.store(ALICE, StoreInput(content=text))
    response = h.engine.retrieve(ALICE, RetrieveInput(query="green tea", limit=4, token_budget=40))
    assert response.metrics.receipt_persisted
    entries = response.bundle.entries
    full = [e.node_id for e in entries if e.representation == "full"]
    folded = [e.node_id for e in entries if e.representation == "folded"]
    packed = {e.node_id for e in entries}
    outside = [r.node_id for r in response.results if r.node_id not in packed]
    assert full and folded and outside, "the fixture needs every kind of exposure"
    return Exposure(response, full, folded, outside)


def relevance(request_id: str, labels: dict[str, bool], **fields: object) -> RelevanceInput:
    return RelevanceInput.model_validate({"request_id": request_id, "labels": labels, **fields})


def citation(request_id: str, cited: list[str], **fields: object) -> AnswerCitationInput:
    body = {
        "request_id": request_id,
        "answer_id": "assistant-message-1",
        "cited_node_ids": cited,
        "method": "application_verified",
        **fields,
    }
    return AnswerCitationInput.model_validate(body)


# -- relevance ---------------------------------------------------------------------------


def test_relevance_keeps_the_exposure_and_replays_the_first_record(any_backend: Harness) -> None:
    h = any_backend
    seen = expose(h)
    returned = [r.node_id for r in seen.response.results]
    feedback_id = str(uuid.uuid4())
    labels = {returned[1]: True, returned[0]: False}

    first = h.engine.record_relevance(
        ALICE, relevance(seen.request_id, labels, feedback_id=feedback_id)
    )
    assert first.feedback_id == feedback_id
    assert first.labels == labels
    assert {e.node_id: e.position for e in first.exposures} == {returned[0]: 1, returned[1]: 2}
    hashes = {r.node_id: sha256_text(r.content) for r in seen.response.results}
    assert all(e.content_sha256 == hashes[e.node_id] for e in first.exposures)
    assert h.engine.get_relevance(ALICE, feedback_id) == first

    # The same judgment later returns the original record and timestamp.
    h.clock.advance(minutes=5)
    again = h.engine.record_relevance(
        ALICE, relevance(seen.request_id, labels, feedback_id=feedback_id)
    )
    assert again == first
    # Another judgment under the same id is refused and changes nothing.
    with pytest.raises(BadRequestError):
        h.engine.record_relevance(
            ALICE, relevance(seen.request_id, {returned[1]: False}, feedback_id=feedback_id)
        )
    assert h.engine.get_relevance(ALICE, feedback_id) == first


def test_relevance_rejects_unknown_candidates_and_foreign_receipts(any_backend: Harness) -> None:
    h = any_backend
    seen = expose(h)
    feedback_id = str(uuid.uuid4())
    with pytest.raises(BadRequestError):
        h.engine.record_relevance(
            ALICE,
            relevance(seen.request_id, {str(uuid.uuid4()): True}, feedback_id=feedback_id),
        )
    with pytest.raises(NotFoundError):
        h.engine.get_relevance(ALICE, feedback_id)  # nothing was written
    with pytest.raises(NotFoundError):
        h.engine.record_relevance(ALICE, relevance(str(uuid.uuid4()), {seen.full[0]: True}))
    for stranger in (BOB, OTHER_TENANT_ALICE):
        with pytest.raises(NotFoundError):
            h.engine.record_relevance(stranger, relevance(seen.request_id, {seen.full[0]: True}))


def test_context_labels_need_content_bearing_entries(any_backend: Harness) -> None:
    h = any_backend
    seen = expose(h)
    ok = h.engine.record_relevance(
        ALICE,
        relevance(
            seen.request_id,
            {seen.full[0]: True, seen.folded[0]: False},
            surface="context",
            method="structured_evaluation",
        ),
    )
    assert {e.node_id: e.context_ref is not None for e in ok.exposures} == {
        seen.full[0]: True,
        seen.folded[0]: True,
    }
    assert ok.method == "structured_evaluation"
    assert ok.feedback_id  # generated by the server
    with pytest.raises(BadRequestError):  # a folded entry is reference-only
        h.engine.record_relevance(
            ALICE, relevance(seen.request_id, {seen.folded[0]: True}, surface="context")
        )
    with pytest.raises(BadRequestError):  # returned, but the budget kept it out of the context
        h.engine.record_relevance(
            ALICE,
            relevance(seen.request_id, {seen.returned_not_packed[0]: False}, surface="context"),
        )


def test_relevance_pages_sort_by_feedback_uuid(any_backend: Harness) -> None:
    h = any_backend
    seen = expose(h)
    ids = [str(uuid.uuid4()) for _ in range(5)]
    for feedback_id in ids:  # written in random order
        h.engine.record_relevance(
            ALICE, relevance(seen.request_id, {seen.full[0]: True}, feedback_id=feedback_id)
        )
    h.engine.store(BOB, StoreInput(content="Bob's own memory"))
    page = h.engine.list_relevance(ALICE, limit=2)
    collected = [r.feedback_id for r in page.items]
    while page.next_after_id is not None:
        page = h.engine.list_relevance(ALICE, limit=2, after_id=page.next_after_id)
        collected += [r.feedback_id for r in page.items]
    assert collected == sorted(ids)
    # A page that ends exactly at the last record says so: no empty page follows.
    last_two = h.engine.list_relevance(ALICE, limit=2, after_id=sorted(ids)[2])
    assert [r.feedback_id for r in last_two.items] == sorted(ids)[3:]
    assert last_two.next_after_id is None
    assert h.engine.list_relevance(BOB).items == []
    with pytest.raises(InvalidRequestError):
        h.engine.list_relevance(ALICE, limit=0)


# -- answer citations --------------------------------------------------------------------


def test_citations_bind_to_the_saved_context(any_backend: Harness) -> None:
    h = any_backend
    seen = expose(h)
    citation_id = str(uuid.uuid4())
    digest = "ab" * 32
    record = h.engine.record_answer_citations(
        ALICE,
        citation(seen.request_id, [seen.full[0]], citation_id=citation_id, answer_sha256=digest),
    )
    assert record.cited_node_ids == [seen.full[0]]
    assert record.cited_entries[0].context_ref == "m1"
    assert record.context_sha256 == seen.response.bundle.context_sha256
    assert record.answer_sha256 == digest
    assert record.no_citations is False
    receipt = h.ledger.get_journal(ALICE, seen.request_id)
    assert receipt is not None and record.receipt_checksum == receipt.checksum

    # An identical retry returns the original; a changed one is a conflict.
    h.clock.advance(minutes=1)
    assert (
        h.engine.record_answer_citations(
            ALICE,
            citation(
                seen.request_id, [seen.full[0]], citation_id=citation_id, answer_sha256=digest
            ),
        )
        == record
    )
    with pytest.raises(ConflictError):
        h.engine.record_answer_citations(
            ALICE, citation(seen.request_id, [], citation_id=citation_id, answer_sha256=digest)
        )

    # Still valid, and still recordable, after the cited memory is archived.
    h.engine.archive(ALICE, seen.full[0])
    assert h.engine.get_answer_citations(ALICE, citation_id) == record
    later = h.engine.record_answer_citations(ALICE, citation(seen.request_id, [seen.full[0]]))
    assert later.cited_node_ids == [seen.full[0]]


def test_citations_reject_everything_but_content_entries(any_backend: Harness) -> None:
    h = any_backend
    seen = expose(h)
    for cited in (seen.folded[0], seen.returned_not_packed[0], str(uuid.uuid4())):
        citation_id = str(uuid.uuid4())
        with pytest.raises(BadRequestError):
            h.engine.record_answer_citations(
                ALICE, citation(seen.request_id, [cited], citation_id=citation_id)
            )
        with pytest.raises(NotFoundError):
            h.engine.get_answer_citations(ALICE, citation_id)
    with pytest.raises(NotFoundError):
        h.engine.record_answer_citations(BOB, citation(seen.request_id, []))
    with pytest.raises(NotFoundError):
        h.engine.get_answer_citations(BOB, str(uuid.uuid4()))


def test_an_empty_citation_list_is_recorded_and_listed(any_backend: Harness) -> None:
    h = any_backend
    seen = expose(h)
    ids = sorted(str(uuid.uuid4()) for _ in range(3))
    for citation_id in reversed(ids):
        record = h.engine.record_answer_citations(
            ALICE, citation(seen.request_id, [], citation_id=citation_id, method="model_reported")
        )
        assert record.no_citations is True and record.cited_node_ids == []
    first = h.engine.list_answer_citations(ALICE, limit=2)
    assert [r.citation_id for r in first.items] == ids[:2]
    assert first.next_after_id == ids[1]
    rest = h.engine.list_answer_citations(ALICE, limit=2, after_id=first.next_after_id)
    assert [r.citation_id for r in rest.items] == ids[2:]
    assert rest.next_after_id is None


# -- receipt replay ----------------------------------------------------------------------


def test_saved_receipts_replay_their_ranking(any_backend: Harness) -> None:
    h = any_backend
    seen = expose(h)
    report = h.engine.replay_retrieval(ALICE, seen.request_id)
    assert report.receipt_checksum_valid
    assert report.matches
    assert report.returned_node_ids == [r.node_id for r in seen.response.results]
    # The returned results are the head of the replayed order, in the same order.
    replayed = [n for n in report.replayed_ranking if n in set(report.returned_node_ids)]
    assert replayed == report.returned_node_ids
    with pytest.raises(NotFoundError):
        h.engine.replay_retrieval(BOB, seen.request_id)

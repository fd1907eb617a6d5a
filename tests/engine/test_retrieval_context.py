"""A saved retrieval's context rebuilt from its receipt: exactly what the model saw right after,
in both formats and layouts on every backend, and flagged once a memory is deleted or contested."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from prme.engine.config import EngineConfig, PackingConfig
from prme.engine.service import MemoryEngine
from prme.errors import NotFoundError
from prme.model.inputs import RetrieveInput, StoreInput
from prme.retrieval.packing import ContextFormat, PackingLayout
from prme.retrieval.results import RetrievalResponse
from tests.harness.engines import ALICE, BOB, Harness

SPEAKERS = ("Ana", "Ben")
TOPICS = ("the lake trip", "my sister's concert", "the garden", "a book about trains")
REPEATED = "Ana: We booked the lake cabin for June."


def fill(h: Harness) -> None:
    """Three sessions of a two-speaker conversation over three days, one line said twice."""
    start = h.clock.now() - timedelta(days=5)
    for i in range(24):
        text = f"Line {i} about {TOPICS[i % len(TOPICS)]} and the lake in summer."
        h.engine.store(
            ALICE,
            StoreInput(
                content=REPEATED if i in (3, 13) else text,
                speaker=SPEAKERS[i % 2],
                session_id=f"session-{i // 8}",
                event_time=start + timedelta(days=i // 8, minutes=i),
            ),
        )


def engine_with_layout(h: Harness, layout: PackingLayout) -> MemoryEngine:
    """The harness's backend under an engine that packs reader contexts in `layout`."""
    config = EngineConfig(packing=PackingConfig(reader_layout=layout))
    return MemoryEngine(dataclasses.replace(h.engine.deps, config=config))


def retrieve(engine: MemoryEngine, context_format: ContextFormat) -> RetrievalResponse:
    return engine.retrieve(
        ALICE, RetrieveInput(query="the lake trip with Ana", context_format=context_format)
    )


def test_the_rebuilt_context_is_what_the_model_saw(any_backend: Harness) -> None:
    h = any_backend
    fill(h)
    for layout in ("ranked", "sessions"):
        engine = engine_with_layout(h, layout)
        for context_format in ("reader", "auditable"):
            # Given a retrieval whose context folds a repeated line and holds session context
            response = retrieve(engine, context_format)
            request_id = response.metrics.request_id
            receipt = engine.get_retrieval_receipt(ALICE, request_id)
            assert receipt.session_context, "the fixture needs session-context records"
            assert any(e.representation == "folded" for e in response.bundle.entries)
            # When its context is rebuilt from the receipt
            rebuilt = engine.get_retrieval_context(ALICE, request_id)
            # Then it is exactly the text the model saw, with every reference resolved
            assert rebuilt.context == response.bundle.context, (layout, context_format)
            assert rebuilt.matches and rebuilt.rebuilt_context_sha256 == (
                response.bundle.context_sha256
            )
            assert rebuilt.saved_context_sha256 == response.bundle.context_sha256
            assert rebuilt.references == response.bundle.context_references
            assert rebuilt.folded_into == {
                e.ref: e.folded_into for e in response.bundle.entries if e.folded_into
            }
            assert rebuilt.context_format == context_format
            grouped = layout == "sessions" and context_format == "reader"
            assert rebuilt.layout == ("sessions" if grouped else "ranked")
            assert rebuilt.missing_node_ids == [] and rebuilt.changed_node_ids == []


def test_a_deleted_memory_is_missing_and_the_context_no_longer_matches(
    any_backend: Harness,
) -> None:
    h = any_backend
    fill(h)
    response = retrieve(h.engine, "reader")
    request_id = response.metrics.request_id
    full = [e for e in response.bundle.entries if e.representation == "full"]
    gone = full[1].node_id
    event_id = h.engine.get_node(ALICE, gone).evidence_refs[0]
    gone_line = h.engine.get_node(ALICE, gone).content
    # When the memory behind the second entry is deleted
    h.clock.advance(seconds=1)
    h.engine.delete_memory(ALICE, event_id)
    rebuilt = h.engine.get_retrieval_context(ALICE, request_id)
    # Then its words are not rebuilt, the digest differs and the memory is named
    assert rebuilt.missing_node_ids == [gone]
    assert rebuilt.changed_node_ids == []
    assert not rebuilt.matches
    assert rebuilt.saved_context_sha256 == response.bundle.context_sha256
    assert gone_line not in rebuilt.context
    assert f"[{full[1].ref}]" not in rebuilt.context
    # Every other line still reads as it did, and the reference still names the memory
    assert rebuilt.references == response.bundle.context_references
    kept = [line for line in response.bundle.context.splitlines() if gone_line not in line]
    assert rebuilt.context.splitlines() == kept


def test_a_contested_memory_is_changed_and_tagged(any_backend: Harness) -> None:
    h = any_backend
    fill(h)
    reader, auditable = retrieve(h.engine, "reader"), retrieve(h.engine, "auditable")
    full = [e for e in reader.bundle.entries if e.representation == "full"]
    first, second = full[0].node_id, full[2].node_id
    # When two memories of both contexts are marked as contradicting each other (both contested)
    h.clock.advance(seconds=1)
    h.engine.mark_contradiction(ALICE, node_a_id=first, node_b_id=second)
    for response, tag in ((reader, "[contested]"), (auditable, '"state":"contested"')):
        rebuilt = h.engine.get_retrieval_context(ALICE, response.metrics.request_id)
        # Then both are named as changed, in ref order, and the text says what they are now
        in_order = [i for i in rebuilt.references.values() if i in (first, second)]
        assert rebuilt.changed_node_ids == in_order and len(in_order) == 2
        assert rebuilt.missing_node_ids == []
        assert not rebuilt.matches
        assert tag not in response.bundle.context
        assert rebuilt.context.count(tag) == 2


def test_another_owners_or_an_unknown_retrieval_is_not_found(any_backend: Harness) -> None:
    h = any_backend
    h.engine.store(ALICE, StoreInput(content="We booked the lake cabin."))
    request_id = retrieve(h.engine, "reader").metrics.request_id
    with pytest.raises(NotFoundError):
        h.engine.get_retrieval_context(BOB, request_id)
    with pytest.raises(NotFoundError):
        h.engine.get_retrieval_context(ALICE, "00000000-0000-4000-8000-000000000000")

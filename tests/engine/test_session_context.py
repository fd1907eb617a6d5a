"""Session context: the records said around the first results of a budget fill follow
them, on every backend; the index lookup behind it; and the receipt that explains it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prme.engine.config import EngineConfig, RetrievalConfig
from prme.model.enums import LifecycleState
from prme.model.inputs import RetrieveInput, StoreInput
from prme.retrieval.receipts import RetrievalReceipt
from tests.harness.aws import aws_harness
from tests.harness.engines import (
    ALICE,
    BOB,
    OTHER_TENANT_ALICE,
    Harness,
    embedded_harness,
    memory_harness,
)
from tests.harness.session_turns import document

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_neighbours_are_the_nearest_records_of_the_session_alternating(
    any_backend: Harness,
) -> None:
    h = any_backend
    model, dim = h.embedder.model.key, h.embedder.model.dimension
    v = tuple(float(x) for x in np.ones(dim) / np.sqrt(dim))
    h.index.upsert(
        [
            *(document(f"t{i}", v, model=model, event_time=at(i)) for i in range(6)),
            # Same time as t3: ordered by node id, so it sits between t3 and t4.
            document("t3b", v, model=model, event_time=at(3)),
            document("other", v, model=model, session_id="s2", event_time=at(3.5)),
            document("bob", v, model=model, owner=BOB, event_time=at(3.5)),
            document("tenant", v, model=model, owner=OTHER_TENANT_ALICE, event_time=at(3.5)),
            document(
                "archived",
                v,
                model=model,
                event_time=at(7),
                lifecycle_state=LifecycleState.ARCHIVED,
            ),
        ]
    )
    found = h.index.session_neighbours(
        ALICE, [("s1", at(3), "t3"), ("s1", at(0), "t0"), ("s9", at(1), "x")], 2
    )
    assert found == [
        ["t2", "t3b", "t1", "t4"],  # before, after, before, after: nearest first
        ["t1", "t2"],  # nothing before the first record
        [],
    ]
    # Any lifecycle state is returned (the engine re-filters), and the radius is respected.
    assert h.index.session_neighbours(ALICE, [("s1", at(5), "t5")], 1) == [["t4", "archived"]]
    assert h.index.session_neighbours(BOB, [("s1", at(0), "x")], 3) == [["bob"]]
    assert h.index.session_neighbours(ALICE, [], 2) == []


@pytest.fixture(params=["memory", "embedded", "aws"])
def one_anchor(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    """A harness whose budget fills take the neighbours of the first result only, from
    one candidate per channel (so the neighbours are not candidates themselves)."""
    config = ONE_ANCHOR
    if request.param == "memory":
        yield memory_harness(config)
    elif request.param == "embedded":
        h = embedded_harness(tmp_path / "data", config)
        yield h
        h.index.close()  # type: ignore[attr-defined]
        h.ledger.close()  # type: ignore[attr-defined]
    else:
        dynamodb, table, opensearch, alias = request.getfixturevalue("aws_resources")
        yield aws_harness(dynamodb, table, opensearch, alias, config=config)


ONE_ANCHOR = EngineConfig(
    retrieval=RetrievalConfig(
        session_context_anchors=1, session_context_radius=2, candidate_k=1, fill_candidate_k=1
    )
)


def store(h: Harness, content: str, seconds: float, **fields: Any) -> str:
    values = {"content": content, "session_id": "s1", "event_time": at(seconds), **fields}
    result = h.engine.store(ALICE, StoreInput.model_validate(values))
    assert result.node_id is not None
    return result.node_id


def conversation(h: Harness) -> dict[str, str]:
    """An exchange about an observatory whose answer shares no word with the query, and
    keyword matches elsewhere that would outrank that answer on their own."""
    ids = {
        "before": store(h, "Morning! Long week at work, how about you?", 0),
        "question": store(h, "Did you finally make it to the observatory?", 1),
        "answer": store(h, "Yes! Saturday night, we saw Saturn's rings.", 2),
        "after": store(h, "Wow, that sounds unforgettable.", 3),
        "far": store(h, "Anyway, dinner on Friday?", 4),
    }
    for i in range(6):
        ids[f"visit{i}"] = store(h, f"Museum visit note {i}.", 100 + i, session_id="s2")
    return ids


def fill(h: Harness, query: str, **fields: Any) -> Any:
    return h.engine.retrieve(
        ALICE, RetrieveInput.model_validate({"query": query, "token_budget": 4096, **fields})
    )


def test_the_exchange_around_the_first_result_follows_it(one_anchor: Harness) -> None:
    h = one_anchor
    ids = conversation(h)
    response = fill(h, "observatory")
    order = [r.node_id for r in response.results]
    assert order[0] == ids["question"]
    # Nearest first, alternating before and after, then the rest in fused order.
    assert order[1:4] == [ids["before"], ids["answer"], ids["after"]]
    by_id = {r.node_id: r for r in response.results}
    # A record that was not a candidate scores its anchor's score times the decay and
    # carries its anchor's semantic relevance (the memory that pulled it in).
    top = by_id[ids["question"]]
    assert by_id[ids["answer"]].score == pytest.approx(top.score * 0.6)

    receipt = h.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    saved = RetrievalReceipt.model_validate_json(receipt.model_dump_json())
    assert [(e.node_id, e.anchor) for e in saved.session_context] == [
        (ids["before"], ids["question"]),
        (ids["answer"], ids["question"]),
        (ids["after"], ids["question"]),
    ]
    assert (saved.config.session_context_anchors, saved.config.session_context_radius) == (1, 2)
    rows = {c.node_id: c for c in saved.candidates}
    assert rows[ids["answer"]].context_of == ids["question"]
    assert rows[ids["answer"]].ranks == {}
    assert rows[ids["answer"]].score_provenance["session_context"] == {
        "anchor": ids["question"],
        "decay": 0.6,
    }
    # Context-only rows take no part in fusion, so the fused ranking still replays.
    assert saved.replay_ranking() == saved.saved_ranking()
    assert ids["answer"] not in saved.saved_ranking()
    assert saved.returned_node_ids == order


def test_context_respects_filters_limits_and_caps() -> None:
    h = memory_harness(ONE_ANCHOR)
    ids = conversation(h)
    # A record the request's filters exclude never comes back as context.
    archived = fill(h, "observatory", filters={"exclude_node_types": ["note"]})
    assert archived.results == []
    # An explicit limit keeps its meaning: no context is added.
    limited = fill(h, "observatory", limit=3)
    assert len(limited.results) == 3
    receipt = h.engine.get_retrieval_receipt(ALICE, limited.metrics.request_id)
    assert receipt.session_context == []
    assert receipt.config.session_context_anchors == 0
    # Nor with a cap.
    capped = fill(h, "observatory", max_per_evidence=1)
    assert h.engine.get_retrieval_receipt(ALICE, capped.metrics.request_id).session_context == []
    # Another owner's records are never anyone's context.
    h.engine.store(
        BOB,
        StoreInput.model_validate(
            {"content": "Bob's private note", "session_id": "s1", "event_time": at(1.5)}
        ),
    )
    order = [r.node_id for r in fill(h, "observatory").results]
    assert order[1:4] == [ids["before"], ids["answer"], ids["after"]]
    # An archived neighbour is no longer context (the index still holds it; the ledger decides).
    h.engine.archive(ALICE, ids["before"])
    order = [r.node_id for r in fill(h, "observatory").results]
    assert order[1:3] == [ids["answer"], ids["after"]]
    assert ids["before"] not in order


def test_switched_off_the_results_are_the_fused_order() -> None:
    off = memory_harness(EngineConfig(retrieval=RetrievalConfig(session_context_anchors=0)))
    conversation(off)
    response = fill(off, "observatory")
    receipt = off.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    assert receipt.session_context == []
    returned = {r.node_id for r in response.results}
    assert [r.node_id for r in response.results] == [
        n for n in receipt.saved_ranking() if n in returned
    ]

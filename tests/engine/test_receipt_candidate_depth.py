"""A receipt says how deep each search channel looked (its k), so "why was this memory not a
candidate?" can name the number; receipts saved before the field still read and replay."""

from __future__ import annotations

import pytest

from prme.engine.config import EngineConfig, RetrievalConfig
from prme.model.inputs import RetrieveInput, StoreInput
from prme.retrieval.receipts import RetrievalReceipt
from tests.harness.engines import ALICE, Harness, memory_harness

CANDIDATE_K = 4
FILL_CANDIDATE_K = 6


@pytest.fixture
def harness() -> Harness:
    h = memory_harness(
        EngineConfig(
            retrieval=RetrievalConfig(candidate_k=CANDIDATE_K, fill_candidate_k=FILL_CANDIDATE_K)
        )
    )
    for i in range(12):
        h.engine.store(ALICE, StoreInput(content=f"Walk {i}: the dog and the river at dawn"))
    return h


@pytest.mark.parametrize(
    ("limit", "depth"),
    [
        (1, CANDIDATE_K),  # a small limit still looks candidate_k deep
        (3, 9),  # a larger one keeps three candidates per result
        (None, FILL_CANDIDATE_K),  # a budget fill looks fill_candidate_k deep
    ],
)
def test_the_receipt_records_how_deep_each_channel_looked(
    harness: Harness, limit: int | None, depth: int
) -> None:
    response = harness.engine.retrieve(ALICE, RetrieveInput(query="dog river", limit=limit))
    receipt = harness.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    assert receipt.config.candidate_depth == depth
    # The number is the one the search used: no channel ranked anything deeper.
    deepest = max(rank for c in receipt.candidates for rank in c.ranks.values())
    assert deepest <= depth
    assert len(receipt.candidates) <= 2 * depth


def test_a_receipt_saved_without_the_depth_reads_it_as_unknown(harness: Harness) -> None:
    response = harness.engine.retrieve(ALICE, RetrieveInput(query="dog river", limit=2))
    saved = harness.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    older = saved.model_dump(mode="json")
    del older["config"]["candidate_depth"]
    read = RetrievalReceipt.model_validate(older)
    assert read.config.candidate_depth is None
    assert read.replay_ranking() == saved.saved_ranking()

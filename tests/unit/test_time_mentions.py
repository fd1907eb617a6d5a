"""Dates a query names: which calendar periods are read, and how records said within them
rise in the ranking, visibly in the receipt and reproducibly on replay."""

from __future__ import annotations

from datetime import date
from typing import Any

from prme.engine.config import EngineConfig, ScoringConfig
from prme.model.inputs import RetrieveInput, StoreInput
from prme.retrieval.query_analysis import mentioned_periods
from prme.retrieval.receipts import RetrievalReceipt
from tests.harness.engines import ALICE, Harness, memory_harness


def test_days_months_and_years_are_read_as_half_open_periods() -> None:
    may_25 = [(date(2022, 5, 25), date(2022, 5, 26))]
    for query in (
        "What did Nate do on 25 May, 2022?",
        "What happened on May 25th, 2022?",
        "and on 25th of may 2022",
        "the log of 2022-05-25",
    ):
        assert mentioned_periods(query) == may_25, query
    assert mentioned_periods("in November 2022") == [(date(2022, 11, 1), date(2022, 12, 1))]
    assert mentioned_periods("Dec. 2023") == [(date(2023, 12, 1), date(2024, 1, 1))]
    assert mentioned_periods("recently in 2024?") == [(date(2024, 1, 1), date(2025, 1, 1))]


def test_text_that_is_not_a_date_names_no_period() -> None:
    assert mentioned_periods("I have 2000 coins and 12 May cards") == []
    assert mentioned_periods("What did Ana say last week?") == []
    # An impossible day still names its month.
    assert mentioned_periods("on 31 February 2023") == [(date(2023, 2, 1), date(2023, 3, 1))]


def store(h: Harness, content: str, when: str) -> str:
    result = h.engine.store(
        ALICE, StoreInput.model_validate({"content": content, "event_time": when})
    )
    assert result.node_id is not None
    return result.node_id


def ranked(h: Harness, query: str) -> tuple[list[str], Any]:
    response = h.engine.retrieve(ALICE, RetrieveInput(query=query, limit=5))
    return [r.node_id for r in response.results], h.engine.get_retrieval_receipt(
        ALICE, response.metrics.request_id
    )


def test_records_said_on_the_named_day_rise_and_the_receipt_replays() -> None:
    def memories(h: Harness) -> tuple[str, str]:
        on_day = store(h, "We painted the fence blue.", "2023-10-13T15:00:00Z")
        later = store(h, "We painted the fence blue.", "2023-11-20T15:00:00Z")
        return on_day, later

    h = memory_harness()
    on_day, later = memories(h)
    order, receipt = ranked(h, "What did we paint on October 13, 2023?")
    assert order == [on_day, later]
    saved = RetrievalReceipt.model_validate_json(receipt.model_dump_json())
    top = saved.candidates[0]
    assert top.features == {"time_mentioned": 1.0}
    assert {"op": "time_mentioned", "coefficient": 2.0} in top.score_provenance["adjustments"]
    assert saved.replay_ranking() == saved.saved_ranking()

    # Without a date in the query the newer record wins the tie, as before.
    order, _ = ranked(h, "What did we paint?")
    assert order == [later, on_day]

    # Switched off, the feature is recorded but changes nothing.
    off = memory_harness(EngineConfig(scoring=ScoringConfig(time_mention_boost=0.0)))
    on_day, later = memories(off)
    order, receipt = ranked(off, "What did we paint on October 13, 2023?")
    assert order == [later, on_day]
    assert {c.node_id: c.features for c in receipt.candidates}[on_day] == {"time_mentioned": 1.0}

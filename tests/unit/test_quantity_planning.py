"""Which questions become a quantity aggregation, how they are read, and the query's rules."""

from __future__ import annotations

from typing import Any, NoReturn, cast

import pytest
from pydantic import ValidationError

from prme.engine.deps import EngineDeps
from prme.engine.quantities import aggregate_text, past_tense, plan_quantity_question
from prme.errors import InvalidRequestError
from prme.model.quantities import (
    QuantityAggregationQuery,
    normalize_predicate,
    predicate_has_prefix,
)
from prme.ports import Ledger
from tests.harness.engines import ALICE, memory_harness


@pytest.mark.parametrize(
    ("question", "shape", "subject", "prefix", "units"),
    [
        ("How much did I raise?", "how_much", "I", "raised", None),
        ("how much did we spend", "how_much", "we", "spent", None),
        ("How much did We earn in total?", "how_much", "We", "earned", None),
        ("How much did I donate altogether?", "how_much", "I", "donated", None),
        ("How much money did I pay?", "how_much_money", "I", "paid", "$"),
        ("What is the total we raised?", "total", "we", "raised", None),
        ("What’s the total I spent?", "total", "I", "spent", None),
        ("How many books did I buy?", "how_many", "I", "bought", "books"),
        ("How many tickets did we sell in total?", "how_many", "we", "sold", "tickets"),
        ("  How   much did I   save ?", "how_much", "I", "saved", None),
    ],
)
def test_supported_shapes_become_a_structured_query(
    question: str, shape: str, subject: str, prefix: str, units: str | None
) -> None:
    plan = plan_quantity_question(question)
    assert plan.status == "ready"
    assert plan.reason is None
    assert plan.shape == shape
    assert plan.question == question
    query = plan.query
    assert query is not None
    # The subject is kept exactly as the question wrote it.
    assert query.subjects == (subject,)
    assert query.predicate_prefixes == (prefix,)
    assert query.predicates is None
    assert query.group_by == ("unit",)
    if units is None:
        assert query.units is None
    else:
        assert query.units is not None and units in query.units
    assert plan.assumptions
    assert any(f'"{subject}"' in line for line in plan.assumptions)
    assert any("never converted" in line for line in plan.assumptions)


def test_money_questions_count_only_currency_units() -> None:
    query = plan_quantity_question("How much money did we raise?").query
    assert query is not None and query.units is not None
    assert {"$", "€", "£", "usd", "euros"} <= set(query.units)
    assert not {"books", "km", "pounds", "%"} & set(query.units)


def test_count_questions_filter_on_the_counted_noun() -> None:
    query = plan_quantity_question("How many cats did I adopt?").query
    assert query is not None
    assert query.units == ("cats", "cat")
    assert query.predicate_prefixes == ("adopted",)


@pytest.mark.parametrize(
    "question",
    [
        "How much did I raise last year?",
        "How much did I raise for the shelter?",
        "How much did I spend on books?",
        "How many books did I buy in 2023?",
        "How much did I raise and spend?",
        "How much did I raise and how much did we spend?",
        "How much did I raise? How much did we spend?",
        "How much did Mark raise?",
        "How much did you spend?",
        "How much did they earn?",
        "How much did Ana and I raise?",
        "How much did I raised?",
        "What is the total I raise?",
        "What did I buy?",
        "Tell me how much I raised.",
        "How much have I raised?",
        "How many did I buy?",
        "I raised $5.",
    ],
)
def test_other_wording_is_unsupported_with_a_reason(question: str) -> None:
    plan = plan_quantity_question(question)
    assert plan.status == "unsupported"
    assert plan.query is None
    assert plan.shape is None
    assert plan.reason


def test_unsupported_reasons_name_the_problem() -> None:
    subject = plan_quantity_question("How much did Mark raise?").reason
    qualifier = plan_quantity_question("How much did I raise last year?").reason
    assert subject is not None and "subjects I and we" in subject
    assert qualifier is not None and "qualifiers" in qualifier


@pytest.mark.parametrize(
    ("verb", "past"),
    [
        ("raise", "raised"),
        ("spend", "spent"),
        ("buy", "bought"),
        ("pay", "paid"),
        ("earn", "earned"),
        ("run", "ran"),
        ("donate", "donated"),
        ("save", "saved"),
        ("sell", "sold"),
        ("make", "made"),
        ("lose", "lost"),
        ("win", "won"),
        ("read", "read"),
        ("give", "gave"),
        ("stop", "stopped"),
        ("plan", "planned"),
        ("carry", "carried"),
        ("play", "played"),
        ("visit", "visited"),
        ("fix", "fixed"),
        ("collect", "collected"),
    ],
)
def test_past_tense_forms(verb: str, past: str) -> None:
    assert past_tense(verb) == past
    query = plan_quantity_question(f"How much did I {verb}?").query
    assert query is not None and query.predicate_prefixes == (past,)


class _UnreadableLedger:
    """A ledger that fails the test on any use: proves a code path reads no memory."""

    def __getattr__(self, name: str) -> NoReturn:
        raise AssertionError(f"the ledger was used: {name}")


def _deps_without_ledger() -> EngineDeps:
    deps = memory_harness().engine.deps
    return EngineDeps(**{**deps.__dict__, "ledger": cast(Ledger, _UnreadableLedger())})


def test_unsupported_questions_read_no_memory() -> None:
    deps = _deps_without_ledger()
    answer = aggregate_text(deps, ALICE, "How much did I raise for the shelter?")
    assert answer.plan.status == "unsupported"
    assert answer.aggregation is None


def test_supported_questions_do_read_memory() -> None:
    # The same guard catches a supported question, so the test above can fail.
    with pytest.raises(AssertionError, match="the ledger was used"):
        aggregate_text(_deps_without_ledger(), ALICE, "How much did I raise?")


@pytest.mark.parametrize("question", ["", "   ", "x" * 501])
def test_blank_or_overlong_questions_are_invalid(question: str) -> None:
    with pytest.raises(InvalidRequestError):
        aggregate_text(_deps_without_ledger(), ALICE, question)


def test_predicate_prefixes_match_whole_underscore_parts() -> None:
    assert predicate_has_prefix("bought", "bought")
    assert predicate_has_prefix("bought_books", "bought")
    assert not predicate_has_prefix("boughtx", "bought")
    assert not predicate_has_prefix("bough", "bought")
    assert normalize_predicate(" Bought  Books ") == "bought_books"
    assert normalize_predicate("bought-books") == "bought_books"


@pytest.mark.parametrize(
    "fields",
    [
        {"group_by": ["subject"]},
        {"group_by": ["unit", "unit"]},
        {"group_by": []},
        {"group_by": ["unit", "colour"]},
        {"subjects": []},
        {"subjects": ["  "]},
        {"units": [""]},
        {"predicate_prefixes": ["bought_"]},
        {"event_time_from": "2024-01-01T00:00:00"},
        {"event_time_from": "2024-02-01T00:00:00Z", "event_time_to": "2024-01-01T00:00:00Z"},
        {"sample_limit": 101},
        {"sample_limit": -1},
        {"group_limit": 0},
        {"group_limit": 10_001},
        {"include_inactive": "yes"},
        {"scopes": []},
        {"scopes": ["nowhere"]},
        {"unknown": 1},
    ],
)
def test_invalid_queries_are_rejected(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        QuantityAggregationQuery.model_validate(fields)


def test_query_defaults() -> None:
    query = QuantityAggregationQuery()
    assert query.include_inactive is False
    assert query.sample_limit == 10
    assert "unit" in query.group_by

"""The index custom resource answers every CloudFormation request, and Delete never touches the
domain (the index is derived data and outlives the resource)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Answer = Callable[[dict[str, Any], Callable[[], Any]], Any]


@pytest.fixture
def outcome_of(monkeypatch: pytest.MonkeyPatch) -> Answer:
    # Powertools reads its metrics namespace when `functions.runtime` is first imported, which
    # may be here: never import the functions at collection time, without the environment.
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "PrmeTests")
    from functions.index_setup import outcome_of as answer

    return answer


def no_client() -> Any:
    raise AssertionError("the domain must not be called")


def request(request_type: str, **fields: Any) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "LogicalResourceId": "SearchIndex",
        "ResourceProperties": {"IndexAlias": "prme-nodes", "Dimension": "1024"},
        **fields,
    }


def test_delete_succeeds_without_calling_the_domain(outcome_of: Answer) -> None:
    answer = outcome_of(request("Delete", PhysicalResourceId="prme-nodes"), no_client)

    assert (answer.status, answer.physical_id, answer.reason) == ("SUCCESS", "prme-nodes", "")


def test_a_request_without_usable_properties_fails_with_our_own_reason(
    outcome_of: Answer,
) -> None:
    answer = outcome_of(
        request("Create", ResourceProperties={"IndexAlias": "prme-nodes", "Dimension": "many"}),
        no_client,
    )

    assert answer.status == "FAILED"
    assert answer.reason.startswith("Properties IndexAlias (an index name")
    assert answer.physical_id == "prme-nodes"


@pytest.mark.parametrize(
    "properties",
    [
        "not an object",
        ["IndexAlias", "prme-nodes"],
        {"IndexAlias": "*", "Dimension": "1024"},
        {"IndexAlias": "_all", "Dimension": "1024"},
        {"IndexAlias": "Prme-Nodes", "Dimension": "1024"},
        {"IndexAlias": "a" * 5000, "Dimension": "1024"},
        {"IndexAlias": {"nested": 1}, "Dimension": "1024"},
        {"IndexAlias": "prme-nodes", "Dimension": "0"},
        {"IndexAlias": "prme-nodes", "Dimension": "-1024"},
        {"IndexAlias": "prme-nodes", "Dimension": "9" * 5000},
        {"IndexAlias": "prme-nodes", "Dimension": "1024.0"},
        {"IndexAlias": "prme-nodes", "Dimension": True},
        {"IndexAlias": "prme-nodes", "Dimension": "\u0661\u0660\u0662\u0664"},
    ],
)
def test_hostile_properties_fail_before_the_domain_with_a_bounded_answer(
    outcome_of: Answer, properties: Any
) -> None:
    # A wildcard alias would reach every index of the domain (ensure_index maps fields onto
    # whatever the name matches); an unbounded alias as physical id overflows the 4 KB answer.
    answer = outcome_of(
        request("Create", ResourceProperties=properties, LogicalResourceId="SearchIndex"),
        no_client,
    )

    assert answer.status == "FAILED"
    assert answer.reason.startswith("Properties IndexAlias")
    assert answer.physical_id in ("prme-nodes", "SearchIndex")


def test_a_huge_physical_id_is_cut_to_a_bounded_answer(outcome_of: Answer) -> None:
    answer = outcome_of(request("Delete", PhysicalResourceId="p" * 5000), no_client)

    assert answer.status == "SUCCESS"
    assert len(answer.physical_id) <= 255


def test_a_json_number_dimension_is_accepted(outcome_of: Answer) -> None:
    seen: list[str] = []

    def recording() -> Any:
        seen.append("called")
        raise RuntimeError("stop here")

    answer = outcome_of(
        request("Create", ResourceProperties={"IndexAlias": "prme-nodes", "Dimension": 1024}),
        recording,
    )

    assert seen == ["called"]
    assert "RuntimeError" in answer.reason


def test_an_unexpected_failure_is_answered_not_raised(outcome_of: Answer) -> None:
    def broken() -> Any:
        raise RuntimeError("secret provider detail")

    answer = outcome_of(request("Update", PhysicalResourceId="prme-nodes"), broken)

    assert answer.status == "FAILED"
    assert "secret provider detail" not in answer.reason
    assert "RuntimeError" in answer.reason

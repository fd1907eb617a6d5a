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
    assert answer.reason == "Properties IndexAlias (text) and Dimension (number) are required"
    assert answer.physical_id == "prme-nodes"


def test_an_unexpected_failure_is_answered_not_raised(outcome_of: Answer) -> None:
    def broken() -> Any:
        raise RuntimeError("secret provider detail")

    answer = outcome_of(request("Update", PhysicalResourceId="prme-nodes"), broken)

    assert answer.status == "FAILED"
    assert "secret provider detail" not in answer.reason
    assert "RuntimeError" in answer.reason

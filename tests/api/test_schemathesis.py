"""Schemathesis over the app's own /openapi.json, on both backends (issue 15, guard 9).

Every documented operation gets a fixed budget of generated requests, valid and invalid,
sent as an operator (so owner resolution is exercised) through the real app in-process.
A run passes when no response is a 5xx and every response matches its documented status,
content type and schema. Examples are derandomized so CI sees the same requests each time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode, checks
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi import checks as openapi_checks

from tests.harness.http import api_app, bearer

EXAMPLES_PER_OPERATION = {GenerationMode.POSITIVE: 10, GenerationMode.NEGATIVE: 10}
CHECKS = [
    checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
]


def fuzz_operation(
    operation: schemathesis.APIOperation[Any, Any, Any, Any],
    mode: GenerationMode,
    headers: dict[str, str],
) -> tuple[int, list[str]]:
    """Run one operation's budget in one mode: (requests sent, failure summaries)."""
    sent = 0
    failures: list[str] = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION[mode],
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case[Any]) -> None:
        nonlocal sent
        sent += 1
        try:
            case.call_and_validate(headers={**dict(case.headers or {}), **headers}, checks=CHECKS)
        except (AssertionError, FailureGroup) as exc:
            # Keep going: one report lists every operation that broke the contract.
            failures.append(f"{operation.label} [{mode.value}]: {str(exc)[:400]}")

    run()
    return sent, failures


@pytest.fixture(params=["embedded", "aws"])
def fuzzed_app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, str]]:
    """The real app on one backend, with an operator key's secret."""
    with api_app(request, tmp_path) as (app, _creds, keys):
        yield app, keys["operator"]


@pytest.mark.slow
def test_no_generated_request_breaks_the_contract(fuzzed_app: tuple[Any, str]) -> None:
    app, operator_key = fuzzed_app
    schema: Any = schemathesis.openapi.from_asgi("/openapi.json", app)
    headers = bearer(operator_key)
    sent = 0
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in EXAMPLES_PER_OPERATION:
            count, found = fuzz_operation(operation, mode, headers)
            sent += count
            failures.extend(found)

    print(f"schemathesis: {sent} requests")
    assert sent > 0
    assert failures == [], "\n".join(failures)

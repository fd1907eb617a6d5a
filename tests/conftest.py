"""Fixtures shared by every test folder; the helpers behind them live in tests/harness."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.aws import (  # noqa: F401 - fixtures shared by every test folder
    AwsNames,
    aws_endpoint,
    aws_harness,
    aws_names,
    aws_resources,
    dynamodb_table,
    opensearch_url,
)
from tests.harness.cloudformation import response_catcher  # noqa: F401 - a fixture
from tests.harness.engines import Harness, embedded_harness, memory_harness
from tests.harness.http import api  # noqa: F401 - the HTTP API on every backend
from tests.harness.iam import (  # noqa: F401 - IAM-enforcing moto and OpenSearch proxy
    iam_aws,
    opensearch_iam_proxy,
)
from tests.harness.lambda_events import deployed  # noqa: F401 - the Lambda environment
from tests.harness.limits import limited_api  # noqa: F401 - the API with per-tenant limits
from tests.harness.redteam20 import racing_backend  # noqa: F401 - backends for race tests
from tests.harness.stack_template import stack_template  # noqa: F401 - the synthesized stack, once per run


@pytest.fixture
def harness() -> Harness:
    return memory_harness()


@pytest.fixture(params=["memory", "embedded", "aws"])
def any_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    if request.param == "memory":
        yield memory_harness()
    elif request.param == "embedded":
        h = embedded_harness(tmp_path / "data")
        yield h
        h.index.close()  # type: ignore[attr-defined]
        h.ledger.close()  # type: ignore[attr-defined]
        h.usage.close()  # type: ignore[union-attr]
    else:
        resources = request.getfixturevalue("aws_resources")
        yield aws_harness(*resources)

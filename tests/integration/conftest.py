"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.aws_support import AwsNames
from tests.integration.cfn_support import response_catcher  # noqa: F401 - a fixture
from tests.integration.lambda_support import Deployed, deployed_environment
from tests.stack_template import StackTemplate


@pytest.fixture
def deployed(
    monkeypatch: pytest.MonkeyPatch,
    aws_endpoint: str,
    opensearch_url: str,
    aws_names: AwsNames,
    stack_template: StackTemplate,
) -> Iterator[Deployed]:
    """The Lambda environment as the stack sets it, on fresh resources of the local AWS."""
    yield from deployed_environment(
        monkeypatch, aws_endpoint, opensearch_url, aws_names, stack_template
    )

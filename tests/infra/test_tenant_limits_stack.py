"""The stack's default per-tenant limits: context values, checked once, in the api function's
environment under the settings' names; the stage throttle stays as the outer guard."""

from __future__ import annotations

import re
from typing import Any

import pytest

from prme.model.limits import TenantLimits
from prme.settings import Settings
from tests.harness.stack_template import StackTemplate


def test_the_api_function_holds_the_context_default_tenant_limits(
    stack_template: StackTemplate, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infra.config import CONTEXT_DEFAULTS

    variables = stack_template.function("api")["Properties"]["Environment"]["Variables"]
    limit_variables = {k: v for k, v in variables.items() if k.startswith("PRME_LIMITS__")}
    assert limit_variables == {
        Settings.env_name("limits.requests_per_second"): "20",
        Settings.env_name("limits.burst"): "40",
    }
    # What the function reads back from them: the context's values, the rest unlimited.
    for key, value in limit_variables.items():
        monkeypatch.setenv(key, value)
    assert Settings().limits == TenantLimits(requests_per_second=20, burst=40)
    # One tenant's share stays below the whole stage's throttle.
    assert CONTEXT_DEFAULTS["prme:tenantRequestsPerSecond"] < CONTEXT_DEFAULTS["prme:apiRateLimit"]
    # The workers do not admit requests: only the api function is given limits.
    for name in ("materializer", "extractor", "ingest", "maintenance"):
        env = stack_template.function(name)["Properties"]["Environment"]["Variables"]
        assert not [k for k in env if k.startswith("PRME_LIMITS__")], name


def test_context_tenant_limits_become_the_defaults() -> None:
    import aws_cdk as cdk

    from infra.config import DeploymentConfig

    context: dict[str, Any] = {
        "prme:tenantRequestsPerSecond": "none",
        "prme:tenantStoredRecords": 0,
        "prme:tenantStoredBytes": 10**9,
        "prme:tenantRetrievalsPerDay": 5000,
    }
    config = DeploymentConfig.from_context(cdk.App(context=context).node)
    assert config.tenant_limits == TenantLimits(
        burst=40, stored_records=0, stored_bytes=10**9, retrievals_per_day=5000
    )


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"prme:tenantRequestsPerSecond": 0}, "prme:tenantRequestsPerSecond: Input should be"),
        ({"prme:tenantRequestsPerSecond": 5000}, "prme:tenantRequestsPerSecond: Input should be"),
        ({"prme:tenantStoredRecords": -1}, "context prme:tenantStoredRecords must be at least 0"),
        ({"prme:tenantBurst": "lots"}, "context prme:tenantBurst must be a whole number"),
        ({"prme:tenantStoredBytes": 10**20}, "prme:tenantStoredBytes: Input should be less"),
    ],
)
def test_tenant_limits_that_cannot_work_are_refused(context: dict[str, Any], message: str) -> None:
    import aws_cdk as cdk

    from infra.config import ContextError, DeploymentConfig

    with pytest.raises(ContextError, match=re.escape(message)):
        DeploymentConfig.from_context(cdk.App(context=context).node)
